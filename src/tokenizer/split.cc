#include "tokenizer/split.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "core/error.h"
#include "tokenizer/onig_classes.h"

namespace mcinfer::tokenizer {
namespace {

// Bounds on one search: past them a pattern is refused rather than left backtracking (PCRE2's
// defaults let a catastrophic pattern run for minutes on a few hundred characters).
constexpr std::uint32_t kMatchLimit = 10'000'000;
constexpr std::uint32_t kDepthLimit = 100'000;

std::string_view class_body(std::string_view name) {
  for (const OnigClass& c : onig_classes()) {
    if (c.name == name) return c.body;
  }
  return {};
}

std::size_t utf8_length(unsigned char lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// One pass over an Oniguruma pattern, writing its PCRE2 form and, for each byte written, the
// offset of the pattern byte it came from (so PCRE2's error offsets point into the original).
class Translator {
 public:
  Translator(std::string_view in, const std::string& field) : in_(in), field_(field) {}

  std::string run() {
    while (pos_ < in_.size()) {
      const char c = in_[pos_];
      if (c == '\\') {
        escape();
      } else if (c == '[') {
        open_bracket();
      } else if (c == ']' && in_class_) {
        in_class_ = false;
        copy(1);
      } else if (c == '&' && in_class_ && pos_ + 1 < in_.size() && in_[pos_ + 1] == '&') {
        refuse("a '&&' intersection inside brackets");
      } else if (c == '(' && !in_class_ && pos_ + 1 < in_.size() && in_[pos_ + 1] == '?') {
        group_options();
      } else {
        copy(utf8_length(static_cast<unsigned char>(c)));
      }
    }
    return out_;
  }

  // The pattern offset an output offset came from.
  std::size_t source_offset(std::size_t out_offset) const {
    return out_offset < from_.size() ? from_[out_offset] : in_.size();
  }

 private:
  [[noreturn]] void refuse(std::string_view what) const {
    fail("{}: regex '{}': {} at offset {} has no exact PCRE2 form here", field_, in_, what, pos_);
  }

  void emit(std::string_view text) {
    out_.append(text);
    from_.resize(out_.size(), pos_);
  }
  void copy(std::size_t n) {
    n = std::min(n, in_.size() - pos_);
    emit(in_.substr(pos_, n));
    pos_ += n;
  }

  void open_bracket() {
    if (in_class_) {
      if (pos_ + 1 < in_.size() && in_[pos_ + 1] == ':') refuse("a POSIX bracket class");
      refuse("a bracket inside brackets");
    }
    in_class_ = true;
    copy(1);
    if (pos_ < in_.size() && in_[pos_] == '^') copy(1);
    if (pos_ < in_.size() && in_[pos_] == ']')
      copy(1);  // a literal ']' first, as Oniguruma reads it
  }

  // (?imx-imx) and (?imx-imx:...): Ruby's m is dot-all, PCRE2's s.
  void group_options() {
    std::size_t j = pos_ + 2;
    while (j < in_.size() && (in_[j] == 'i' || in_[j] == 'm' || in_[j] == 'x' || in_[j] == '-'))
      ++j;
    if (j == pos_ + 2 || j >= in_.size() || (in_[j] != ':' && in_[j] != ')')) {
      copy(2);
      return;
    }
    copy(2);
    while (pos_ < j) {
      emit(in_[pos_] == 'm' ? "s" : std::string_view(&in_[pos_], 1));
      ++pos_;
    }
  }

  // A class by its Oniguruma name, negated or not, in or out of brackets.
  void put_class(std::string_view name, bool negated, std::string_view spelled) {
    const std::string_view body = class_body(name);
    if (body.empty()) {
      refuse(fmt::format("'{}' (only the general categories and \\s \\w \\d \\h are supported)",
                         spelled));
    }
    if (in_class_) {
      if (negated) refuse(fmt::format("the negated class '{}' inside brackets", spelled));
      emit(body);
    } else {
      emit(negated ? "[^" : "[");
      emit(body);
      emit("]");
    }
  }

  void property(bool negated) {
    const std::size_t start = pos_;
    std::string name;
    if (pos_ + 2 < in_.size() && in_[pos_ + 2] == '{') {
      const std::size_t close = in_.find('}', pos_ + 3);
      if (close == std::string_view::npos) refuse("an unterminated \\p{");
      name = in_.substr(pos_ + 3, close - pos_ - 3);
      pos_ = close + 1;
    } else if (pos_ + 2 < in_.size()) {
      name = in_.substr(pos_ + 2, 1);
      pos_ += 3;
    } else {
      refuse("a \\p without a property");
    }
    if (!name.empty() && name[0] == '^') {
      negated = !negated;
      name.erase(0, 1);
    }
    const std::size_t end = pos_;
    pos_ = start;
    put_class(name, negated, in_.substr(start, end - start));
    from_.resize(out_.size(), start);
    pos_ = end;
  }

  void escape() {
    if (pos_ + 1 >= in_.size()) {
      copy(1);  // PCRE2 names the error
      return;
    }
    const char c = in_[pos_ + 1];
    const std::string_view spelled = in_.substr(pos_, 2);
    switch (c) {
      case 's':
      case 'w':
      case 'd':
      case 'h':
        put_class(std::string_view(&in_[pos_ + 1], 1), false, spelled);
        pos_ += 2;
        return;
      case 'S':
      case 'W':
      case 'D':
      case 'H': {
        const char lower = static_cast<char>(c - 'A' + 'a');
        put_class(std::string_view(&lower, 1), true, spelled);
        pos_ += 2;
        return;
      }
      case 'p':
      case 'P':
        property(c == 'P');
        return;
      case 'b':
      case 'B':
        if (!in_class_) {
          word_boundary(c == 'b');
          pos_ += 2;
          return;
        }
        break;
      case 'v':  // Ruby: the vertical tab; PCRE2: any vertical space
        emit("\\x{B}");
        pos_ += 2;
        return;
      case 'u':
        if (pos_ + 6 <= in_.size()) {
          emit("\\x{" + std::string(in_.substr(pos_ + 2, 4)) + "}");
          pos_ += 6;
          return;
        }
        break;
      default:
        break;
    }
    copy(1 + utf8_length(static_cast<unsigned char>(c)));
  }

  // \b and \B between Oniguruma's word characters, not PCRE2's.
  void word_boundary(bool boundary) {
    const std::string w = "[" + std::string(class_body("w")) + "]";
    if (boundary) {
      emit("(?:(?<=" + w + ")(?!" + w + ")|(?<!" + w + ")(?=" + w + "))");
    } else {
      emit("(?:(?<=" + w + ")(?=" + w + ")|(?<!" + w + ")(?!" + w + "))");
    }
  }

  std::string_view in_;
  const std::string& field_;
  std::string out_;
  std::vector<std::size_t> from_;
  std::size_t pos_ = 0;
  bool in_class_ = false;
};

struct CodeDeleter {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
struct MatchContextDeleter {
  void operator()(pcre2_match_context* c) const { pcre2_match_context_free(c); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* d) const { pcre2_match_data_free(d); }
};
struct CompileContextDeleter {
  void operator()(pcre2_compile_context* c) const { pcre2_compile_context_free(c); }
};

std::string pcre2_message(int code) {
  std::string buf(256, '\0');
  const int n =
      pcre2_get_error_message(code, reinterpret_cast<PCRE2_UCHAR*>(buf.data()), buf.size());
  buf.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return buf;
}

// A piece of the text between or at matches, as tokenizers' find_matches gives them.
struct Piece {
  std::uint32_t start, end;
  bool match;
};

class Split final : public PreTokenizer {
 public:
  Split(const SplitPattern& pattern, SplitBehavior behavior, bool invert, std::string field)
      : behavior_(behavior), invert_(invert), field_(std::move(field)) {
    std::unique_ptr<pcre2_compile_context, CompileContextDeleter> cc(
        pcre2_compile_context_create(nullptr));
    if (!cc) fail("{}: out of memory compiling the pattern", field_);
    pcre2_set_newline(cc.get(), PCRE2_NEWLINE_LF);  // Oniguruma's: '.' and '$' know only \n
    std::string source = pattern.text;
    std::optional<Translator> translator;
    std::uint32_t options = PCRE2_UTF | PCRE2_LITERAL;  // PCRE2 takes no other option with it
    if (!pattern.literal) {
      options = PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE;
      translator.emplace(pattern.text, field_);
      source = translator->run();
    }
    int error = 0;
    PCRE2_SIZE offset = 0;
    code_.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(), options,
                              &error, &offset, cc.get()));
    if (!code_) {
      const std::size_t at = translator ? translator->source_offset(offset) : offset;
      fail("{}: invalid regex '{}': {} (PCRE2, at offset {})", field_, pattern.text,
           pcre2_message(error), at);
    }
    pcre2_jit_compile(code_.get(), PCRE2_JIT_COMPLETE);  // without JIT: the interpreter
    context_.reset(pcre2_match_context_create(nullptr));
    if (!context_) fail("{}: out of memory compiling the pattern", field_);
    pcre2_set_match_limit(context_.get(), kMatchLimit);
    pcre2_set_depth_limit(context_.get(), kDepthLimit);
  }

  void split(std::string_view in, bool, Words& out) const override {
    if (in.empty()) return;
    std::vector<Piece> pieces = find_matches(in);
    if (invert_) {
      for (Piece& p : pieces) p.match = !p.match;
    }
    const auto base = static_cast<std::uint32_t>(out.buf.size());
    out.buf.append(in);
    for (const Piece& p : apply_behavior(pieces)) {
      if (p.end > p.start) out.spans.emplace_back(base + p.start, p.end - p.start);
    }
  }

 private:
  // The matches and the text between them, walked as the onig crate's find_iter walks them: an
  // empty match right where the previous match ended is skipped by one character.
  std::vector<Piece> find_matches(std::string_view in) const {
    std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(
        pcre2_match_data_create_from_pattern(code_.get(), nullptr));
    if (!data) fail("{}: out of memory matching the pattern", field_);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(in.data());
    std::vector<Piece> pieces;
    std::size_t search = 0, prev = 0;
    std::optional<std::size_t> last_match_end;
    while (search <= in.size()) {
      int rc = pcre2_match(code_.get(), subject, in.size(), search, PCRE2_NO_UTF_CHECK, data.get(),
                           context_.get());
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(code_.get(), subject, in.size(), search, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                         data.get(), context_.get());
      }
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        fail("{}: matching a text of {} bytes failed: {} (PCRE2)", field_, in.size(),
             pcre2_message(rc));
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.get());
      const std::size_t s = ov[0], e = ov[1];
      if (s == e && last_match_end == e) {
        search += e < in.size() ? utf8_length(static_cast<unsigned char>(in[e])) : 1;
        continue;
      }
      search = e;
      last_match_end = e;
      if (prev != s)
        pieces.push_back({static_cast<std::uint32_t>(prev), static_cast<std::uint32_t>(s), false});
      pieces.push_back({static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(e), true});
      prev = e;
    }
    if (prev != in.size()) {
      pieces.push_back(
          {static_cast<std::uint32_t>(prev), static_cast<std::uint32_t>(in.size()), false});
    }
    return pieces;
  }

