#include "tokenizer/pre_tokenizer.h"

#include <array>

#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/unicode.h"

namespace mcinfer::tokenizer {
namespace {

using unicode::prop;

// Character classes of GPT-2's regex.
enum class Cls : std::uint8_t { kSpace, kLetter, kNumber, kOther };

Cls classify(char32_t c) {
  std::uint32_t p = prop(c);
  if (p & unicode::kWhiteSpace) return Cls::kSpace;
  if (p & unicode::kLetter) return Cls::kLetter;
  if (p & unicode::kNumber) return Cls::kNumber;
  return Cls::kOther;
}

struct AsciiClasses {
  std::array<Cls, 128> cls;
  constexpr AsciiClasses() : cls() {
    for (int c = 0; c < 128; ++c) {
      if (c == ' ' || (c >= 9 && c <= 13)) {
        cls[c] = Cls::kSpace;
      } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        cls[c] = Cls::kLetter;
      } else if (c >= '0' && c <= '9') {
        cls[c] = Cls::kNumber;
      } else {
        cls[c] = Cls::kOther;
      }
    }
  }
};
constexpr AsciiClasses kAscii;

// Class of the character at in[pos]; advances pos past it.
inline Cls next_class(std::string_view in, std::size_t& pos) {
  unsigned char b = static_cast<unsigned char>(in[pos]);
  if (b < 0x80) {
    ++pos;
    return kAscii.cls[b];
  }
  return classify(utf8::decode_valid(in, pos));
}

// Unicode properties of the character at in[pos]; advances pos past it.
inline std::uint32_t next_property(std::string_view in, std::size_t& pos) {
  const auto b = static_cast<unsigned char>(in[pos]);
  if (b < 0x80) {
    ++pos;
    return prop(b);
  }
  return prop(utf8::decode_valid(in, pos));
}

// End of the run of `want` characters starting at pos.
inline std::size_t run_end(std::string_view in, std::size_t pos, Cls want) {
  while (pos < in.size()) {
    std::size_t q = pos;
    if (next_class(in, q) != want) break;
    pos = q;
  }
  return pos;
}

struct ByteLevelTable {
  std::array<char32_t, 256> map;
  constexpr ByteLevelTable() : map() {
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable =
          (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      map[b] = printable ? static_cast<char32_t>(b) : next++;
    }
  }
};
constexpr ByteLevelTable kByteLevel;

class BertPreTokenizer final : public PreTokenizer {
 public:
  void split(std::string_view in, bool, Words& out) const override {
    auto base = static_cast<std::uint32_t>(out.buf.size());
    out.buf.append(in);
    std::size_t pos = 0, word = 0;
    auto flush = [&](std::size_t end) {
      if (end > word) out.spans.emplace_back(base + word, static_cast<std::uint32_t>(end - word));
    };
    while (pos < in.size()) {
      std::size_t start = pos;
      const std::uint32_t p = next_property(in, pos);
      if (p & unicode::kWhiteSpace) {
        flush(start);
        word = pos;
      } else if (p & unicode::kBertPunct) {
        flush(start);
        out.spans.emplace_back(base + start, static_cast<std::uint32_t>(pos - start));
        word = pos;
      }
    }
    flush(in.size());
  }
};

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}
  void split(std::string_view in, bool, Words& out) const override {
    if (in.empty()) return;
    auto base = static_cast<std::uint32_t>(out.buf.size());
    if (add_prefix_space_ && in.front() != ' ') out.buf.push_back(' ');
    out.buf.append(in);
    std::string_view seg = std::string_view(out.buf).substr(base);
    if (use_regex_) {
      gpt2_split(seg, base, out.spans);
    } else {
      out.spans.emplace_back(base, static_cast<std::uint32_t>(seg.size()));
    }
  }
  bool byte_level() const override { return true; }

 private:
  bool add_prefix_space_, use_regex_;
};

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(char32_t replacement, PrependScheme scheme, bool split)
      : scheme_(scheme), split_(split) {
    utf8::append_code_point(replacement, rep_);
  }
  void split(std::string_view in, bool at_origin, Words& out) const override {
    if (in.empty()) return;
    auto base = out.buf.size();
    bool starts_with_rep = in.front() == ' ' || in.substr(0, rep_.size()) == rep_;
    if (!starts_with_rep &&
        (scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && at_origin))) {
      out.buf.append(rep_);
    }
    for (char c : in) {
      if (c == ' ') {
        out.buf.append(rep_);
      } else {
        out.buf.push_back(c);
      }
    }
    std::string_view seg = std::string_view(out.buf).substr(base);
    if (!split_) {
      out.spans.emplace_back(static_cast<std::uint32_t>(base),
                             static_cast<std::uint32_t>(seg.size()));
      return;
    }
    // Split before every replacement character (HF: MergedWithNext).
    std::size_t start = 0;
    std::size_t pos = seg.find(rep_, 1);
    while (pos != std::string_view::npos) {
      out.spans.emplace_back(static_cast<std::uint32_t>(base + start),
                             static_cast<std::uint32_t>(pos - start));
      start = pos;
      pos = seg.find(rep_, pos + rep_.size());
    }
    out.spans.emplace_back(static_cast<std::uint32_t>(base + start),
                           static_cast<std::uint32_t>(seg.size() - start));
  }

 private:
  std::string rep_;
  PrependScheme scheme_;
  bool split_;
};

