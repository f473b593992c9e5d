#pragma once
// Tokenizer file parsers, each from bytes already in memory (so the fuzzers reach them
// without files). Tokenizer::load() reads the files and picks one.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/json.h"
#include "tokenizer/added_vocab.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/tokenizer.h"

namespace mcinfer::tokenizer {

// tokenizer_config.json and special_tokens_map.json of a model directory (null when absent).
struct ConfigFiles {
  Json config;
  std::string config_origin = "tokenizer_config.json";
  Json special_tokens;
  std::string special_origin = "special_tokens_map.json";
  // config.json's model_type, which AutoTokenizer maps to a class when tokenizer_config.json
  // names none.
  std::optional<std::string> model_type;
  Compat compat = Compat::kFile;

  static ConfigFiles read(const std::filesystem::path& dir);
  static ConfigFiles parse(std::string_view config_json, std::string_view special_json);

  // A special token (e.g. "mask_token") from tokenizer_config.json, else special_tokens_map.json:
  // a string or an AddedToken object. `fallback` when neither names it.
  std::optional<AddedToken> special(const std::string& name,
                                    std::optional<std::string> fallback) const;
  // True when that token is given as a plain string (or not at all): the tokenizer class then
  // decides its flags.
  bool special_is_plain(const std::string& name) const;
  std::optional<bool> flag(const std::string& name) const;  // a boolean in tokenizer_config.json
  std::optional<std::size_t> model_max_length() const;
  // tokenizer_config.json's added_tokens_decoder, by ascending id; empty when absent.
  std::vector<AddedToken> added_tokens_decoder() const;
  // With Compat::kTransformers5: the tokenizer class is XLMRobertaTokenizer (its tokenizer_class,
  // with or without "Fast", or model_type xlm-roberta), whose pipeline transformers 5 rebuilds.
  bool rebuilds_xlmr_pipeline() const;
};

// transformers 5's XLMRobertaTokenizer pipeline (see Compat) over the vocabulary in `parts`:
// `precompiled` (the SentencePiece normalizer, may be null) alone as the normalizer, a whitespace
// split then Metaspace (prepend per add_prefix_space, default true), <s> A </s> [</s> B </s>].
void rebuild_xlmr_pipeline(PipelineParts& parts, std::unique_ptr<Normalizer> precompiled,
                           const ConfigFiles& config, const std::string& origin);

std::unique_ptr<Tokenizer> tokenizer_from_json(std::string_view text, const std::string& origin,
                                               const ConfigFiles& config);
std::unique_ptr<Tokenizer> tokenizer_from_vocab_txt(std::string_view vocab,
                                                    const std::string& origin,
                                                    const ConfigFiles& config);
std::unique_ptr<Tokenizer> tokenizer_from_bpe_files(std::string_view vocab_json,
                                                    const std::string& vocab_origin,
                                                    std::string_view merges,
                                                    const std::string& merges_origin,
                                                    const ConfigFiles& config);
std::unique_ptr<Tokenizer> tokenizer_from_spm(std::string_view model, const std::string& origin,
                                              const ConfigFiles& config);

// Standard base64 (padding optional); throws Error naming origin and field when malformed.
std::string decode_base64(std::string_view text, const std::string& origin,
                          const std::string& field);

}  // namespace mcinfer::tokenizer
