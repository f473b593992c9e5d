#include "tokenizer/normalizer.h"

#include "core/utf8.h"
#include "tokenizer/unicode.h"

namespace mcinfer::tokenizer {
namespace {

using unicode::prop;

bool all_ascii(std::string_view s) {
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    unsigned long long w;
    __builtin_memcpy(&w, s.data() + i, 8);
    if (w & 0x8080808080808080ULL) return false;
  }
  for (; i < s.size(); ++i) {
    if (static_cast<unsigned char>(s[i]) >= 0x80) return false;
  }
  return true;
}

void append_utf8(std::u32string_view cps, std::string& out) {
  for (char32_t c : cps) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else {
      utf8::append_code_point(c, out);
    }
  }
}

void to_u32(std::string_view in, std::u32string& out) {
  out.clear();
  out.reserve(in.size());
  std::size_t pos = 0;
  while (pos < in.size()) out.push_back(utf8::decode_valid(in, pos));
}

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

class BertNormalizer final : public Normalizer {
 public:
  explicit BertNormalizer(const BertNormalizerOptions& o) : o_(o) {
    // What cleaning and lowercasing do to each ASCII byte (no ASCII decomposes or is CJK).
    for (int b = 0; b < 128; ++b) {
      char32_t c = static_cast<char32_t>(b);
      std::uint32_t p = prop(c);
      if (o_.clean_text && (c == 0 || (p & unicode::kBertControl))) {
        ascii_[b] = kDrop;
      } else if (o_.clean_text && (p & unicode::kWhiteSpace)) {
        ascii_[b] = ' ';
      } else {
        ascii_[b] = o_.lowercase ? ascii_lower(static_cast<char>(b)) : static_cast<char>(b);
      }
    }
  }

  void normalize(std::string_view in, std::string& out) const override {
    out.clear();
    if (all_ascii(in)) {
      out.reserve(in.size());
      for (char c : in) {
        int a = ascii_[static_cast<unsigned char>(c)];
        if (a != kDrop) out.push_back(static_cast<char>(a));
      }
      return;
    }
    std::u32string buf;
    buf.reserve(in.size() + 8);
    bool marks = false;
    std::size_t pos = 0;
    while (pos < in.size()) {
      char32_t c = utf8::decode_valid(in, pos);
      std::uint32_t p = prop(c);
      if (o_.clean_text) {
        if (c == 0 || c == 0xFFFD || (p & unicode::kBertControl)) continue;
        if (p & unicode::kWhiteSpace) {
          c = ' ';
          p = prop(c);
        }
      }
      bool cjk = o_.handle_chinese_chars && (p & unicode::kChinese);
      if (cjk) buf.push_back(' ');
      if (o_.strip_accents && (p & unicode::kCanonDecomp)) {
        std::size_t before = buf.size();
        unicode::append_decomposed(c, false, buf);
        for (std::size_t k = before; k < buf.size(); ++k) marks |= unicode::ccc(buf[k]) != 0;
      } else {
        buf.push_back(c);
        marks |= (p & unicode::kCccMask) != 0;
      }
      if (cjk) buf.push_back(' ');
    }
    // HF: NFD (with canonical reordering), drop Mn, then lowercase.
    if (o_.strip_accents && marks) unicode::canonical_order(buf);
    out.reserve(buf.size() + 8);
    std::u32string lowered;
    for (char32_t c : buf) {
      if (c < 0x80) {
        out.push_back(o_.lowercase ? ascii_lower(static_cast<char>(c)) : static_cast<char>(c));
        continue;
      }
      std::uint32_t p = prop(c);
      if (o_.strip_accents && (p & unicode::kMn8)) continue;
      if (o_.lowercase && (p & unicode::kHasLower)) {
        lowered.clear();
        unicode::append_lower(c, lowered);
        append_utf8(lowered, out);
      } else {
        const char32_t newer =
            o_.lowercase && o_.current_case_data ? unicode::lower_tf5(c) : char32_t{0};
        utf8::append_code_point(newer != 0 ? newer : c, out);
      }
    }
  }

