#pragma once
// A column of texts as the engine reads it: one std::string_view per row, pointing into memory
// the column keeps alive (Python str objects' UTF-8 buffers, a bytes object, or Arrow arrays
// received through the C data interface). No Python str is made per row.
//
// Threading: built with the GIL held; views() may then be read from any thread without it, while
// the TextColumn lives. Destroy it with the GIL held (it may drop Python references).

#include <nanobind/nanobind.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "arrow_c_abi.h"

namespace mcinfer::python {

class TextColumn {
 public:
  // `what` names the argument in errors ("texts", "pairs"). Accepts a str sequence (list,
  // tuple, object ndarray), an object with __arrow_c_stream__ or __arrow_c_array__ (string,
  // large_string, string_view or a dictionary of them); throws TypeError/ValueError naming the
  // argument and, for a null or non-str row, its index.
  static TextColumn from_python(nanobind::handle source, const char* what);
  // A numpy 'S' array's bytes: `count` rows of `width` bytes each, NUL-padded.
  static TextColumn from_fixed_width(nanobind::bytes data, std::size_t count, std::size_t width);

  TextColumn();
  TextColumn(TextColumn&&) noexcept;
  TextColumn& operator=(TextColumn&&) noexcept;
  ~TextColumn();

  const std::vector<std::string_view>& views() const { return views_; }
  std::size_t size() const { return views_.size(); }

 private:
  struct ArrowChunk;  // an ArrowArray this column owns, released on destruction
  void add_arrow(const ArrowSchema& schema, ArrowArray array, const char* what);

  std::vector<std::string_view> views_;
  nanobind::object keep_;  // the Python object the views point into, if any
  std::vector<std::unique_ptr<ArrowChunk>> chunks_;
};

}  // namespace mcinfer::python
