// The per-kind files transformers converts to a fast tokenizer when no tokenizer.json exists,
// rebuilt the way its converters do (BertConverter, RobertaConverter, XLMRobertaConverter):
// vocab.txt, vocab.json + merges.txt, sentencepiece.bpe.model; plus tokenizer_config.json.

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "core/utf8.h"
#include "tokenizer/json_node.h"
#include "tokenizer/loader.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/spm_model.h"
#include "tokenizer/unicode.h"

namespace mcinfer::tokenizer {
namespace {

AddedToken added_from(const JsonNode& n) {
  AddedToken t;
  if (n.json().is_string()) {
    t.content = n.str();
    return t;
  }
  t.content = n.at("content").str();
  t.single_word = n.bool_or("single_word", false);
  t.lstrip = n.bool_or("lstrip", false);
  t.rstrip = n.bool_or("rstrip", false);
  t.special = n.bool_or("special", false);
  t.normalized = n.bool_or("normalized", !t.special);
  return t;
}

// Python's universal newlines: "\r\n" and "\r" read as "\n".
std::string universal_newlines(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

// The special tokens transformers registers for a slow tokenizer: tokenizer_config.json's
// added_tokens_decoder when saved by a recent version, else the named special tokens with the
// flags their tokenizer class gives them.
std::vector<AddedToken> special_tokens(
    const ConfigFiles& config, const std::vector<std::pair<std::string, std::string>>& names,
    bool mask_lstrip, bool normalized_default) {
  ClassSpecials specials;
  specials.names = names;
  specials.mask_lstrip = mask_lstrip;
  specials.normalized = normalized_default;
  return class_special_tokens(config, config.added_tokens_decoder(), specials);
}

}  // namespace

std::vector<AddedToken> class_special_tokens(const ConfigFiles& config,
                                             std::vector<AddedToken> base,
                                             const ClassSpecials& specials) {
  std::vector<AddedToken> out = std::move(base);
  auto present = [&](const std::string& content) {
    for (const AddedToken& t : out) {
      if (t.content == content) return true;
    }
    return false;
  };
  for (const auto& [name, fallback] : specials.names) {
    auto t = config.special(name, fallback);
    if (!t || t->content.empty() || present(t->content)) continue;
    AddedToken token = *t;
    if (config.special_is_plain(name)) {
      token.normalized = specials.normalized || name == specials.normalized_name;
      if (name == "mask_token" && specials.mask_lstrip) {
        token.lstrip = true;
        token.normalized = false;
      }
    }
    token.special = true;
    out.push_back(std::move(token));
  }
  return out;
}

std::int32_t special_token_id(const Model& model, const std::vector<AddedToken>& added,
                              const std::string& token, const std::string& origin) {
  std::int32_t id = model.token_to_id(token);
  if (id >= 0) return id;
  // Not in the vocabulary: it gets the id HF assigns when adding it.
  AddedVocabulary probe;
  probe.add_tokens(added, model, nullptr);
  id = probe.find(token);
  if (id < 0) fail("{}: special token '{}' has no id", origin, token);
  return id;
}

ConfigFiles ConfigFiles::read(const std::filesystem::path& dir) {
  ConfigFiles c;
  auto cfg = dir / "tokenizer_config.json";
  auto special = dir / "special_tokens_map.json";
  c.config_origin = cfg.string();
  c.special_origin = special.string();
  if (std::filesystem::exists(cfg)) c.config = read_json_file(cfg, 64u << 20);
  if (std::filesystem::exists(special)) c.special_tokens = read_json_file(special, 64u << 20);
  if (!c.config.is_null() && !c.config.is_object()) {
    fail("{}: expected a JSON object, got {}", c.config_origin, json_type_name(c.config));
  }
  if (!c.special_tokens.is_null() && !c.special_tokens.is_object()) {
    fail("{}: expected a JSON object, got {}", c.special_origin, json_type_name(c.special_tokens));
  }
  const auto model_config = dir / "config.json";
  if (std::filesystem::exists(model_config)) {
    Json json = read_json_file(model_config, 16u << 20);
    if (json.is_object())
      c.model_type = JsonObject(json, model_config.string()).opt_string("model_type");
  }
  return c;
}

bool ConfigFiles::rebuilds_xlmr_pipeline() const {
  if (compat != Compat::kTransformers5) return false;
  std::optional<std::string> cls;
  if (config.is_object()) cls = JsonObject(config, config_origin).opt_string("tokenizer_class");
  if (cls) return *cls == "XLMRobertaTokenizer" || *cls == "XLMRobertaTokenizerFast";
  return model_type == "xlm-roberta";
}

void rebuild_xlmr_pipeline(PipelineParts& parts, std::unique_ptr<Normalizer> precompiled,
                           const ConfigFiles& config, const std::string& origin) {
  parts.normalizer = std::move(precompiled);
  const bool prefix = config.flag("add_prefix_space").value_or(true);
  std::vector<std::unique_ptr<PreTokenizer>> steps;
  steps.push_back(make_whitespace_split());
  steps.push_back(
      make_metaspace(0x2581, prefix ? PrependScheme::kAlways : PrependScheme::kNever, true));
  parts.pre_tokenizer = make_pre_tokenizer_sequence(std::move(steps), origin);
  const std::string bos = config.special("bos_token", "<s>")->content;
  const std::string eos = config.special("eos_token", "</s>")->content;
  parts.post = Template::roberta(special_token_id(*parts.model, parts.added_tokens, bos, origin),
                                 special_token_id(*parts.model, parts.added_tokens, eos, origin));
}

ConfigFiles ConfigFiles::parse(std::string_view config_json, std::string_view special_json) {
  ConfigFiles c;
  if (!config_json.empty()) c.config = parse_json(config_json, c.config_origin);
  if (!special_json.empty()) c.special_tokens = parse_json(special_json, c.special_origin);
  if (!c.config.is_null() && !c.config.is_object()) c.config = Json();
  if (!c.special_tokens.is_null() && !c.special_tokens.is_object()) c.special_tokens = Json();
  return c;
}

std::optional<AddedToken> ConfigFiles::special(const std::string& name,
                                               std::optional<std::string> fallback) const {
  if (config.is_object()) {
    JsonNode root(config, config_origin, "");
    if (auto v = root.get(name)) return added_from(*v);
  }
  if (special_tokens.is_object()) {
    JsonNode root(special_tokens, special_origin, "");
    if (auto v = root.get(name)) return added_from(*v);
  }
  if (!fallback) return std::nullopt;
  AddedToken t;
  t.content = *fallback;
  return t;
}

bool ConfigFiles::special_is_plain(const std::string& name) const {
  for (const Json* j : {&config, &special_tokens}) {
    if (!j->is_object()) continue;
    auto it = j->find(name);
    if (it != j->end() && !it->is_null()) return it->is_string();
  }
  return true;
}

std::optional<bool> ConfigFiles::flag(const std::string& name) const {
  if (!config.is_object()) return std::nullopt;
  JsonNode root(config, config_origin, "");
  auto v = root.get(name);
  if (!v) return std::nullopt;
  return v->boolean();
}

PaddingSide ConfigFiles::padding_side(std::optional<PaddingSide> file) const {
  std::optional<std::string> cls;
  if (config.is_object()) {
    JsonNode root(config, config_origin, "");
    if (auto side = root.get("padding_side")) {
      if (auto parsed = kPaddingSideNames.parse(side->str())) return *parsed;
      side->fail(fmt::format("'{}' is neither \"left\" nor \"right\"", side->str()));
    }
    cls = JsonObject(config, config_origin).opt_string("tokenizer_class");
  }
  if (file) return *file;
  // GemmaTokenizer's class attribute; AutoTokenizer maps every gemma model type to it.
  const bool gemma = cls ? (*cls == "GemmaTokenizer" || *cls == "GemmaTokenizerFast")
                         : (model_type && model_type->starts_with("gemma"));
  return gemma ? PaddingSide::kLeft : PaddingSide::kRight;
}

std::optional<std::size_t> ConfigFiles::model_max_length() const {
  if (!config.is_object()) return std::nullopt;
  auto it = config.find("model_max_length");
  if (it == config.end() || !it->is_number()) return std::nullopt;
  double v = it->get<double>();
  // transformers writes int(1e30) for "no limit".
  if (!(v >= 1.0) || v > 1e9 || std::floor(v) != v) return std::nullopt;
  return static_cast<std::size_t>(v);
}

std::vector<AddedToken> ConfigFiles::added_tokens_decoder() const {
  std::vector<AddedToken> out;
  if (!config.is_object()) return out;
  JsonNode root(config, config_origin, "");
  auto decoder = root.get("added_tokens_decoder");
  if (!decoder) return out;
  decoder->expect_object();
  std::vector<std::pair<std::int64_t, AddedToken>> by_id;
  for (auto it = decoder->json().begin(); it != decoder->json().end(); ++it) {
    JsonNode entry(it.value(), config_origin, decoder->child_path(it.key()));
    std::int64_t id = 0;
    const std::string& key = it.key();
    if (key.empty() || key.size() > 10) entry.fail("expected a token id as key");
    for (char c : key) {
      if (c < '0' || c > '9') entry.fail("expected a token id as key");
      id = id * 10 + (c - '0');
    }
    by_id.emplace_back(id, added_from(entry));
  }
  std::stable_sort(by_id.begin(), by_id.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [id, t] : by_id) out.push_back(std::move(t));
  return out;
}

std::unique_ptr<Tokenizer> tokenizer_from_vocab_txt(std::string_view vocab_text,
                                                    const std::string& origin,
                                                    const ConfigFiles& config) {
  if (!utf8::is_valid(vocab_text)) fail("{}: not valid UTF-8", origin);
  // transformers' load_vocab: one token per line (newline stripped), id = line number, a
  // repeated token keeps its last line.
  std::string text = universal_newlines(vocab_text);
  std::vector<std::pair<std::string, std::int32_t>> vocab;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (vocab.size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
      fail("{}: too many lines", origin);
    }
    vocab.emplace_back(text.substr(start, end - start), static_cast<std::int32_t>(vocab.size()));
    start = end + 1;
  }
  if (vocab.empty()) fail("{}: empty vocabulary", origin);

