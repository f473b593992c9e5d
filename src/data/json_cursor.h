#pragma once
// A pull parser for one JSON text (one JSONL line), strict to RFC 8259 except in two ways
// the data layer needs and general JSON libraries refuse: bytes of invalid UTF-8 inside
// strings pass through unchanged (the tokenizer replaces and counts them), and numbers are
// handed back as their exact spelling. Lone surrogate escapes become their 3-byte
// (invalid UTF-8) form, as Python's json module keeps them. Errors throw JsonSyntaxError;
// nesting is tracked without recursion, so depth cannot exhaust the stack.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mcinfer::data {

struct JsonSyntaxError {
  std::string message;
  std::size_t offset;  // 0-based byte offset in the text
};

class JsonCursor {
 public:
  enum class Kind { kObject, kArray, kString, kNumber, kTrue, kFalse, kNull };

  explicit JsonCursor(std::string_view text) : text_(text) {}

  // Skips whitespace and classifies the next value (throws if none can start here).
  Kind peek_kind();
  // Objects: begin_object() at '{', then while (next_key(key)) { read the value }.
  void begin_object();
  bool next_key(std::string_view& key);  // false after the closing '}'
  // Arrays: begin_array() at '[', then while (next_item()) { read the value }.
  void begin_array();
  bool next_item();  // false after the closing ']'
  // A string value: a view of the text when it has no escapes, else of `scratch`.
  std::string_view string(std::string& scratch);
  // A number's exact spelling, checked against the JSON grammar.
  std::string_view number();
  void skip_value();
  // True when only whitespace is left.
  bool at_end();

  std::size_t offset() const { return pos_; }
  [[noreturn]] void fail(std::string_view what) const;
  [[noreturn]] void fail_at(std::size_t offset, std::string_view what) const;

 private:
  void skip_ws();
  void expect(char c, std::string_view what);
  void unescape_into(std::size_t from, std::string& out);

  std::string_view text_;
  std::size_t pos_ = 0;
  std::vector<bool> first_;  // per open container: no member read yet
  std::string key_scratch_;
};

// Human name of a value kind for messages ("object", "array", "string", ...).
std::string_view json_kind_name(JsonCursor::Kind kind);

}  // namespace mcinfer::data
