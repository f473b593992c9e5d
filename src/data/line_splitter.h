#pragma once
// Lines of a JSONL file over a StreamBuffer: views into the buffer, valid until the next
// call. LF ends a line (a CR before it is dropped); lines of only whitespace are skipped.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "data/stream_buffer.h"

namespace mcinfer::data {

struct Line {
  std::string_view text;
  std::uint64_t number = 0;  // 1-based
  bool terminated = true;    // false for a last line without LF
  bool too_large = false;    // longer than the limit; text is empty
};

class LineSplitter {
 public:
  LineSplitter(StreamBuffer& in, std::size_t max_line_bytes);
  void skip_bom();
  bool next(Line& line);  // false at the end of the input

 private:
  void skip_rest_of_line(Line& line);

  StreamBuffer& in_;
  std::size_t max_line_;
  std::size_t window_;
  std::uint64_t line_ = 1;
};

}  // namespace mcinfer::data
