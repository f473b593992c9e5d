#pragma once
// Tokenizer file parsers, each from bytes already in memory (so the fuzzers reach them
// without files). Tokenizer::load() reads the files and picks one.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
  // tokenizer_config.json's padding_side, else `file` (tokenizer.json's padding direction), else
  // the class's own (GemmaTokenizer's is left), else right. Throws Error naming the field when
  // padding_side is neither "left" nor "right".
  PaddingSide padding_side(std::optional<PaddingSide> file = std::nullopt) const;
  // tokenizer_config.json's added_tokens_decoder, by ascending id; empty when absent.
  std::vector<AddedToken> added_tokens_decoder() const;
  // With Compat::kTransformers5: the tokenizer class is XLMRobertaTokenizer (its tokenizer_class,
  // with or without "Fast", or model_type xlm-roberta), whose pipeline transformers 5 rebuilds.
  bool rebuilds_xlmr_pipeline() const;
  // The same for DebertaV2Tokenizer (model_type deberta-v2).
  bool rebuilds_deberta_pipeline() const;
};

// What a tokenizer class does with the special tokens it names (bos_token, ...): transformers
// registers tokenizer_config.json's added_tokens_decoder (or what the class reads instead), then
// each named token not among them, with flags of the class's choosing when the files give the
// token as a plain string.
struct ClassSpecials {
  // (attribute, content when the files name none), in transformers' attribute order.
  std::vector<std::pair<std::string, std::string>> names;
  bool mask_lstrip = false;     // a plain mask_token gets lstrip and normalized=false (RoBERTa)
  bool normalized = false;      // the normalized flag of a plain special token...
  std::string normalized_name;  // ...but this one is normalized (transformers 4's DeBERTa-v2 unk)
};
std::vector<AddedToken> class_special_tokens(const ConfigFiles& config,
                                             std::vector<AddedToken> base,
                                             const ClassSpecials& specials);
// A token's id in the model, else the one it gets as an added token; throws Error naming
// `origin` when neither.
std::int32_t special_token_id(const Model& model, const std::vector<AddedToken>& added,
                              const std::string& token, const std::string& origin);

// What transformers 5's DebertaV2Tokenizer builds its pipeline from, whichever files it came from.
struct DebertaSource {
  std::vector<std::pair<std::string, double>> pieces;
  // The unknown token's id when unk_token is not a piece scored 0 (the class's rule).
  std::int64_t fallback_unk_id = 1;
  std::string fallback_unk_field;  // where that id comes from, for errors
  std::vector<AddedToken> added;   // registered before the class's named special tokens
  std::string charsmap;            // SentencePiece precompiled_charsmap; empty: none
  std::string charsmap_origin;     // where the charsmap comes from, for errors
};
// DebertaV2Tokenizer's pipeline under transformers 5: [Lowercase] then Precompiled, Strip(right),
// Replace(" {2,}" -> " ") (without a charsmap: Replace(\s{2,}|[\n\r\t] -> " "), NFC,
// Strip(right)); [Punctuation] then Metaspace (prepend "always", or "first" without
// add_prefix_space); Unigram; [CLS] A [SEP] (B [SEP]) with cls_token and sep_token.
std::unique_ptr<Tokenizer> deberta_tf5_pipeline(DebertaSource source, const ConfigFiles& config,
                                                const std::string& origin);

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
// DeBERTa-v2/v3's spm.model (DebertaV2Tokenizer): the pieces keep their ids, [MASK] comes after
// them. Compat::kFile builds transformers 4's DebertaV2Converter pipeline (Strip both sides
// before Precompiled, [UNK] normalized, the literal [CLS] and [SEP] around the text),
// Compat::kTransformers5 the class's (deberta_tf5_pipeline).
std::unique_ptr<Tokenizer> tokenizer_from_deberta_spm(std::string_view model,
                                                      const std::string& origin,
                                                      const ConfigFiles& config);

// Standard base64 (padding optional); throws Error naming origin and field when malformed.
std::string decode_base64(std::string_view text, const std::string& origin,
                          const std::string& field);

}  // namespace mcinfer::tokenizer
