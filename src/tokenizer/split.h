#pragma once
// HF tokenizers' Split pre-tokenizer: a pattern (a literal string or a regex) cuts the text, and
// the behavior says what becomes of the matches. tokenizers compiles the regex with Oniguruma
// (Ruby syntax); mcinfer with PCRE2, after rewriting what the two engines read differently
// (onig_to_pcre2), and walks the matches as tokenizers walks Oniguruma's.

#include <memory>
#include <string>
#include <string_view>

#include "core/enum_names.h"
#include "tokenizer/pre_tokenizer.h"

namespace mcinfer::tokenizer {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
// The spellings of tokenizer.json's "behavior".
inline constexpr EnumNames<SplitBehavior, 5> kSplitBehaviorNames{
    {{{SplitBehavior::kRemoved, "Removed"},
      {SplitBehavior::kIsolated, "Isolated"},
      {SplitBehavior::kMergedWithPrevious, "MergedWithPrevious"},
      {SplitBehavior::kMergedWithNext, "MergedWithNext"},
      {SplitBehavior::kContiguous, "Contiguous"}}}};

struct SplitPattern {
  bool literal = false;  // {"String": ...}: the text itself; else {"Regex": ...}
  std::string text;
};

// Compiles the pattern; throws Error naming `field` (e.g. "tokenizer.json: field
// 'pre_tokenizer.pattern.Regex'") with PCRE2's message and the offset in the pattern, or what
// the rewriting refuses. Matching a text throws Error (naming `field`) when the pattern needs
// more than PCRE2's match limit: a catastrophic pattern is refused, never left running.
std::unique_ptr<PreTokenizer> make_split(const SplitPattern& pattern, SplitBehavior behavior,
                                         bool invert, const std::string& field);

// An Oniguruma (Ruby syntax) pattern as a PCRE2 pattern that matches the same text under
// PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE: the class escapes \s \w \d \h (and their negations),
// \b \B, and general categories \p{..} become the classes Oniguruma's Unicode gives them
// (onig_classes.h); (?m) becomes (?s) (Ruby's dot-all); \uHHHH becomes \x{HHHH}. Throws Error
// naming `field` for what has no exact PCRE2 form here: a negated class escape or property
// inside a bracket, nested brackets, && intersections, POSIX brackets, properties other than
// general categories.
std::string onig_to_pcre2(std::string_view pattern, const std::string& field);

}  // namespace mcinfer::tokenizer
