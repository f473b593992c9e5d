#pragma once
// Unicode properties as Hugging Face tokenizers sees them (each in the Unicode version HF's
// Rust dependencies use; see tools/gen_unicode_tables.py), plus the normalization forms and
// grapheme clusters built on them.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mcinfer::tokenizer::unicode {

// Bits of prop(); the generator writes the same layout.
enum : std::uint32_t {
  kCccMask = 0xFF,           // canonical combining class (Unicode 9.0)
  kWhiteSpace = 1u << 8,     // White_Space (Rust char::is_whitespace, regex \s)
  kBertControl = 1u << 9,    // Cc | Cf | Co in Unicode 8.0, minus \t \n \r
  kBertPunct = 1u << 10,     // ASCII punctuation or P* in Unicode 8.0
  kMn8 = 1u << 11,           // Mn in Unicode 8.0 (BERT accent stripping)
  kLetter = 1u << 12,        // L* (Unicode 14.0, Oniguruma \p{L})
  kNumber = 1u << 13,        // N* (Unicode 14.0, Oniguruma \p{N})
  kMark9 = 1u << 14,         // M* in Unicode 9.0 (StripAccents normalizer)
  kWord = 1u << 15,          // regex \w
  kCanonDecomp = 1u << 16,   // has a canonical decomposition (Unicode 9.0)
  kCompatDecomp = 1u << 17,  // has a compatibility decomposition (Unicode 9.0)
  kHasLower = 1u << 18,      // lowercases to something else
  kGcbShift = 19,            // 4 bits: Grapheme_Cluster_Break, see Gcb
  kIncbShift = 23,           // 2 bits: Indic_Conjunct_Break, see Incb
  kExtPict = 1u << 25,       // Extended_Pictographic
  kChinese = 1u << 26,       // BERT's CJK ideograph ranges
  kComposes = 1u << 27,      // takes part in a canonical composition
};

enum class Gcb : std::uint8_t {
  kOther,
  kCR,
  kLF,
  kControl,
  kExtend,
  kZWJ,
  kRegionalIndicator,
  kPrepend,
  kSpacingMark,
  kL,
  kV,
  kT,
  kLV,
  kLVT
};
enum class Incb : std::uint8_t { kNone, kLinker, kConsonant, kExtend };

namespace tables {
struct Mapping {
  std::uint32_t cp;
  std::uint32_t offset;
  std::uint32_t length;
};
struct Composition {
  std::uint64_t key;  // first << 21 | second
  std::uint32_t composed;
};
extern const std::uint16_t kStage1[];
extern const std::uint32_t kStage2[];
extern const char32_t kCanonicalPool[];
extern const Mapping kCanonical[];
extern const std::size_t kCanonicalCount;
extern const char32_t kCompatPool[];
extern const Mapping kCompat[];
extern const std::size_t kCompatCount;
extern const char32_t kLowerPool[];
extern const Mapping kLower[];
extern const std::size_t kLowerCount;
extern const Composition kCompositions[];
extern const std::size_t kCompositionCount;
// unicode_lower_tf5.cc: the case pairs only the current stack's tokenizers lowercases (see
// tools/gen_unicode_lower_tf5.py), by code point.
struct LowerPair {
  char32_t cp;
  char32_t lower;
};
extern const LowerPair kLowerTf5[];
extern const std::size_t kLowerTf5Count;
}  // namespace tables

inline std::uint32_t prop(char32_t cp) {
  if (cp >= 0x110000) return 0;
  return tables::kStage2[(static_cast<std::uint32_t>(tables::kStage1[cp >> 6]) << 6) | (cp & 63)];
}
inline std::uint8_t ccc(char32_t cp) { return static_cast<std::uint8_t>(prop(cp) & kCccMask); }
inline Gcb gcb(std::uint32_t p) { return static_cast<Gcb>((p >> kGcbShift) & 15); }
inline Incb incb(std::uint32_t p) { return static_cast<Incb>((p >> kIncbShift) & 3); }
inline bool is_white_space(char32_t cp) { return prop(cp) & kWhiteSpace; }

// Appends the lowercase of cp (Rust's char::to_lowercase: full mapping, no context).
void append_lower(char32_t cp, std::u32string& out);
// The lowercase the current stack's tokenizers gives a code point that the tables (Unicode 14.0,
// as tokenizers 0.20 lowercases) leave as it is; 0 when there is none.
char32_t lower_tf5(char32_t cp);
// Appends the full canonical (compat = false) or compatibility decomposition of cp.
void append_decomposed(char32_t cp, bool compat, std::u32string& out);
// Canonical composition of a + b, or 0.
char32_t compose(char32_t a, char32_t b);

// In-place canonical ordering of combining marks (stable sort of non-starter runs by ccc).
void canonical_order(std::u32string& s);
// NFD / NFKD / NFC / NFKC of a code point sequence.
void decompose(std::u32string_view in, bool compat, std::u32string& out);
void compose_in_place(std::u32string& s);

// Extended grapheme clusters (UAX #29): the length in bytes of the cluster that starts at
// text[pos] of well-formed UTF-8.
std::size_t grapheme_length(std::string_view text, std::size_t pos);

}  // namespace mcinfer::tokenizer::unicode