// \w+|[^\w\s]+ ; whitespace dropped.
class Whitespace final : public PreTokenizer {
 public:
  void split(std::string_view in, bool, Words& out) const override {
    auto base = static_cast<std::uint32_t>(out.buf.size());
    out.buf.append(in);
    std::size_t pos = 0;
    int kind = -1;  // 0 word run, 1 other run
    std::size_t start = 0;
    auto flush = [&](std::size_t end) {
      if (kind >= 0 && end > start) {
        out.spans.emplace_back(base + start, static_cast<std::uint32_t>(end - start));
      }
    };
    while (pos < in.size()) {
      std::size_t at = pos;
      std::uint32_t p = prop(utf8::decode_valid(in, pos));
      int k = (p & unicode::kWord) ? 0 : (p & unicode::kWhiteSpace) ? -1 : 1;
      if (k != kind) {
        flush(at);
        kind = k;
        start = at;
      }
    }
    flush(in.size());
  }
};

class WhitespaceSplit final : public PreTokenizer {
 public:
  void split(std::string_view in, bool, Words& out) const override {
    auto base = static_cast<std::uint32_t>(out.buf.size());
    out.buf.append(in);
    std::size_t pos = 0, word = 0;
    while (pos < in.size()) {
      std::size_t at = pos;
      if (unicode::is_white_space(utf8::decode_valid(in, pos))) {
        if (at > word) out.spans.emplace_back(base + word, static_cast<std::uint32_t>(at - word));
        word = pos;
      }
    }
    if (in.size() > word) {
      out.spans.emplace_back(base + word, static_cast<std::uint32_t>(in.size() - word));
    }
  }
};

class Punctuation final : public PreTokenizer {
 public:
  void split(std::string_view in, bool, Words& out) const override {
    auto base = static_cast<std::uint32_t>(out.buf.size());
    out.buf.append(in);
    std::size_t pos = 0, word = 0;
    while (pos < in.size()) {
      std::size_t start = pos;
      const std::uint32_t p = next_property(in, pos);
      if (!(p & unicode::kBertPunct)) continue;
      if (start > word) {
        out.spans.emplace_back(base + word, static_cast<std::uint32_t>(start - word));
      }
      out.spans.emplace_back(base + start, static_cast<std::uint32_t>(pos - start));
      word = pos;
    }
    if (in.size() > word) {
      out.spans.emplace_back(base + word, static_cast<std::uint32_t>(in.size() - word));
    }
  }
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void split(std::string_view in, bool at_origin, Words& out) const override {
    if (steps_.empty()) {
      if (!in.empty()) {
        out.spans.emplace_back(static_cast<std::uint32_t>(out.buf.size()),
                               static_cast<std::uint32_t>(in.size()));
        out.buf.append(in);
      }
      return;
    }
    if (steps_.size() == 1) {
      steps_[0]->split(in, at_origin, out);
      return;
    }
    Words a, b;
    steps_[0]->split(in, at_origin, a);
    for (std::size_t k = 1; k < steps_.size(); ++k) {
      Words& dst = (k + 1 == steps_.size()) ? out : b;
      if (&dst == &b) b.clear();
      for (std::size_t w = 0; w < a.spans.size(); ++w) {
        steps_[k]->split(a.word(w), at_origin && a.spans[w].first == 0, dst);
      }
      if (&dst == &b) std::swap(a, b);
    }
  }
  bool byte_level() const override { return !steps_.empty() && steps_.back()->byte_level(); }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

}  // namespace

