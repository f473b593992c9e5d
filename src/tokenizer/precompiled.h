#pragma once
// SentencePiece's precompiled_charsmap (a Darts double array over UTF-8 keys plus a blob of
// NUL-terminated replacements), applied the way HF's Precompiled normalizer does: per
// extended grapheme cluster, the whole cluster when shorter than 6 bytes, else per character,
// each replaced by the entry of the *shortest* key that prefixes it.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mcinfer::tokenizer {

class PrecompiledCharsmap {
 public:
  // Parses the blob; throws Error naming `origin` when it is malformed.
  static std::shared_ptr<const PrecompiledCharsmap> parse(std::string_view blob,
                                                          const std::string& origin);

  // HF's transform(): true and `out` set when some key prefixes `chunk`.
  bool transform(std::string_view chunk, std::string_view& out) const;

  void normalize(std::string_view in, std::string& out) const;

 private:
  std::vector<std::uint32_t> units_;
  std::string replacements_;
  // Single ASCII bytes are by far the most common clusters: their transform, precomputed.
  std::int32_t ascii_offset_[128];
  std::uint32_t ascii_length_[128];
};

}  // namespace mcinfer::tokenizer
