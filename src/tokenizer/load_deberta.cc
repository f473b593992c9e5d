// DeBERTa-v2 / v3 / mDeBERTa-v3 (DebertaV2Tokenizer, model_type deberta-v2): a SentencePiece
// Unigram model in spm.model, or a tokenizer.json, built the two ways the reference stacks build
// it. transformers 4 converts spm.model with DebertaV2Converter: [Lowercase], Strip on both
// sides, Precompiled, Replace(" {2,}" -> " "); its slow class makes [UNK] a normalized added
// token. transformers 5 builds every DeBERTa tokenizer from the class (deberta_tf5_pipeline),
// taking from the files only the pieces, the added tokens and the charsmap: Precompiled first,
// then Strip on the right only, so a text ending in a character the charsmap turns into a space
// (U+200E, U+FEFF, ...) loses it there but keeps a final "▁" under transformers 4.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "tokenizer/loader.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/spm_model.h"

namespace mcinfer::tokenizer {
namespace {

constexpr char32_t kMetaspace = 0x2581;

// The named special tokens of DebertaV2Tokenizer with its defaults, in transformers' order.
ClassSpecials deberta_specials() {
  ClassSpecials s;
  s.names = {{"bos_token", "[CLS]"},  {"eos_token", "[SEP]"}, {"unk_token", "[UNK]"},
             {"sep_token", "[SEP]"},  {"pad_token", "[PAD]"}, {"cls_token", "[CLS]"},
             {"mask_token", "[MASK]"}};
  return s;
}

std::unique_ptr<Normalizer> replace(const char* regex, const char* content) {
  ReplacePattern p;
  if (!parse_replace_regex(regex, p)) fail("internal: unsupported pattern '{}'", regex);
  return make_replace(std::move(p), content);
}

std::unique_ptr<Normalizer> replace_literal(const char* from, const char* to) {
  ReplacePattern p;
  p.kind = ReplacePattern::Kind::kLiteral;
  p.literal = from;
  return make_replace(std::move(p), to);
}

std::unique_ptr<PreTokenizer> deberta_pre_tokenizer(bool split_by_punct, PrependScheme scheme,
                                                    const std::string& origin) {
  std::vector<std::unique_ptr<PreTokenizer>> steps;
  if (split_by_punct) steps.push_back(make_punctuation());
  steps.push_back(make_metaspace(kMetaspace, scheme, true));
  return make_pre_tokenizer_sequence(std::move(steps), origin);
}

std::int32_t checked_unk_id(std::int64_t id, std::size_t pieces, const std::string& where) {
  if (id < 0 || static_cast<std::size_t>(id) >= pieces) {
    fail("{}: unknown token id {} is not one of the {} pieces", where, id, pieces);
  }
  return static_cast<std::int32_t>(id);
}

// Control pieces (and, for transformers 4, user-defined ones) become added tokens that are
// matched on the raw text, as the converters register them.
std::vector<AddedToken> spm_added_tokens(const SpmModel& spm, bool user_defined) {
  std::vector<AddedToken> out;
  for (const SpmPiece& p : spm.pieces) {
    if (p.type == 3 || (user_defined && p.type == 4)) {
      AddedToken t;
      t.content = p.piece;
      t.normalized = false;
      t.special = p.type == 3;
      out.push_back(std::move(t));
    }
  }
  return out;
}

std::vector<std::pair<std::string, double>> spm_pieces(const SpmModel& spm) {
  std::vector<std::pair<std::string, double>> pieces;
  pieces.reserve(spm.pieces.size());
  for (const SpmPiece& p : spm.pieces) pieces.emplace_back(p.piece, static_cast<double>(p.score));
  return pieces;
}

// transformers 4.46's DebertaV2Converter and the fast tokenizer around it.
std::unique_ptr<Tokenizer> deberta_tf4_pipeline(const SpmModel& spm, const ConfigFiles& config,
                                                const std::string& origin) {
  PipelineParts parts;
  parts.kind = "unigram";
  std::vector<std::unique_ptr<Normalizer>> steps;
  if (config.flag("do_lower_case").value_or(false)) steps.push_back(make_lowercase(false));
  steps.push_back(make_strip(true, true));
  if (!spm.precompiled_charsmap.empty()) {
    steps.push_back(make_precompiled(
        PrecompiledCharsmap::parse(spm.precompiled_charsmap, origin + ": precompiled_charsmap")));
  }
  steps.push_back(replace(" {2,}", " "));
  parts.normalizer = make_sequence(std::move(steps));
  // The converter asks the slow class for add_prefix_space, which it does not keep: "always".
  parts.pre_tokenizer = deberta_pre_tokenizer(config.flag("split_by_punct").value_or(false),
                                              PrependScheme::kAlways, origin);
  UnigramOptions o;
  o.unk_id = checked_unk_id(spm.unk_id, spm.pieces.size(), origin + ": trainer_spec.unk_id");
  parts.model = make_unigram(spm_pieces(spm), o, origin);
  ClassSpecials specials = deberta_specials();
  specials.normalized_name = "unk_token";  // the slow class's AddedToken(unk, normalized=True)
  std::vector<AddedToken> added = spm_added_tokens(spm, true);
  std::vector<AddedToken> named =
      class_special_tokens(config, config.added_tokens_decoder(), specials);
  added.insert(added.end(), named.begin(), named.end());
  parts.added_tokens = std::move(added);
  // The converter's template names [CLS] and [SEP] literally, whatever cls_token says.
  parts.post = Template::bert(special_token_id(*parts.model, parts.added_tokens, "[CLS]", origin),
                              special_token_id(*parts.model, parts.added_tokens, "[SEP]", origin));
  parts.pad_token = config.special("pad_token", "[PAD]")->content;
  parts.model_max_length = config.model_max_length();
  parts.padding_side = config.padding_side();
  return std::make_unique<Pipeline>(std::move(parts));
}

}  // namespace

bool ConfigFiles::rebuilds_deberta_pipeline() const {
  if (compat != Compat::kTransformers5) return false;
  std::optional<std::string> cls;
  if (config.is_object()) cls = JsonObject(config, config_origin).opt_string("tokenizer_class");
  if (cls) return *cls == "DebertaV2Tokenizer" || *cls == "DebertaV2TokenizerFast";
  return model_type == "deberta-v2";
}

std::unique_ptr<Tokenizer> deberta_tf5_pipeline(DebertaSource source, const ConfigFiles& config,
                                                const std::string& origin) {
  PipelineParts parts;
  parts.kind = "unigram";
  std::vector<std::unique_ptr<Normalizer>> steps;
  if (config.flag("do_lower_case").value_or(false)) steps.push_back(make_lowercase(true));
  if (!source.charsmap.empty()) {
    steps.push_back(
        make_precompiled(PrecompiledCharsmap::parse(source.charsmap, source.charsmap_origin)));
    steps.push_back(make_strip(false, true));
    steps.push_back(replace(" {2,}", " "));
  } else {
    // The class's Replace(\s{2,}|[\n\r\t], " ") as two steps: once the runs are one space, a
    // tab or line break left is alone between non-spaces, which the alternation also replaces.
    steps.push_back(replace("\\s{2,}", " "));
    for (const char* c : {"\n", "\r", "\t"}) steps.push_back(replace_literal(c, " "));
    steps.push_back(make_unicode_form(UnicodeForm::kNFC));
    steps.push_back(make_strip(false, true));
  }
  parts.normalizer = make_sequence(std::move(steps));
  const bool prefix = config.flag("add_prefix_space").value_or(true);
  parts.pre_tokenizer =
      deberta_pre_tokenizer(config.flag("split_by_punct").value_or(false),
                            prefix ? PrependScheme::kAlways : PrependScheme::kFirst, origin);
  // The class takes the unknown token's id from where unk_token sits among the pieces scored 0.
  const std::string unk = config.special("unk_token", "[UNK]")->content;
  std::int64_t unk_id = -1;
  for (std::size_t i = 0; i < source.pieces.size() && unk_id < 0; ++i) {
    if (source.pieces[i].first == unk && source.pieces[i].second == 0.0)
      unk_id = static_cast<std::int64_t>(i);
  }
  UnigramOptions o;
  o.unk_id = unk_id >= 0 ? unk_id
                         : checked_unk_id(source.fallback_unk_id, source.pieces.size(),
                                          source.fallback_unk_field);
  parts.model = make_unigram(std::move(source.pieces), o, origin);
  parts.added_tokens = class_special_tokens(config, std::move(source.added), deberta_specials());
  const std::string cls = config.special("cls_token", "[CLS]")->content;
  const std::string sep = config.special("sep_token", "[SEP]")->content;
  parts.post = Template::bert(special_token_id(*parts.model, parts.added_tokens, cls, origin),
                              special_token_id(*parts.model, parts.added_tokens, sep, origin));
  parts.pad_token = config.special("pad_token", "[PAD]")->content;
  parts.model_max_length = config.model_max_length();
  parts.padding_side = config.padding_side();
  parts.normalized_token_names = true;
  return std::make_unique<Pipeline>(std::move(parts));
}

std::unique_ptr<Tokenizer> tokenizer_from_deberta_spm(std::string_view model_bytes,
                                                      const std::string& origin,
                                                      const ConfigFiles& config) {
  SpmModel spm = load_spm_model(model_bytes, origin);
  if (spm.model_type != 1) {
    fail("{}: trainer_spec.model_type {} is not Unigram (1), which DebertaV2Tokenizer needs",
         origin, spm.model_type);
  }
  if (config.compat == Compat::kFile) return deberta_tf4_pipeline(spm, config, origin);
  // transformers 5 registers the control pieces only: a user-defined piece stays a piece.
  DebertaSource source;
  source.pieces = spm_pieces(spm);
  source.fallback_unk_id = spm.unk_id;
  source.fallback_unk_field = origin + ": trainer_spec.unk_id";
  source.added = spm_added_tokens(spm, false);
  std::vector<AddedToken> decoder = config.added_tokens_decoder();
  source.added.insert(source.added.end(), decoder.begin(), decoder.end());
  source.charsmap = std::move(spm.precompiled_charsmap);
  source.charsmap_origin = origin + ": precompiled_charsmap";
  return deberta_tf5_pipeline(std::move(source), config, origin);
}

}  // namespace mcinfer::tokenizer
