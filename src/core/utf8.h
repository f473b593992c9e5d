#pragma once
// UTF-8 handling for untrusted text. Invalid sequences are replaced exactly as Python's
// bytes.decode("utf-8", "replace") does: each maximal invalid subpart becomes one U+FFFD.

#include <cstddef>
#include <string>
#include <string_view>

namespace mcinfer::utf8 {

inline constexpr char32_t kReplacement = 0xFFFD;

// True when `text` is well-formed UTF-8 (no surrogates, no overlongs, <= U+10FFFF).
bool is_valid(std::string_view text);

// Appends `text` to `out` with invalid subparts replaced; returns how many replacements.
std::size_t append_sanitized(std::string_view text, std::string& out);

// Returns `text` unchanged when valid, else a sanitized copy; counts replacements.
std::string sanitize(std::string_view text, std::size_t* replacements = nullptr);

void append_code_point(char32_t cp, std::string& out);

// Decodes one code point of well-formed UTF-8 at text[pos]; advances pos.
// Only for text that is_valid() (or came out of sanitize()).
inline char32_t decode_valid(std::string_view text, std::size_t& pos) {
  unsigned char c = static_cast<unsigned char>(text[pos]);
  if (c < 0x80) {
    ++pos;
    return c;
  }
  if (c < 0xE0) {
    char32_t cp = ((c & 0x1F) << 6) | (static_cast<unsigned char>(text[pos + 1]) & 0x3F);
    pos += 2;
    return cp;
  }
  if (c < 0xF0) {
    char32_t cp = ((c & 0x0F) << 12) | ((static_cast<unsigned char>(text[pos + 1]) & 0x3F) << 6) |
                  (static_cast<unsigned char>(text[pos + 2]) & 0x3F);
    pos += 3;
    return cp;
  }
  char32_t cp = ((c & 0x07) << 18) | ((static_cast<unsigned char>(text[pos + 1]) & 0x3F) << 12) |
                ((static_cast<unsigned char>(text[pos + 2]) & 0x3F) << 6) |
                (static_cast<unsigned char>(text[pos + 3]) & 0x3F);
  pos += 4;
  return cp;
}

}  // namespace mcinfer::utf8
