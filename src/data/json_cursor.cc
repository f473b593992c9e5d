#include "data/json_cursor.h"

#include <fmt/format.h>

#include "core/utf8.h"
#include "data/csv_parser.h"

namespace mcinfer::data {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string_view json_kind_name(JsonCursor::Kind kind) {
  switch (kind) {
    case JsonCursor::Kind::kObject:
      return "object";
    case JsonCursor::Kind::kArray:
      return "array";
    case JsonCursor::Kind::kString:
      return "string";
    case JsonCursor::Kind::kNumber:
      return "number";
    case JsonCursor::Kind::kTrue:
    case JsonCursor::Kind::kFalse:
      return "boolean";
    case JsonCursor::Kind::kNull:
      return "null";
  }
  return "value";
}

void JsonCursor::fail(std::string_view what) const { fail_at(pos_, what); }

void JsonCursor::fail_at(std::size_t offset, std::string_view what) const {
  throw JsonSyntaxError{std::string(what), offset};
}

void JsonCursor::skip_ws() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
    ++pos_;
  }
}

bool JsonCursor::at_end() {
  skip_ws();
  return pos_ == text_.size();
}

void JsonCursor::expect(char c, std::string_view what) {
  skip_ws();
  if (pos_ == text_.size()) fail(fmt::format("expected {}, got the end of the line", what));
  if (text_[pos_] != c) fail(fmt::format("expected {}, got {}", what, quote_byte(text_[pos_])));
  ++pos_;
}

JsonCursor::Kind JsonCursor::peek_kind() {
  skip_ws();
  if (pos_ == text_.size()) fail("expected a value, got the end of the line");
  char c = text_[pos_];
  switch (c) {
    case '{':
      return Kind::kObject;
    case '[':
      return Kind::kArray;
    case '"':
      return Kind::kString;
    case 't':
      return Kind::kTrue;
    case 'f':
      return Kind::kFalse;
    case 'n':
      return Kind::kNull;
    default:
      if (c == '-' || is_digit(c)) return Kind::kNumber;
      if (c == '\0') fail("NUL byte (is this a binary or UTF-16 file?)");
      fail(fmt::format("expected a value, got {}", quote_byte(c)));
  }
}

void JsonCursor::begin_object() {
  expect('{', "'{'");
  first_.push_back(true);
}

bool JsonCursor::next_key(std::string_view& key) {
  skip_ws();
  if (pos_ == text_.size()) fail("the object never closes");
  if (text_[pos_] == '}') {
    ++pos_;
    first_.pop_back();
    return false;
  }
  if (!first_.back()) {
    if (text_[pos_] != ',')
      fail(fmt::format("expected ',' or '}}', got {}", quote_byte(text_[pos_])));
    ++pos_;
    skip_ws();
  }
  if (pos_ == text_.size() || text_[pos_] != '"') {
    fail(pos_ == text_.size()
             ? "expected a key, got the end of the line"
             : fmt::format("expected a key in quotes, got {}", quote_byte(text_[pos_])));
  }
  first_.back() = false;
  key = string(key_scratch_);
  expect(':', "':'");
  return true;
}

void JsonCursor::begin_array() {
  expect('[', "'['");
  first_.push_back(true);
}

bool JsonCursor::next_item() {
  skip_ws();
  if (pos_ == text_.size()) fail("the array never closes");
  if (text_[pos_] == ']') {
    ++pos_;
    first_.pop_back();
    return false;
  }
  if (!first_.back()) {
    if (text_[pos_] != ',')
      fail(fmt::format("expected ',' or ']', got {}", quote_byte(text_[pos_])));
    ++pos_;
  }
  first_.back() = false;
  return true;
}

