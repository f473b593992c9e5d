#pragma once
// A double-array byte trie built once from a key set: constant work per input byte for the
// longest-match (WordPiece, added tokens) and all-prefixes (Unigram) walks.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mcinfer::tokenizer {

class Trie {
 public:
  // Keys must be distinct and non-empty; values must be >= 0.
  void build(std::vector<std::pair<std::string, std::int32_t>> keys);

  static constexpr std::uint32_t kRoot = 0;

  // Moves `node` to its child on `byte`; false (node unchanged) when there is none.
  bool step(std::uint32_t& node, unsigned char byte) const {
    std::uint32_t t = base_[node] + byte;
    if (t >= check_.size() || check_[t] != static_cast<std::int32_t>(node)) return false;
    node = t;
    return true;
  }
  // The value stored for the key ending at `node`, or -1.
  std::int32_t value(std::uint32_t node) const { return value_[node]; }

  bool empty() const { return empty_; }
  std::size_t node_count() const { return check_.size(); }

  // Longest key that is a prefix of text[pos..]; returns its length (0: none), sets value.
  std::size_t longest_prefix(std::string_view text, std::size_t pos, std::int32_t& value) const {
    std::uint32_t node = kRoot;
    std::size_t best = 0;
    for (std::size_t i = pos; i < text.size(); ++i) {
      if (!step(node, static_cast<unsigned char>(text[i]))) break;
      std::int32_t v = value_[node];
      if (v >= 0) {
        best = i + 1 - pos;
        value = v;
      }
    }
    return best;
  }

 private:
  std::vector<std::uint32_t> base_{0};
  std::vector<std::int32_t> check_{-1};
  std::vector<std::int32_t> value_{-1};
  bool empty_ = true;
};

}  // namespace mcinfer::tokenizer
