#pragma once
// The three subword models (WordPiece, BPE, Unigram) behind one interface.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mcinfer::tokenizer {

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of one pre-tokenized word. May stop early once ids.size() >= limit (the
  // caller truncates); results up to the limit are exactly what a full run gives.
  virtual void tokenize(std::string_view word, std::vector<std::int32_t>& ids,
                        std::size_t limit) const = 0;
  virtual std::int32_t token_to_id(std::string_view token) const = 0;  // -1 when absent
  virtual const std::string* id_to_token(std::int32_t id) const = 0;   // nullptr when absent
  // HF's get_vocab_size(): the number of distinct token strings.
  virtual std::size_t vocab_size() const = 0;
  // True when tokenize() takes the raw bytes of a ByteLevel pre-tokenizer's words (the
  // byte -> printable character mapping is folded into the vocabulary).
  virtual bool takes_raw_bytes() const { return false; }
};

struct WordPieceOptions {
  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  std::size_t max_input_chars_per_word = 100;
};
// vocab: token -> id (ids need not be dense). Throws Error naming `origin` on bad input.
std::unique_ptr<Model> make_wordpiece(std::vector<std::pair<std::string, std::int32_t>> vocab,
                                      const WordPieceOptions& options, const std::string& origin);

struct BpeOptions {
  std::string unk_token;  // empty: none
  bool has_unk = false;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
  bool byte_level_input = false;  // words come from a ByteLevel pre-tokenizer
  std::size_t cache_capacity = 16384;
  // Words with more symbols than this merge rank by rank (same result, linear time) when the
  // merge list allows it.
  std::size_t long_word = 1024;
};
std::unique_ptr<Model> make_bpe(std::vector<std::pair<std::string, std::int32_t>> vocab,
                                const std::vector<std::pair<std::string, std::string>>& merges,
                                const BpeOptions& options, const std::string& origin);

struct UnigramOptions {
  std::int64_t unk_id = -1;  // -1: none
  bool byte_fallback = false;
  // Words longer than this (bytes) are solved piecewise where no piece can span a boundary.
  std::size_t long_word = 4096;
  std::size_t min_chunk = 256;
};
std::unique_ptr<Model> make_unigram(std::vector<std::pair<std::string, double>> pieces,
                                    const UnigramOptions& options, const std::string& origin);

}  // namespace mcinfer::tokenizer
