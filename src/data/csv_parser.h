#pragma once
// RFC 4180 records over a StreamBuffer, shared by the input row reader and the prediction
// table reader. Fields are views into the buffer (quoted fields unescaped in place), valid
// until the next call: no allocation per field.
//
// Grammar, as Python's csv module and pandas read it: records end at LF, CRLF or a lone CR;
// a field that starts with '"' is quoted and ends at a '"' not doubled; a '"' inside an
// unquoted field is an ordinary byte. Blank lines are not records. Malformed records are
// returned with a Problem, and the parser has moved past them, so a caller may go on.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/stream_buffer.h"

namespace mcinfer::data {

struct CsvRecord {
  enum class Problem {
    kNone,
    kNul,            // a NUL byte: binary or UTF-16 data
    kAfterQuote,     // bytes between a closing quote and the next delimiter
    kUnclosedQuote,  // a quoted field runs to the end of the input
    kTooLarge,       // longer than the limit; fields are not kept
  };
  std::vector<std::string_view> fields;
  std::uint64_t line = 0;   // 1-based line on which the record starts
  std::uint64_t lines = 0;  // line breaks consumed by the record, its terminator included
  bool terminated = true;   // false when the input ended without a line break
  Problem problem = Problem::kNone;
  std::size_t problem_field = 0;   // 0-based field of the first problem
  char problem_char = 0;           // for kAfterQuote
  std::uint64_t problem_line = 0;  // kUnclosedQuote: where the quote opens
};

class CsvParser {
 public:
  // Records longer than max_record_bytes (terminator included) come back as kTooLarge; the
  // buffer never holds much more than that.
  CsvParser(StreamBuffer& in, std::size_t max_record_bytes);

  // Skips a UTF-8 byte order mark; call once before the first record.
  void skip_bom();
  // Reads the next record; false at the end of the input.
  bool next(CsvRecord& record);
  // The line of the next unread byte.
  std::uint64_t line() const { return line_; }

 private:
  struct Span {
    std::size_t begin, end;  // offsets from the record start
    bool escapes;            // quoted with doubled quotes to collapse
  };
  enum class Scan { kDone, kNeedMore };
  Scan scan(CsvRecord& record, std::size_t& record_bytes);
  void skip_oversized(CsvRecord& record);
  bool skip_blank_lines();

  StreamBuffer& in_;
  std::size_t max_record_;
  std::size_t window_;
  std::uint64_t line_ = 1;
  std::uint64_t unclosed_line_ = 0;  // set by scan() when a quote runs to the end
  std::vector<Span> spans_;
};

// A short, human description of a record's problem, naming the field by `names` when known.
std::string describe_csv_problem(const CsvRecord& record, const std::vector<std::string>& names,
                                 std::size_t max_record_bytes);

// "64 MiB", "1 KiB" or "1000 bytes".
std::string format_byte_size(std::size_t bytes);

// How a byte looks in a message: 'x' when printable ASCII, else \xNN.
std::string quote_byte(char c);

}  // namespace mcinfer::data
