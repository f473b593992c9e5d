#include "tokenizer/unicode.h"

#include <algorithm>

#include "core/utf8.h"

namespace mcinfer::tokenizer::unicode {
namespace {

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount;
constexpr char32_t kSCount = kLCount * kNCount;

const tables::Mapping* find_mapping(const tables::Mapping* table, std::size_t count, char32_t cp) {
  const tables::Mapping* end = table + count;
  const tables::Mapping* it = std::lower_bound(
      table, end, cp, [](const tables::Mapping& m, char32_t c) { return m.cp < c; });
  return (it != end && it->cp == cp) ? it : nullptr;
}

}  // namespace

void append_lower(char32_t cp, std::u32string& out) {
  if (!(prop(cp) & kHasLower)) {
    out.push_back(cp);
    return;
  }
  const tables::Mapping* m = find_mapping(tables::kLower, tables::kLowerCount, cp);
  if (m == nullptr) {
    out.push_back(cp);
    return;
  }
  out.append(tables::kLowerPool + m->offset, m->length);
}

char32_t lower_tf5(char32_t cp) {
  const tables::LowerPair* end = tables::kLowerTf5 + tables::kLowerTf5Count;
  const tables::LowerPair* it = std::lower_bound(
      tables::kLowerTf5, end, cp, [](const tables::LowerPair& m, char32_t c) { return m.cp < c; });
  return (it != end && it->cp == cp) ? it->lower : 0;
}

void append_decomposed(char32_t cp, bool compat, std::u32string& out) {
  std::uint32_t p = prop(cp);
  if (!(p & (compat ? kCompatDecomp : kCanonDecomp))) {
    out.push_back(cp);
    return;
  }
  if (cp >= kSBase && cp < kSBase + kSCount) {
    char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const tables::Mapping* m = compat ? find_mapping(tables::kCompat, tables::kCompatCount, cp)
                                    : find_mapping(tables::kCanonical, tables::kCanonicalCount, cp);
  if (m == nullptr) {
    out.push_back(cp);
    return;
  }
  const char32_t* pool = compat ? tables::kCompatPool : tables::kCanonicalPool;
  out.append(pool + m->offset, m->length);
}

char32_t compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount) {
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  }
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount) {
    return a + (b - kTBase);
  }
  if (!(prop(a) & kComposes) || !(prop(b) & kComposes)) return 0;
  std::uint64_t key = (static_cast<std::uint64_t>(a) << 21) | b;
  const tables::Composition* end = tables::kCompositions + tables::kCompositionCount;
  const tables::Composition* it =
      std::lower_bound(tables::kCompositions, end, key,
                       [](const tables::Composition& c, std::uint64_t k) { return c.key < k; });
  return (it != end && it->key == key) ? it->composed : 0;
}

void canonical_order(std::u32string& s) {
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    if (ccc(s[i]) == 0) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < n && ccc(s[j]) != 0) ++j;
    if (j - i > 1) {
      // Stable by combining class; O(k log k) keeps long hostile runs of marks cheap.
      std::stable_sort(s.begin() + static_cast<std::ptrdiff_t>(i),
                       s.begin() + static_cast<std::ptrdiff_t>(j),
                       [](char32_t a, char32_t b) { return ccc(a) < ccc(b); });
    }
    i = j;
  }
}

void decompose(std::u32string_view in, bool compat, std::u32string& out) {
  out.clear();
  out.reserve(in.size());
  for (char32_t c : in) append_decomposed(c, compat, out);
  canonical_order(out);
}

void compose_in_place(std::u32string& s) {
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t starter = kNone;
  int last = -1;  // ccc of the last kept mark after the starter; -1: adjacent to it
  std::size_t w = 0;
  for (std::size_t r = 0; r < s.size(); ++r) {
    char32_t c = s[r];
    int cc = ccc(c);
    if (starter != kNone && (last == -1 || (last != 0 && last < cc))) {
      char32_t composed = compose(s[starter], c);
      if (composed != 0) {
        s[starter] = composed;
        continue;
      }
    }
    if (cc == 0) {
      starter = w;
      last = -1;
    } else {
      last = cc;
    }
    s[w++] = c;
  }
  s.resize(w);
}

std::size_t grapheme_length(std::string_view text, std::size_t pos) {
  const std::size_t n = text.size();
  std::size_t p = pos;
  std::uint32_t prev_p = prop(utf8::decode_valid(text, p));
  Gcb prev = gcb(prev_p);
  int ri_count = prev == Gcb::kRegionalIndicator ? 1 : 0;
  bool emoji = (prev_p & kExtPict) != 0;  // ExtPict Extend* so far
  bool emoji_zwj = false;                 // ExtPict Extend* ZWJ just seen
  // GB9c: 0 nothing, 1 consonant [extend|linker]* without linker, 2 with a linker.
  int conjunct = incb(prev_p) == Incb::kConsonant ? 1 : 0;
  while (p < n) {
    std::size_t q = p;
    std::uint32_t cur_p = prop(utf8::decode_valid(text, q));
    Gcb cur = gcb(cur_p);
    bool join;
    if (prev == Gcb::kCR && cur == Gcb::kLF) {
      join = true;  // GB3
    } else if (prev == Gcb::kControl || prev == Gcb::kCR || prev == Gcb::kLF) {
      join = false;  // GB4
    } else if (cur == Gcb::kControl || cur == Gcb::kCR || cur == Gcb::kLF) {
      join = false;  // GB5
    } else if (prev == Gcb::kL &&
               (cur == Gcb::kL || cur == Gcb::kV || cur == Gcb::kLV || cur == Gcb::kLVT)) {
      join = true;  // GB6
    } else if ((prev == Gcb::kLV || prev == Gcb::kV) && (cur == Gcb::kV || cur == Gcb::kT)) {
      join = true;  // GB7
    } else if ((prev == Gcb::kLVT || prev == Gcb::kT) && cur == Gcb::kT) {
      join = true;  // GB8
    } else if (cur == Gcb::kExtend || cur == Gcb::kZWJ || cur == Gcb::kSpacingMark ||
               prev == Gcb::kPrepend) {
      join = true;  // GB9, GB9a, GB9b
    } else if (conjunct == 2 && incb(cur_p) == Incb::kConsonant) {
      join = true;  // GB9c
    } else if (emoji_zwj && (cur_p & kExtPict)) {
      join = true;  // GB11
    } else if (prev == Gcb::kRegionalIndicator && cur == Gcb::kRegionalIndicator &&
               ri_count % 2 == 1) {
      join = true;  // GB12, GB13
    } else {
      join = false;  // GB999
    }
    if (!join) break;
    Incb ic = incb(cur_p);
    if (ic == Incb::kConsonant) {
      conjunct = 1;
    } else if (conjunct != 0 && ic == Incb::kLinker) {
      conjunct = 2;
    } else if (conjunct != 0 && ic == Incb::kExtend) {
      // stays
    } else {
      conjunct = 0;
    }
    if (cur_p & kExtPict) {
      emoji = true;
      emoji_zwj = false;
    } else if (emoji && cur == Gcb::kExtend) {
      emoji_zwj = false;
    } else if (emoji && cur == Gcb::kZWJ) {
      emoji = false;
      emoji_zwj = true;
    } else {
      emoji = false;
      emoji_zwj = false;
    }
    ri_count = cur == Gcb::kRegionalIndicator ? ri_count + 1 : 0;
    prev = cur;
    p = q;
  }
  return p - pos;
}

}  // namespace mcinfer::tokenizer::unicode