std::string_view JsonCursor::string(std::string& scratch) {
  skip_ws();
  if (pos_ == text_.size() || text_[pos_] != '"') fail("expected a string");
  std::size_t start = ++pos_;
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '"') return text_.substr(start, pos_++ - start);
    if (c == '\\') {
      scratch.assign(text_.data() + start, pos_ - start);
      unescape_into(start, scratch);
      return scratch;
    }
    if (static_cast<unsigned char>(c) < 0x20) {
      fail(c == '\0' ? "NUL byte in a string (is this a binary or UTF-16 file?)"
                     : "control character in a string (must be escaped)");
    }
    ++pos_;
  }
  fail_at(start - 1, "the string never closes");
}

void JsonCursor::unescape_into(std::size_t start, std::string& out) {
  auto read_hex4 = [&](std::size_t at) -> int {
    if (at + 4 > text_.size()) fail_at(at, "\\u needs four hex digits");
    int v = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      int h = hex_value(text_[at + i]);
      if (h < 0) fail_at(at + i, "\\u needs four hex digits");
      v = v * 16 + h;
    }
    return v;
  };
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      return;
    }
    if (static_cast<unsigned char>(c) < 0x20) {
      fail(c == '\0' ? "NUL byte in a string (is this a binary or UTF-16 file?)"
                     : "control character in a string (must be escaped)");
    }
    if (c != '\\') {
      out.push_back(c);
      ++pos_;
      continue;
    }
    if (pos_ + 1 >= text_.size()) break;
    char e = text_[pos_ + 1];
    pos_ += 2;
    switch (e) {
      case '"':
        out.push_back('"');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '/':
        out.push_back('/');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        char32_t cp = static_cast<char32_t>(read_hex4(pos_));
        pos_ += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && pos_ + 6 <= text_.size() && text_[pos_] == '\\' &&
            text_[pos_ + 1] == 'u') {
          int low = read_hex4(pos_ + 2);
          if (low >= 0xDC00 && low < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<char32_t>(low) - 0xDC00);
            pos_ += 6;
          }
        }
        utf8::append_code_point(cp, out);
        break;
      }
      default:
        fail_at(pos_ - 2, fmt::format("invalid escape \\{}", quote_byte(e)));
    }
  }
  fail_at(start - 1, "the string never closes");
}

std::string_view JsonCursor::number() {
  skip_ws();
  std::size_t start = pos_;
  auto digits = [&] {
    std::size_t from = pos_;
    while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    return pos_ > from;
  };
  if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
  if (pos_ < text_.size() && text_[pos_] == '0') {
    ++pos_;
  } else if (!digits()) {
    fail_at(start, "invalid number");
  }
  if (pos_ < text_.size() && text_[pos_] == '.') {
    ++pos_;
    if (!digits()) fail_at(start, "invalid number: no digits after '.'");
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    ++pos_;
    if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
    if (!digits()) fail_at(start, "invalid number: no digits in the exponent");
  }
  return text_.substr(start, pos_ - start);
}

void JsonCursor::skip_value() {
  // Containers opened here; the cursor's own first_ stack tracks members.
  std::vector<char> open;
  std::string scratch;
  for (;;) {
    switch (peek_kind()) {
      case Kind::kObject:
        begin_object();
        open.push_back('{');
        break;
      case Kind::kArray:
        begin_array();
        open.push_back('[');
        break;
      case Kind::kString:
        string(scratch);
        break;
      case Kind::kNumber:
        number();
        break;
      case Kind::kTrue:
      case Kind::kFalse:
      case Kind::kNull: {
        std::string_view word = text_.substr(pos_, 5);
        std::string_view want = text_[pos_] == 't' ? "true" : text_[pos_] == 'f' ? "false" : "null";
        if (word.substr(0, want.size()) != want) {
          fail(fmt::format("expected a value, got {}", quote_byte(text_[pos_])));
        }
        pos_ += want.size();
        break;
      }
    }
    // Close what ends here; stop at the next member or when the value is done.
    for (;;) {
      if (open.empty()) return;
      std::string_view key;
      bool more = open.back() == '{' ? next_key(key) : next_item();
      if (more) break;
      open.pop_back();
    }
  }
}

}  // namespace mcinfer::data