  // tokenizers' SplitDelimiterBehavior over the pieces: what is kept, merged or dropped. The
  // result's `match` marks the pieces to drop.
  std::vector<Piece> apply_behavior(const std::vector<Piece>& pieces) const {
    std::vector<Piece> out;
    out.reserve(pieces.size());
    bool previous_match = false;
    switch (behavior_) {
      case SplitBehavior::kIsolated:
        for (Piece p : pieces) out.push_back({p.start, p.end, false});
        return out;
      case SplitBehavior::kRemoved:
        for (Piece p : pieces) {
          if (!p.match) out.push_back(p);
        }
        return out;
      case SplitBehavior::kMergedWithPrevious:
        for (Piece p : pieces) {
          if (p.match && !previous_match && !out.empty()) {
            out.back().end = p.end;
          } else {
            out.push_back({p.start, p.end, false});
          }
          previous_match = p.match;
        }
        return out;
      case SplitBehavior::kMergedWithNext:
        for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
          if (it->match && !previous_match && !out.empty()) {
            out.back().start = it->start;
          } else {
            out.push_back({it->start, it->end, false});
          }
          previous_match = it->match;
        }
        std::reverse(out.begin(), out.end());
        return out;
      case SplitBehavior::kContiguous:
        for (Piece p : pieces) {
          if (p.match == previous_match && !out.empty()) {
            out.back().end = p.end;
          } else {
            out.push_back({p.start, p.end, false});
          }
          previous_match = p.match;
        }
        return out;
    }
    return out;
  }

  std::unique_ptr<pcre2_code, CodeDeleter> code_;
  std::unique_ptr<pcre2_match_context, MatchContextDeleter> context_;
  SplitBehavior behavior_;
  bool invert_;
  std::string field_;
};

}  // namespace

std::string onig_to_pcre2(std::string_view pattern, const std::string& field) {
  return Translator(pattern, field).run();
}

std::unique_ptr<PreTokenizer> make_split(const SplitPattern& pattern, SplitBehavior behavior,
                                         bool invert, const std::string& field) {
  return std::make_unique<Split>(pattern, behavior, invert, field);
}

}  // namespace mcinfer::tokenizer