 private:
  static constexpr int kDrop = -1;
  BertNormalizerOptions o_;
  int ascii_[128];
};

class Lowercase final : public Normalizer {
 public:
  explicit Lowercase(bool current_case_data) : current_case_data_(current_case_data) {}
  void normalize(std::string_view in, std::string& out) const override {
    out.clear();
    out.reserve(in.size());
    std::u32string lowered;
    std::size_t pos = 0;
    while (pos < in.size()) {
      unsigned char b = static_cast<unsigned char>(in[pos]);
      if (b < 0x80) {
        out.push_back(ascii_lower(static_cast<char>(b)));
        ++pos;
        continue;
      }
      std::size_t start = pos;
      char32_t c = utf8::decode_valid(in, pos);
      if (prop(c) & unicode::kHasLower) {
        lowered.clear();
        unicode::append_lower(c, lowered);
        append_utf8(lowered, out);
      } else if (const char32_t newer = current_case_data_ ? unicode::lower_tf5(c) : 0) {
        utf8::append_code_point(newer, out);
      } else {
        out.append(in.substr(start, pos - start));
      }
    }
  }

 private:
  bool current_case_data_;
};

class UnicodeFormNormalizer final : public Normalizer {
 public:
  explicit UnicodeFormNormalizer(UnicodeForm form) : form_(form) {}
  void normalize(std::string_view in, std::string& out) const override {
    out.clear();
    if (all_ascii(in)) {
      out.assign(in);
      return;
    }
    std::u32string cps, dec;
    to_u32(in, cps);
    bool compat = form_ == UnicodeForm::kNFKD || form_ == UnicodeForm::kNFKC;
    unicode::decompose(cps, compat, dec);
    if (form_ == UnicodeForm::kNFC || form_ == UnicodeForm::kNFKC) unicode::compose_in_place(dec);
    append_utf8(dec, out);
  }

 private:
  UnicodeForm form_;
};

class StripAccents final : public Normalizer {
 public:
  void normalize(std::string_view in, std::string& out) const override {
    out.clear();
    out.reserve(in.size());
    std::size_t pos = 0;
    while (pos < in.size()) {
      std::size_t start = pos;
      char32_t c = utf8::decode_valid(in, pos);
      if (!(prop(c) & unicode::kMark9)) out.append(in.substr(start, pos - start));
    }
  }
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string_view in, std::string& out) const override {
    std::size_t begin = 0, end = in.size();
    if (left_) {
      while (begin < end) {
        std::size_t p = begin;
        if (!unicode::is_white_space(utf8::decode_valid(in, p))) break;
        begin = p;
      }
    }
    if (right_) {
      while (end > begin) {
        std::size_t start = end - 1;
        while (start > begin && (static_cast<unsigned char>(in[start]) & 0xC0) == 0x80) --start;
        std::size_t p = start;
        if (!unicode::is_white_space(utf8::decode_valid(in, p))) break;
        end = start;
      }
    }
    out.assign(in.substr(begin, end - begin));
  }

 private:
  bool left_, right_;
};

bool atom_matches(const ReplacePattern& p, char32_t c) {
  switch (p.atom) {
    case ReplacePattern::Atom::kChar:
      return c == p.ch;
    case ReplacePattern::Atom::kSpace:
      return unicode::is_white_space(c);
    case ReplacePattern::Atom::kNotSpace:
      return !unicode::is_white_space(c);
    case ReplacePattern::Atom::kDigit:
      return (prop(c) & unicode::kNumber) && c != 0;
    case ReplacePattern::Atom::kWord:
      return (prop(c) & unicode::kWord) != 0;
    case ReplacePattern::Atom::kAny:
      return c != '\n';
  }
  return false;
}

class Replace final : public Normalizer {
 public:
  Replace(ReplacePattern pattern, std::string content)
      : p_(std::move(pattern)), content_(std::move(content)) {}

