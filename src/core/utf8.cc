#include "core/utf8.h"

namespace mcinfer::utf8 {
namespace {

// Classifies the sequence starting at text[pos] by Unicode Table 3-7: a valid code point and
// its length, or the length (>= 1) of the maximal invalid subpart that Python replaces with
// one U+FFFD.
struct Scan {
  std::size_t length;  // bytes consumed
  bool valid;
};

inline Scan scan(std::string_view text, std::size_t pos) {
  const std::size_t n = text.size();
  unsigned char c = static_cast<unsigned char>(text[pos]);
  if (c < 0x80) return {1, true};
  std::size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return {1, false};
  }
  std::size_t i = 1;
  for (; i <= need; ++i) {
    if (pos + i >= n) return {i, false};
    unsigned char b = static_cast<unsigned char>(text[pos + i]);
    unsigned char l = (i == 1) ? lo : 0x80;
    unsigned char h = (i == 1) ? hi : 0xBF;
    if (b < l || b > h) return {i, false};
  }
  return {need + 1, true};
}

}  // namespace

bool is_valid(std::string_view text) {
  std::size_t pos = 0;
  const std::size_t n = text.size();
  while (pos < n) {
    // ASCII fast path, 8 bytes at a time.
    while (pos + 8 <= n) {
      unsigned long long word;
      __builtin_memcpy(&word, text.data() + pos, 8);
      if (word & 0x8080808080808080ULL) break;
      pos += 8;
    }
    if (pos >= n) break;
    Scan s = scan(text, pos);
    if (!s.valid) return false;
    pos += s.length;
  }
  return true;
}

std::size_t append_sanitized(std::string_view text, std::string& out) {
  std::size_t replacements = 0;
  std::size_t pos = 0;
  std::size_t run_start = 0;  // start of the pending run of valid bytes
  const std::size_t n = text.size();
  out.reserve(out.size() + n);
  while (pos < n) {
    Scan s = scan(text, pos);
    if (s.valid) {
      pos += s.length;
      continue;
    }
    out.append(text.data() + run_start, pos - run_start);
    append_code_point(kReplacement, out);
    ++replacements;
    pos += s.length;
    run_start = pos;
  }
  out.append(text.data() + run_start, n - run_start);
  return replacements;
}

std::string sanitize(std::string_view text, std::size_t* replacements) {
  std::string out;
  std::size_t count = 0;
  if (is_valid(text)) {
    out.assign(text);
  } else {
    count = append_sanitized(text, out);
  }
  if (replacements != nullptr) *replacements = count;
  return out;
}

void append_code_point(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace mcinfer::utf8