  PipelineParts parts;
  parts.kind = "wordpiece";
  bool basic = config.flag("do_basic_tokenize").value_or(true);
  BertNormalizerOptions n;
  n.clean_text = true;
  n.handle_chinese_chars = basic && config.flag("tokenize_chinese_chars").value_or(true);
  n.lowercase = basic && config.flag("do_lower_case").value_or(true);
  std::optional<bool> strip;
  if (basic && config.config.is_object()) {
    auto it = config.config.find("strip_accents");
    if (it != config.config.end() && !it->is_null()) {
      if (!it->is_boolean()) {
        fail("{}: field 'strip_accents': expected true, false or null", config.config_origin);
      }
      strip = it->get<bool>();
    }
  }
  n.strip_accents = basic ? strip.value_or(n.lowercase) : false;
  n.current_case_data = config.compat == Compat::kTransformers5;
  parts.normalizer = make_bert_normalizer(n);
  parts.pre_tokenizer = make_bert_pre_tokenizer();
  WordPieceOptions o;
  o.unk_token = config.special("unk_token", "[UNK]")->content;
  parts.model = make_wordpiece(std::move(vocab), o, origin);
  parts.added_tokens = special_tokens(config,
                                      {{"unk_token", "[UNK]"},
                                       {"sep_token", "[SEP]"},
                                       {"pad_token", "[PAD]"},
                                       {"cls_token", "[CLS]"},
                                       {"mask_token", "[MASK]"}},
                                      false, false);
  std::string cls = config.special("cls_token", "[CLS]")->content;
  std::string sep = config.special("sep_token", "[SEP]")->content;
  parts.post = Template::bert(special_token_id(*parts.model, parts.added_tokens, cls, origin),
                              special_token_id(*parts.model, parts.added_tokens, sep, origin));
  parts.pad_token = config.special("pad_token", "[PAD]")->content;
  parts.model_max_length = config.model_max_length();
  parts.padding_side = config.padding_side();
  parts.normalized_token_names = config.compat == Compat::kTransformers5;
  return std::make_unique<Pipeline>(std::move(parts));
}

std::unique_ptr<Tokenizer> tokenizer_from_bpe_files(std::string_view vocab_json,
                                                    const std::string& vocab_origin,
                                                    std::string_view merges_text,
                                                    const std::string& merges_origin,
                                                    const ConfigFiles& config) {
  Json json = parse_json(vocab_json, vocab_origin);
  JsonNode root(json, vocab_origin, "");
  root.expect_object();
  std::vector<std::pair<std::string, std::int32_t>> vocab;
  vocab.reserve(json.size());
  for (auto it = json.begin(); it != json.end(); ++it) {
    JsonNode id(it.value(), vocab_origin, it.key());
    std::int64_t v = id.integer();
    if (v < 0 || v > std::numeric_limits<std::int32_t>::max()) id.fail("id out of range");
    vocab.emplace_back(it.key(), static_cast<std::int32_t>(v));
  }
  if (!utf8::is_valid(merges_text)) fail("{}: not valid UTF-8", merges_origin);
  // RobertaTokenizer: read().split("\n")[1:-1] (the first line is taken to be the
  // "#version" header, the last to be empty), each line split on whitespace; a repeated merge
  // keeps its first place.
  std::string text = universal_newlines(merges_text);
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  for (;;) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      lines.emplace_back(std::string_view(text).substr(start));
      break;
    }
    lines.emplace_back(std::string_view(text).substr(start, end - start));
    start = end + 1;
  }
  std::vector<std::pair<std::string, std::string>> merges;
  std::unordered_set<std::string> seen;
  for (std::size_t k = 1; k + 1 < lines.size(); ++k) {
    std::vector<std::string> parts;
    std::string_view line = lines[k];
    std::size_t pos = 0;
    while (pos < line.size()) {
      std::size_t q = pos;
      char32_t c = utf8::decode_valid(line, q);
      // Python's str.split(): runs of Unicode whitespace (White_Space plus \x1c-\x1f).
      bool space = unicode::is_white_space(c) || (c >= 0x1C && c <= 0x1F);
      if (space) {
        pos = q;
        continue;
      }
      std::size_t word = pos;
      while (pos < line.size()) {
        std::size_t r = pos;
        char32_t d = utf8::decode_valid(line, r);
        if (unicode::is_white_space(d) || (d >= 0x1C && d <= 0x1F)) break;
        pos = r;
      }
      parts.emplace_back(line.substr(word, pos - word));
    }
    if (parts.size() != 2) {
      fail("{}: line {}: expected two tokens separated by a space", merges_origin, k + 1);
    }
    if (!seen.insert(parts[0] + ' ' + parts[1]).second) continue;
    merges.emplace_back(std::move(parts[0]), std::move(parts[1]));
  }

  PipelineParts parts;
  parts.kind = "bpe";
  bool add_prefix_space = config.flag("add_prefix_space").value_or(false);
  parts.pre_tokenizer = make_byte_level(add_prefix_space, true);
  BpeOptions o;
  o.byte_level_input = true;
  parts.model = make_bpe(std::move(vocab), merges, o, vocab_origin + " + " + merges_origin);
  parts.added_tokens = special_tokens(config,
                                      {{"bos_token", "<s>"},
                                       {"eos_token", "</s>"},
                                       {"unk_token", "<unk>"},
                                       {"sep_token", "</s>"},
                                       {"pad_token", "<pad>"},
                                       {"cls_token", "<s>"},
                                       {"mask_token", "<mask>"}},
                                      true, true);
  std::string cls = config.special("cls_token", "<s>")->content;
  std::string sep = config.special("sep_token", "</s>")->content;
  parts.post =
      Template::roberta(special_token_id(*parts.model, parts.added_tokens, cls, vocab_origin),
                        special_token_id(*parts.model, parts.added_tokens, sep, vocab_origin));
  parts.pad_token = config.special("pad_token", "<pad>")->content;
  parts.model_max_length = config.model_max_length();
  parts.padding_side = config.padding_side();
  parts.normalized_token_names = config.compat == Compat::kTransformers5;
  return std::make_unique<Pipeline>(std::move(parts));
}