  void normalize(std::string_view in, std::string& out) const override {
    out.clear();
    out.reserve(in.size());
    if (p_.kind == ReplacePattern::Kind::kLiteral) {
      if (p_.literal.empty()) {
        out.assign(in);
        return;
      }
      std::size_t pos = 0;
      for (;;) {
        std::size_t hit = in.find(p_.literal, pos);
        if (hit == std::string_view::npos) break;
        out.append(in.substr(pos, hit - pos));
        out.append(content_);
        pos = hit + p_.literal.size();
      }
      out.append(in.substr(pos));
      return;
    }
    std::size_t pos = 0;
    while (pos < in.size()) {
      // Greedy run of the atom starting at pos.
      std::size_t end = pos, count = 0;
      while (end < in.size() && count < p_.max) {
        std::size_t next = end;
        if (!atom_matches(p_, utf8::decode_valid(in, next))) break;
        end = next;
        ++count;
      }
      if (count >= p_.min && count > 0) {
        out.append(content_);
        pos = end;
      } else {
        std::size_t next = pos;
        utf8::decode_valid(in, next);
        out.append(in.substr(pos, next - pos));
        pos = next;
      }
    }
  }

 private:
  ReplacePattern p_;
  std::string content_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string_view in, std::string& out) const override {
    out.clear();
    if (!in.empty()) out.append(prefix_);
    out.append(in);
  }

 private:
  std::string prefix_;
};

class Nmt final : public Normalizer {
 public:
  void normalize(std::string_view in, std::string& out) const override {
    out.clear();
    out.reserve(in.size());
    std::size_t pos = 0;
    while (pos < in.size()) {
      std::size_t start = pos;
      char32_t c = utf8::decode_valid(in, pos);
      if ((c >= 0x1 && c <= 0x8) || c == 0xB || (c >= 0xE && c <= 0x1F) || c == 0x7F || c == 0x8F ||
          c == 0x9F) {
        continue;
      }
      if (c == 0x9 || c == 0xA || c == 0xC || c == 0xD || c == 0x1680 ||
          (c >= 0x200B && c <= 0x200F) || c == 0x2028 || c == 0x2029 || c == 0x2581 ||
          c == 0xFEFF || c == 0xFFFD) {
        out.push_back(' ');
      } else {
        out.append(in.substr(start, pos - start));
      }
    }
  }
};

class Precompiled final : public Normalizer {
 public:
  explicit Precompiled(std::shared_ptr<const PrecompiledCharsmap> map) : map_(std::move(map)) {}
  void normalize(std::string_view in, std::string& out) const override { map_->normalize(in, out); }

