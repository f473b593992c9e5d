#pragma once
// What Oniguruma (as tokenizers runs Split patterns) means by a class escape or a Unicode
// general category, written as the body of a PCRE2 character class (tools/gen_onig_classes.py
// derives them from tokenizers itself and checks them over all of Unicode).

#include <string_view>
#include <vector>

namespace mcinfer::tokenizer {

struct OnigClass {
  std::string_view name;  // "s", "w", "d", "h" (class escapes) or a category ("L", "Nd", ...)
  std::string_view body;  // the inside of a PCRE2 [...] matching what Oniguruma matches
};

// Categories whose members Oniguruma's newer Unicode moved out (C, Cn, Mn) are absent: no union
// with PCRE2's older categories can express them.
const std::vector<OnigClass>& onig_classes();

}  // namespace mcinfer::tokenizer