std::unique_ptr<Tokenizer> tokenizer_from_spm(std::string_view model_bytes,
                                              const std::string& origin,
                                              const ConfigFiles& config) {
  SpmModel spm = load_spm_model(model_bytes, origin);
  if (spm.model_type != 1) {
    fail("{}: trainer_spec.model_type {} is not Unigram (1), which XLM-R's tokenizer needs", origin,
         spm.model_type);
  }
  // XLMRobertaConverter: fairseq ids -- <s> 0, <pad> 1, </s> 2, <unk> 3, piece i (i >= 3) at
  // i + 1, <mask> last.
  std::vector<std::pair<std::string, double>> pieces = {
      {"<s>", 0.0}, {"<pad>", 0.0}, {"</s>", 0.0}, {"<unk>", 0.0}};
  for (std::size_t i = 3; i < spm.pieces.size(); ++i) {
    pieces.emplace_back(spm.pieces[i].piece, static_cast<double>(spm.pieces[i].score));
  }
  pieces.emplace_back("<mask>", 0.0);

  PipelineParts parts;
  parts.kind = "unigram";
  std::vector<std::unique_ptr<Normalizer>> steps;
  if (!spm.precompiled_charsmap.empty()) {
    steps.push_back(make_precompiled(PrecompiledCharsmap::parse(spm.precompiled_charsmap, origin)));
  }
  steps.push_back(make_strip(false, true));
  ReplacePattern spaces;
  parse_replace_regex(" {2,}", spaces);
  steps.push_back(make_replace(std::move(spaces), "\xE2\x96\x81"));
  parts.normalizer = make_sequence(std::move(steps));
  parts.pre_tokenizer = make_metaspace(0x2581, PrependScheme::kAlways, true);
  UnigramOptions o;
  o.unk_id = 3;
  parts.model = make_unigram(std::move(pieces), o, origin);
  // Control and user-defined pieces become added tokens (normalized=false), then the special
  // tokens transformers adds.
  for (const SpmPiece& p : spm.pieces) {
    if (p.type == 3 || p.type == 4) {
      AddedToken t;
      t.content = p.piece;
      t.normalized = false;
      t.special = p.type == 3;
      parts.added_tokens.push_back(std::move(t));
    }
  }
  std::vector<AddedToken> specials = special_tokens(config,
                                                    {{"bos_token", "<s>"},
                                                     {"eos_token", "</s>"},
                                                     {"unk_token", "<unk>"},
                                                     {"sep_token", "</s>"},
                                                     {"pad_token", "<pad>"},
                                                     {"cls_token", "<s>"},
                                                     {"mask_token", "<mask>"}},
                                                    true, false);
  parts.added_tokens.insert(parts.added_tokens.end(), specials.begin(), specials.end());
  std::int32_t bos = special_token_id(*parts.model, parts.added_tokens, "<s>", origin);
  std::int32_t eos = special_token_id(*parts.model, parts.added_tokens, "</s>", origin);
  parts.post = Template::roberta(bos, eos);
  if (config.rebuilds_xlmr_pipeline()) {
    rebuild_xlmr_pipeline(
        parts,
        spm.precompiled_charsmap.empty()
            ? nullptr
            : make_precompiled(PrecompiledCharsmap::parse(spm.precompiled_charsmap, origin)),
        config, origin);
  }
  parts.pad_token = config.special("pad_token", "<pad>")->content;
  parts.model_max_length = config.model_max_length();
  parts.padding_side = config.padding_side();
  parts.normalized_token_names = config.compat == Compat::kTransformers5;
  return std::make_unique<Pipeline>(std::move(parts));
}

}  // namespace mcinfer::tokenizer