 private:
  std::shared_ptr<const PrecompiledCharsmap> map_;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(std::string_view in, std::string& out) const override {
    if (steps_.empty()) {
      out.assign(in);
      return;
    }
    std::string a, b;
    std::string_view cur = in;
    for (std::size_t k = 0; k < steps_.size(); ++k) {
      std::string& dst = (k + 1 == steps_.size()) ? out : (k % 2 == 0 ? a : b);
      steps_[k]->normalize(cur, dst);
      cur = dst;
    }
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

bool parse_replace_regex(std::string_view re, ReplacePattern& out) {
  // Literal strings (escapes allowed) or: atom quantifier.
  if (!utf8::is_valid(re)) return false;
  ReplacePattern p;
  std::size_t i = 0;
  auto read_atom = [&](ReplacePattern::Atom& atom, char32_t& ch) -> bool {
    if (i >= re.size()) return false;
    if (re[i] == '\\') {
      if (i + 1 >= re.size()) return false;
      char e = re[i + 1];
      i += 2;
      switch (e) {
        case 's':
          atom = ReplacePattern::Atom::kSpace;
          return true;
        case 'S':
          atom = ReplacePattern::Atom::kNotSpace;
          return true;
        case 'd':
          atom = ReplacePattern::Atom::kDigit;
          return true;
        case 'w':
          atom = ReplacePattern::Atom::kWord;
          return true;
        case 'n':
          atom = ReplacePattern::Atom::kChar;
          ch = '\n';
          return true;
        case 't':
          atom = ReplacePattern::Atom::kChar;
          ch = '\t';
          return true;
        case 'r':
          atom = ReplacePattern::Atom::kChar;
          ch = '\r';
          return true;
        default:
          if (std::string_view("\\.^$|?*+()[]{}/- '\"`").find(e) == std::string_view::npos) {
            return false;
          }
          atom = ReplacePattern::Atom::kChar;
          ch = static_cast<unsigned char>(e);
          return true;
      }
    }
    char c = re[i];
    if (std::string_view(".^$|?*+()[]{}").find(c) != std::string_view::npos) {
      if (c != '.') return false;
      atom = ReplacePattern::Atom::kAny;
      ++i;
      return true;
    }
    std::size_t pos = i;
    ch = utf8::decode_valid(re, pos);
    i = pos;
    atom = ReplacePattern::Atom::kChar;
    return true;
  };
  // Try "atom quantifier" first.
  ReplacePattern::Atom atom;
  char32_t ch = 0;
  if (read_atom(atom, ch) && i < re.size()) {
    std::size_t min = 0, max = static_cast<std::size_t>(-1);
    bool ok = true;
    char q = re[i];
    if (q == '+') {
      min = 1;
      ++i;
    } else if (q == '*' || q == '?') {
      ok = false;  // may match the empty string: not supported
    } else if (q == '{') {
      std::size_t close = re.find('}', i);
      if (close == std::string_view::npos) return false;
      std::string_view body = re.substr(i + 1, close - i - 1);
      std::size_t comma = body.find(',');
      auto parse_num = [](std::string_view s, std::size_t& v) {
        if (s.empty() || s.size() > 6) return false;
        v = 0;
        for (char d : s) {
          if (d < '0' || d > '9') return false;
          v = v * 10 + static_cast<std::size_t>(d - '0');
        }
        return true;
      };
      if (comma == std::string_view::npos) {
        if (!parse_num(body, min)) return false;
        max = min;
      } else {
        if (!parse_num(body.substr(0, comma), min)) return false;
        if (comma + 1 < body.size() && !parse_num(body.substr(comma + 1), max)) return false;
      }
      i = close + 1;
    } else {
      ok = false;
    }
    if (ok && i == re.size() && min >= 1 && max >= min) {
      p.kind = ReplacePattern::Kind::kRepeat;
      p.atom = atom;
      p.ch = ch;
      p.min = min;
      p.max = max;
      out = std::move(p);
      return true;
    }
  }
  // A plain literal: every character literal (escaped metacharacters allowed).
  p = ReplacePattern{};
  i = 0;
  while (i < re.size()) {
    if (!read_atom(atom, ch) || atom != ReplacePattern::Atom::kChar) return false;
    utf8::append_code_point(ch, p.literal);
  }
  if (p.literal.empty()) return false;
  out = std::move(p);
  return true;
}

std::unique_ptr<Normalizer> make_bert_normalizer(const BertNormalizerOptions& options) {
  return std::make_unique<BertNormalizer>(options);
}
std::unique_ptr<Normalizer> make_lowercase(bool current_case_data) {
  return std::make_unique<Lowercase>(current_case_data);
}
std::unique_ptr<Normalizer> make_unicode_form(UnicodeForm form) {
  return std::make_unique<UnicodeFormNormalizer>(form);
}
std::unique_ptr<Normalizer> make_strip_accents() { return std::make_unique<StripAccents>(); }
std::unique_ptr<Normalizer> make_strip(bool left, bool right) {
  return std::make_unique<Strip>(left, right);
}
std::unique_ptr<Normalizer> make_replace(ReplacePattern pattern, std::string content) {
  return std::make_unique<Replace>(std::move(pattern), std::move(content));
}
std::unique_ptr<Normalizer> make_prepend(std::string prefix) {
  return std::make_unique<Prepend>(std::move(prefix));
}
std::unique_ptr<Normalizer> make_nmt() { return std::make_unique<Nmt>(); }
std::unique_ptr<Normalizer> make_precompiled(std::shared_ptr<const PrecompiledCharsmap> map) {
  return std::make_unique<Precompiled>(std::move(map));
}
std::unique_ptr<Normalizer> make_sequence(std::vector<std::unique_ptr<Normalizer>> steps) {
  return std::make_unique<Sequence>(std::move(steps));
}

}  // namespace mcinfer::tokenizer
