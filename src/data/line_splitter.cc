#include "data/line_splitter.h"

#include <algorithm>
#include <cstring>

namespace mcinfer::data {
namespace {

bool is_blank(std::string_view text) {
  for (char c : text) {
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

}  // namespace

LineSplitter::LineSplitter(StreamBuffer& in, std::size_t max_line_bytes)
    : in_(in), max_line_(std::max<std::size_t>(max_line_bytes, 1)), window_(max_line_ + 1) {}

void LineSplitter::skip_bom() {
  while (in_.available() < 3 && in_.read_more(window_)) {
  }
  if (in_.available() >= 3 && std::memcmp(in_.begin(), "\xEF\xBB\xBF", 3) == 0) in_.consume(3);
}

void LineSplitter::skip_rest_of_line(Line& line) {
  line.text = {};
  line.too_large = true;
  line.terminated = false;
  in_.consume(in_.available());
  while (in_.read_more(window_)) {
    char* b = in_.begin();
    auto nl = static_cast<char*>(std::memchr(b, '\n', in_.available()));
    if (nl != nullptr) {
      in_.consume(nl - b + 1);
      line.terminated = true;
      return;
    }
    in_.consume(in_.available());
  }
}

bool LineSplitter::next(Line& line) {
  for (;;) {
    std::size_t scanned = 0;
    line.too_large = false;
    for (;;) {
      char* b = in_.begin();
      std::size_t n = in_.available();
      auto nl = static_cast<char*>(std::memchr(b + scanned, '\n', n - scanned));
      if (nl != nullptr) {
        std::size_t len = nl - b;
        line.number = line_++;
        line.terminated = true;
        if (len > max_line_) {
          line.text = {};
          line.too_large = true;
        } else {
          line.text = {b, len};
        }
        in_.consume(len + 1);
        break;
      }
      scanned = n;
      if (n >= window_) {
        line.number = line_++;
        skip_rest_of_line(line);
        return true;
      }
      if (!in_.read_more(window_)) {
        if (n == 0) return false;
        b = in_.begin();  // read_more may have moved the bytes
        line.number = line_++;
        line.terminated = false;
        if (n > max_line_) {
          line.text = {};
          line.too_large = true;
        } else {
          line.text = {b, n};
        }
        in_.consume(n);
        break;
      }
    }
    if (line.too_large) return true;
    if (!line.text.empty() && line.text.back() == '\r') line.text.remove_suffix(1);
    if (!is_blank(line.text)) return true;
  }
}

}  // namespace mcinfer::data
