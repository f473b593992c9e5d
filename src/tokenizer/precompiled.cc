#include "tokenizer/precompiled.h"

#include <cstring>

#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/unicode.h"

namespace mcinfer::tokenizer {
namespace {

// Darts-clone unit layout.
inline bool has_leaf(std::uint32_t u) { return (u >> 8) & 1; }
inline std::uint32_t leaf_value(std::uint32_t u) { return u & 0x7FFFFFFFu; }
inline std::uint32_t label(std::uint32_t u) { return u & (0x80000000u | 0xFFu); }
inline std::uint64_t offset(std::uint32_t u) {
  return static_cast<std::uint64_t>(u >> 10) << ((u & (1u << 9)) >> 6);
}

}  // namespace

std::shared_ptr<const PrecompiledCharsmap> PrecompiledCharsmap::parse(std::string_view blob,
                                                                      const std::string& origin) {
  if (blob.size() < 4) fail("{}: precompiled_charsmap: {} bytes is too short", origin, blob.size());
  std::uint32_t trie_bytes;
  std::memcpy(&trie_bytes, blob.data(), 4);  // little-endian on every supported target
  std::size_t units = trie_bytes / 4;
  if (units > (blob.size() - 4) / 4) {
    fail("{}: precompiled_charsmap: trie of {} bytes does not fit in {} bytes", origin, trie_bytes,
         blob.size());
  }
  auto map = std::make_shared<PrecompiledCharsmap>();
  map->units_.resize(units);
  if (units > 0) std::memcpy(map->units_.data(), blob.data() + 4, units * 4);
  std::string_view rest = blob.substr(4 + units * 4);
  if (!utf8::is_valid(rest)) {
    fail("{}: precompiled_charsmap: replacement strings are not valid UTF-8", origin);
  }
  map->replacements_.assign(rest);
  for (int b = 0; b < 128; ++b) {
    char c = static_cast<char>(b);
    std::string_view out;
    if (map->transform(std::string_view(&c, 1), out)) {
      map->ascii_offset_[b] = static_cast<std::int32_t>(out.data() - map->replacements_.data());
      map->ascii_length_[b] = static_cast<std::uint32_t>(out.size());
    } else {
      map->ascii_offset_[b] = -1;
      map->ascii_length_[b] = 0;
    }
  }
  return map;
}

bool PrecompiledCharsmap::transform(std::string_view chunk, std::string_view& out) const {
  if (units_.empty()) return false;
  std::uint64_t node = 0;
  node ^= offset(units_[0]);
  for (unsigned char c : chunk) {
    if (c == 0) break;
    node ^= c;
    if (node >= units_.size()) return false;
    std::uint32_t unit = units_[node];
    if (label(unit) != c) return false;
    node ^= offset(unit);
    if (has_leaf(unit)) {
      // HF takes the first (shortest) match only.
      if (node >= units_.size()) return false;
      std::size_t index = leaf_value(units_[node]);
      if (index > replacements_.size()) return false;
      if (index < replacements_.size() &&
          (static_cast<unsigned char>(replacements_[index]) & 0xC0) == 0x80) {
        return false;  // not on a character boundary: HF would panic; treat as no entry
      }
      std::size_t end = replacements_.find('\0', index);
      if (end == std::string::npos) end = replacements_.size();
      out = std::string_view(replacements_).substr(index, end - index);
      return true;
    }
  }
  return false;
}

void PrecompiledCharsmap::normalize(std::string_view in, std::string& out) const {
  out.clear();
  out.reserve(in.size() + in.size() / 8);
  const std::size_t n = in.size();
  std::size_t pos = 0;
  while (pos < n) {
    unsigned char b = static_cast<unsigned char>(in[pos]);
    if (b < 0x80 && (pos + 1 == n || static_cast<unsigned char>(in[pos + 1]) < 0x80) &&
        !(b == '\r' && pos + 1 < n && in[pos + 1] == '\n')) {
      // A lone ASCII byte followed by ASCII (or the end) is a whole cluster.
      if (ascii_offset_[b] >= 0) {
        out.append(replacements_.data() + ascii_offset_[b], ascii_length_[b]);
      } else {
        out.push_back(static_cast<char>(b));
      }
      ++pos;
      continue;
    }
    std::size_t len = unicode::grapheme_length(in, pos);
    std::string_view cluster = in.substr(pos, len);
    std::string_view rep;
    if (len < 6 && transform(cluster, rep)) {
      out.append(rep);
    } else {
      std::size_t i = 0;
      while (i < len) {
        std::size_t j = i;
        utf8::decode_valid(cluster, j);
        std::string_view ch = cluster.substr(i, j - i);
        if (transform(ch, rep)) {
          out.append(rep);
        } else {
          out.append(ch);
        }
        i = j;
      }
    }
    pos += len;
  }
}

}  // namespace mcinfer::tokenizer
