#pragma once
// The Tokenizer behind every file format: added tokens -> normalizer -> pre-tokenizer ->
// model -> truncation -> special tokens, in HF's order and with HF's rules.

#include <memory>
#include <optional>
#include <string>

#include "tokenizer/added_vocab.h"
#include "tokenizer/model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace mcinfer::tokenizer {

struct PipelineParts {
  std::string kind;                             // "wordpiece", "bpe", "unigram"
  std::unique_ptr<Normalizer> normalizer;       // may be null
  std::unique_ptr<PreTokenizer> pre_tokenizer;  // may be null
  std::unique_ptr<Model> model;
  std::vector<AddedToken> added_tokens;  // in file order
  Template post = Template::none();
  std::optional<std::string> pad_token;  // resolved to an id after added tokens exist
  std::optional<std::size_t> model_max_length;
  PaddingSide padding_side = PaddingSide::kRight;
  // tokens() names a normalized added token by its normalized content, as the current stack's
  // tokenizers does (Compat::kTransformers5); older versions give the content as added.
  bool normalized_token_names = false;
};

class Pipeline final : public Tokenizer {
 public:
  explicit Pipeline(PipelineParts parts);

  Encoding encode(std::string_view text, std::optional<std::string_view> pair,
                  std::size_t max_length) const override;
  std::vector<Encoding> encode_windows(std::string_view text, std::optional<std::string_view> pair,
                                       std::size_t max_length, std::size_t stride) const override;
  std::size_t special_tokens(bool pair) const override { return post_.added(pair); }
  std::vector<std::string> tokens(const Encoding& encoding) const override;
  std::int32_t pad_id() const override { return pad_id_; }
  PaddingSide padding_side() const override { return padding_side_; }
  std::optional<std::size_t> model_max_length() const override { return model_max_length_; }
  std::string_view kind() const override { return kind_; }

  std::int32_t token_to_id(std::string_view token) const;

  // Content tokens of one well-formed UTF-8 text, stopping once `limit` ids are out (the
  // result is then cut to `limit`).
  void encode_sequence(std::string_view text, std::size_t limit,
                       std::vector<std::int32_t>& ids) const;

 private:
  void tokenize_words(std::string_view piece, bool at_origin, std::size_t limit,
                      std::vector<std::int32_t>& ids) const;

  std::string kind_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<Model> model_;
  AddedVocabulary added_;
  Template post_;
  std::int32_t pad_id_ = 0;
  PaddingSide padding_side_ = PaddingSide::kRight;
  std::optional<std::size_t> model_max_length_;
  bool map_bytes_ = false;  // ByteLevel words must be mapped to GPT-2's alphabet for the model
  bool normalized_token_names_ = false;
};

}  // namespace mcinfer::tokenizer
