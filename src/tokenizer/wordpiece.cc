// WordPiece: greedy longest-match-first over a word, "##" continuation pieces, [UNK] for the
// whole word when a piece is missing or the word is longer than max_input_chars_per_word.

#include "core/error.h"
#include "tokenizer/model.h"
#include "tokenizer/trie.h"
#include "tokenizer/vocab.h"

namespace mcinfer::tokenizer {

void Vocab::build(const std::vector<std::pair<std::string, std::int32_t>>& entries,
                  const std::string& origin) {
  std::int64_t max_id = -1;
  for (const auto& [token, id] : entries) {
    if (id < 0) fail("{}: token '{}' has negative id {}", origin, token, id);
    max_id = std::max<std::int64_t>(max_id, id);
  }
  // HF stores ids as given; a table indexed by id must stay proportional to the vocabulary.
  if (max_id >= static_cast<std::int64_t>(entries.size()) * 4 + 4096) {
    fail("{}: ids go up to {} for {} tokens; refusing such a sparse vocabulary", origin, max_id,
         entries.size());
  }
  ids_.reserve(entries.size());
  tokens_.assign(static_cast<std::size_t>(max_id + 1), std::string());
  present_.assign(static_cast<std::size_t>(max_id + 1), false);
  for (const auto& [token, id] : entries) {
    ids_.insert(token, id, /*overwrite=*/true);
    tokens_[id] = token;
    present_[id] = true;
  }
}

namespace {

class WordPiece final : public Model {
 public:
  WordPiece(std::vector<std::pair<std::string, std::int32_t>> vocab, const WordPieceOptions& o,
            const std::string& origin)
      : max_chars_(o.max_input_chars_per_word) {
    vocab_.build(vocab, origin);
    unk_id_ = vocab_.find(o.unk_token);
    if (unk_id_ < 0) {
      fail("{}: field 'model.unk_token': '{}' is not in the vocabulary", origin, o.unk_token);
    }
    std::vector<std::pair<std::string, std::int32_t>> starts, conts;
    const std::string& prefix = o.continuing_subword_prefix;
    vocab_.map().for_each([&](std::string_view token, std::int32_t id) {
      if (token.empty()) return;
      starts.emplace_back(std::string(token), id);
      if (token.size() > prefix.size() && token.substr(0, prefix.size()) == prefix) {
        conts.emplace_back(std::string(token.substr(prefix.size())), id);
      }
    });
    start_.build(std::move(starts));
    cont_.build(std::move(conts));
  }

  void tokenize(std::string_view word, std::vector<std::int32_t>& ids, std::size_t) const override {
    if (word.empty()) return;
    std::size_t chars = 0;
    for (unsigned char b : word) {
      if ((b & 0xC0) != 0x80 && ++chars > max_chars_) {
        ids.push_back(unk_id_);
        return;
      }
    }
    const std::size_t mark = ids.size();
    std::size_t start = 0;
    while (start < word.size()) {
      std::int32_t id = -1;
      std::size_t len = (start == 0 ? start_ : cont_).longest_prefix(word, start, id);
      if (len == 0) {
        ids.resize(mark);
        ids.push_back(unk_id_);
        return;
      }
      ids.push_back(id);
      start += len;
    }
  }

  std::int32_t token_to_id(std::string_view token) const override { return vocab_.find(token); }
  const std::string* id_to_token(std::int32_t id) const override { return vocab_.token(id); }
  std::size_t vocab_size() const override { return vocab_.size(); }

 private:
  Vocab vocab_;
  Trie start_, cont_;
  std::int32_t unk_id_;
  std::size_t max_chars_;
};

}  // namespace

std::unique_ptr<Model> make_wordpiece(std::vector<std::pair<std::string, std::int32_t>> vocab,
                                      const WordPieceOptions& options, const std::string& origin) {
  return std::make_unique<WordPiece>(std::move(vocab), options, origin);
}

}  // namespace mcinfer::tokenizer
