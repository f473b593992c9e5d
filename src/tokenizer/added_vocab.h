#pragma once
// HF's AddedVocabulary: tokens split out of the text before the model sees it — those with
// normalized=false on the raw text, the others on the normalized text — with HF's id
// assignment and its single_word / lstrip / rstrip rules.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/trie.h"

namespace mcinfer::tokenizer {

class Model;
class Normalizer;

struct AddedToken {
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
  bool operator==(const AddedToken&) const = default;
};

// A piece of text: [start, end) and the added token's id, or -1 for text to tokenize.
struct Piece {
  std::size_t start, end;
  std::int32_t id;
};

class AddedVocabulary {
 public:
  // HF's add_tokens() on a fresh vocabulary, tokens in file order.
  void add_tokens(const std::vector<AddedToken>& tokens, const Model& model,
                  const Normalizer* normalizer);

  // Splits `text` on the raw (normalized_set=false) or normalized tokens; appends pieces.
  void split(std::string_view text, bool normalized_set, std::vector<Piece>& out) const;
  bool has_raw() const { return !raw_.empty(); }
  bool has_normalized() const { return !normalized_.empty(); }

  std::int32_t find(std::string_view content) const;  // -1 when absent
  const std::string* content(std::int32_t id) const;  // nullptr when absent
  // A normalized token's content as the normalizer leaves it; nullptr when the token is absent
  // or not normalized.
  const std::string* normalized_content(std::int32_t id) const;
  std::size_t size() const { return by_content_.size(); }

 private:
  // Aho-Corasick automaton over the *reversed* contents: reading the text backwards, the
  // state at position i knows the longest content that starts at i, in linear time whatever
  // the contents (a forward trie walk from every position is quadratic for hostile files).
  struct MatchSet {
    Trie trie;                          // reversed content -> id
    std::vector<std::uint32_t> fail;    // by trie node
    std::vector<std::uint32_t> length;  // longest content ending the node's suffix chain, or 0
    std::vector<std::int32_t> id;       // its id
    bool last_byte[256] = {};           // bytes a content can end with
    bool empty() const { return trie.empty(); }
  };
  void build_set(const std::vector<std::pair<std::string, std::int32_t>>& patterns, MatchSet& set);

  std::unordered_map<std::string, std::int32_t> by_content_;
  std::unordered_map<std::int32_t, AddedToken> by_id_;
  std::unordered_map<std::int32_t, std::string> normalized_by_id_;
  MatchSet raw_, normalized_;
};

}  // namespace mcinfer::tokenizer
