#pragma once
// Normalizers of HF tokenizers (BertNormalizer, Lowercase, NFD/NFKD/NFC/NFKC, StripAccents,
// Strip, Replace, Prepend, Nmt, Precompiled, Sequence), applied to well-formed UTF-8.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/precompiled.h"

namespace mcinfer::tokenizer {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Writes the normalized form of `in` to `out` (cleared first). `in` never aliases `out`.
  virtual void normalize(std::string_view in, std::string& out) const = 0;
};

struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = false;  // already resolved: HF's null means "same as lowercase"
  bool lowercase = true;
  // Lowercase as the current stack's tokenizers does: also the case pairs of newer Unicode
  // versions (tokenizer::Compat::kTransformers5).
  bool current_case_data = false;
};

enum class UnicodeForm { kNFD, kNFKD, kNFC, kNFKC };

// A Replace pattern: a literal string, or one (possibly escaped) character or class with a
// greedy quantifier ({n,}, {n,m}, +, *, ?), which is what real checkpoints use (" {2,}").
struct ReplacePattern {
  enum class Kind { kLiteral, kRepeat } kind = Kind::kLiteral;
  std::string literal;
  // kRepeat: the atom and its bounds.
  enum class Atom { kChar, kSpace, kNotSpace, kDigit, kWord, kAny } atom = Atom::kChar;
  char32_t ch = 0;
  std::size_t min = 1, max = static_cast<std::size_t>(-1);
};
// Parses a Replace normalizer's Regex; returns false when outside the supported subset.
bool parse_replace_regex(std::string_view regex, ReplacePattern& out);

std::unique_ptr<Normalizer> make_bert_normalizer(const BertNormalizerOptions& options);
// current_case_data: as BertNormalizerOptions::current_case_data.
std::unique_ptr<Normalizer> make_lowercase(bool current_case_data = false);
std::unique_ptr<Normalizer> make_unicode_form(UnicodeForm form);
std::unique_ptr<Normalizer> make_strip_accents();
std::unique_ptr<Normalizer> make_strip(bool left, bool right);
std::unique_ptr<Normalizer> make_replace(ReplacePattern pattern, std::string content);
std::unique_ptr<Normalizer> make_prepend(std::string prefix);
std::unique_ptr<Normalizer> make_nmt();
std::unique_ptr<Normalizer> make_precompiled(std::shared_ptr<const PrecompiledCharsmap> map);
std::unique_ptr<Normalizer> make_sequence(std::vector<std::unique_ptr<Normalizer>> steps);

}  // namespace mcinfer::tokenizer