void gpt2_split(std::string_view in, std::uint32_t base,
                std::vector<std::pair<std::uint32_t, std::uint32_t>>& spans) {
  const std::size_t n = in.size();
  std::size_t pos = 0;
  auto emit = [&](std::size_t start, std::size_t end) {
    spans.emplace_back(base + static_cast<std::uint32_t>(start),
                       static_cast<std::uint32_t>(end - start));
  };
  while (pos < n) {
    char c = in[pos];
    if (c == '\'' && pos + 1 < n) {
      char d = in[pos + 1];
      if (d == 's' || d == 't' || d == 'm' || d == 'd') {
        emit(pos, pos + 2);
        pos += 2;
        continue;
      }
      if (pos + 2 < n) {
        char e = in[pos + 2];
        if ((d == 'r' && e == 'e') || (d == 'v' && e == 'e') || (d == 'l' && e == 'l')) {
          emit(pos, pos + 3);
          pos += 3;
          continue;
        }
      }
    }
    std::size_t p1 = pos;
    Cls k = next_class(in, p1);
    if (k != Cls::kSpace) {
      std::size_t end = run_end(in, p1, k);
      emit(pos, end);
      pos = end;
      continue;
    }
    if (c == ' ' && p1 < n) {
      std::size_t q = p1;
      Cls k2 = next_class(in, q);
      if (k2 != Cls::kSpace) {
        std::size_t end = run_end(in, q, k2);
        emit(pos, end);
        pos = end;
        continue;
      }
    }
    // A whitespace run: \s+(?!\S) takes all of it but the last character when something
    // follows (that character then starts the next match), \s+ takes a lone one.
    std::size_t end = p1, last = pos;
    while (end < n) {
      std::size_t q = end;
      if (next_class(in, q) != Cls::kSpace) break;
      last = end;
      end = q;
    }
    if (end == n || last == pos) {
      emit(pos, end);
      pos = end;
    } else {
      emit(pos, last);
      pos = last;
    }
  }
}

char32_t byte_level_char(unsigned char b) { return kByteLevel.map[b]; }

std::unique_ptr<PreTokenizer> make_bert_pre_tokenizer() {
  return std::make_unique<BertPreTokenizer>();
}
std::unique_ptr<PreTokenizer> make_byte_level(bool add_prefix_space, bool use_regex) {
  return std::make_unique<ByteLevel>(add_prefix_space, use_regex);
}
std::unique_ptr<PreTokenizer> make_metaspace(char32_t replacement, PrependScheme scheme,
                                             bool split) {
  return std::make_unique<Metaspace>(replacement, scheme, split);
}
std::unique_ptr<PreTokenizer> make_whitespace() { return std::make_unique<Whitespace>(); }
std::unique_ptr<PreTokenizer> make_punctuation() { return std::make_unique<Punctuation>(); }

std::unique_ptr<PreTokenizer> make_whitespace_split() {
  return std::make_unique<WhitespaceSplit>();
}
std::unique_ptr<PreTokenizer> make_pre_tokenizer_sequence(
    std::vector<std::unique_ptr<PreTokenizer>> steps, const std::string& origin) {
  for (std::size_t k = 0; k + 1 < steps.size(); ++k) {
    if (steps[k]->byte_level()) {
      fail("{}: field 'pre_tokenizer': ByteLevel must be the last step of a Sequence", origin);
    }
  }
  return std::make_unique<SequencePreTokenizer>(std::move(steps));
}

}  // namespace mcinfer::tokenizer
