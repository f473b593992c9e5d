#include "model/config.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/error.h"
#include "core/json.h"
#include "model/config_fields.h"

namespace mcinfer::model {
namespace config_fields {

std::int64_t bounded(const JsonObject& obj, std::string_view key, std::int64_t lo, std::int64_t hi,
                     std::optional<std::int64_t> fallback) {
  std::optional<std::int64_t> v = obj.opt_int(key);
  if (!v) {
    if (fallback) return *fallback;
    obj.fail_field(key, "missing");
  }
  if (*v < lo || *v > hi) obj.fail_field(key, fmt::format("{} is outside [{}, {}]", *v, lo, hi));
  return *v;
}

Activation parse_activation(const JsonObject& obj, std::string_view key, const std::string& name) {
  if (name == "gelu") return Activation::kGeluErf;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast")
    return Activation::kGeluTanh;
  if (name == "relu") return Activation::kRelu;
  if (name == "tanh") return Activation::kTanh;
  if (name == "silu" || name == "swish") return Activation::kSilu;
  obj.fail_field(key, fmt::format("activation '{}' is not supported (gelu, gelu_new, "
                                  "gelu_pytorch_tanh, relu, tanh, silu)",
                                  name));
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace config_fields

using namespace config_fields;

namespace {

// What sets each model_type apart before the encoder description takes over: the family, the
// prefix of the base model's tensors inside a task checkpoint, the name for messages, the stem of
// its transformers class names.
struct ModelType {
  std::string_view model_type;
  Family family;
  std::string_view prefix;
  std::string_view display;
  std::string_view class_stem;
};
constexpr ModelType kModelTypes[] = {
    {"bert", Family::kBert, "bert", "BERT", "Bert"},
    {"roberta", Family::kRoberta, "roberta", "RoBERTa", "Roberta"},
    {"xlm-roberta", Family::kRoberta, "roberta", "XLM-RoBERTa", "XLMRoberta"},
    {"camembert", Family::kRoberta, "roberta", "CamemBERT", "Camembert"},
    {"distilbert", Family::kDistilBert, "distilbert", "DistilBERT", "DistilBert"},
    {"mpnet", Family::kMpnet, "mpnet", "MPNet", "MPNet"},
    {"electra", Family::kElectra, "electra", "ELECTRA", "Electra"},
    {"deberta-v2", Family::kDebertaV2, "deberta", "DeBERTa-v2", "DebertaV2"},
    {"modernbert", Family::kModernBert, "model", "ModernBERT", "ModernBert"},
    {"qwen3", Family::kQwen3, "model", "Qwen3", "Qwen3"},
    {"gemma3_text", Family::kGemma3, "model", "Gemma 3", "Gemma3Text"},
};

const ModelType* find_model_type(std::string_view model_type) {
  for (const ModelType& t : kModelTypes)
    if (t.model_type == model_type) return &t;
  return nullptr;
}

const ModelType& model_type_of(const ModelConfig& c) {
  if (const ModelType* t = find_model_type(c.model_type)) return *t;
  fail("internal: model_type '{}' has no entry", c.model_type);
}

// Position ids as the family's transformers code numbers them: RoBERTa's from its pad_token_id,
// MPNet's from a padding_idx fixed at 1 in its code; 0, 1, 2, ... otherwise.
void set_position_numbering(ModelConfig& c) {
  if (c.family == Family::kRoberta) c.position_padding_idx = c.pad_token_id;
  if (c.family == Family::kMpnet) c.position_padding_idx = 1;
}

}  // namespace

namespace {

// The published shapes of Qwen3-Embedding-0.6B (28 layers, GQA 16 / 8 heads of 128, SwiGLU 3072,
// causal, rotary base 10^6) and EmbeddingGemma-300m (24 layers, GQA 3 / 1 heads of 256, GELU-tanh
// gates of 1152, bidirectional, every sixth layer global and the others a window of ±256).
void decoder_shape(std::string_view name, ModelConfig& c) {
  DecoderConfig d;
  c.type_vocab_size = 0;
  c.layer_norm_eps = 1e-6f;
  if (name == "qwen3-embedding-0.6b") {
    c.model_type = "qwen3";
    c.vocab_size = 151669;
    c.hidden_size = 1024;
    c.num_layers = 28;
    c.num_heads = 16;
    c.intermediate_size = 3072;
    c.max_position_embeddings = 32768;
    c.hidden_act_name = "silu";
    c.hidden_act = Activation::kSilu;
    d.kv_heads = 8;
    d.head_dim = 128;
    d.rope_theta = d.sliding_rope_theta = 1'000'000.0;
    d.sliding.assign(static_cast<std::size_t>(c.num_layers), false);
  } else {
    c.model_type = "gemma3_text";
    c.vocab_size = 262144;
    c.hidden_size = 768;
    c.num_layers = 24;
    c.num_heads = 3;
    c.intermediate_size = 1152;
    c.max_position_embeddings = 2048;
    c.hidden_act_name = "gelu_pytorch_tanh";
    c.hidden_act = Activation::kGeluTanh;
    d.kv_heads = 1;
    d.head_dim = 256;
    d.causal = false;
    d.sliding_window = 512;
    d.rope_theta = 1'000'000.0;
    d.sliding_rope_theta = 10'000.0;
    d.score_scale = 1.0f / 16.0f;  // query_pre_attn_scalar 256
    for (std::int64_t i = 0; i < c.num_layers; ++i) d.sliding.push_back((i + 1) % 6 != 0);
  }
  c.decoder = d;
}

}  // namespace

std::vector<std::string> ModelConfig::shape_names() {
  return {"bert-base",          "bert-large",      "xlm-r-base",
          "distilbert-base",    "mpnet-base",      "minilm-l6",
          "deberta-v3-base",    "modernbert-base", "qwen3-embedding-0.6b",
          "embeddinggemma-300m"};
}

std::string ModelConfig::supported_model_types() {
  std::string out;
  for (const ModelType& t : kModelTypes)
    out += (out.empty() ? "" : ", ") + std::string(t.model_type);
  return out;
}

std::string ModelConfig::base_prefix() const { return std::string(model_type_of(*this).prefix); }

std::string ModelConfig::family_name() const { return std::string(model_type_of(*this).display); }

std::int64_t ModelConfig::max_sequence_length() const {
  // RoBERTa numbers real tokens from padding_idx + 1, so padding_idx + 1 rows are never used.
  if (position_padding_idx) return max_position_embeddings - *position_padding_idx - 1;
  return max_position_embeddings;
}

ModelConfig ModelConfig::shape(std::string_view name, std::int64_t num_labels) {
  ModelConfig c;
  c.head = num_labels > 0 ? Head::kSequenceClassification : Head::kNone;
  c.num_labels = num_labels;
  for (std::int64_t i = 0; i < num_labels; ++i) c.labels.push_back(fmt::format("LABEL_{}", i));
  c.problem_type = num_labels == 1 ? ProblemType::kRegression : ProblemType::kSingleLabel;
  c.hidden_act_name = "gelu";
  c.hidden_act = Activation::kGeluErf;
  c.hidden_size = 768;
  c.num_layers = 12;
  c.num_heads = 12;
  c.intermediate_size = 3072;
  c.max_position_embeddings = 512;
  c.type_vocab_size = 2;
  c.vocab_size = 30522;
  if (name == "bert-base") {
    c.model_type = "bert";
  } else if (name == "bert-large") {
    c.model_type = "bert";
    c.hidden_size = 1024;
    c.num_layers = 24;
    c.num_heads = 16;
    c.intermediate_size = 4096;
  } else if (name == "xlm-r-base" || name == "mpnet-base") {
    // RoBERTa-style: positions from padding_idx 1 + 1, eps 1e-5.
    const bool xlmr = name == "xlm-r-base";
    c.model_type = xlmr ? "xlm-roberta" : "mpnet";
    c.vocab_size = xlmr ? 250002 : 30527;
    c.max_position_embeddings = 514;
    c.type_vocab_size = xlmr ? 1 : 0;
    c.pad_token_id = 1;
    c.layer_norm_eps = 1e-5f;
    if (!xlmr) c.relative_attention_buckets = 32;
  } else if (name == "deberta-v3-base") {
    // microsoft/deberta-v3-base's config.json: relative positions only, 256 log buckets up to
    // 512, shared keys, c2p + p2c, the table LayerNormed.
    c.model_type = "deberta-v2";
    c.vocab_size = 128100;
    c.type_vocab_size = 0;
    c.layer_norm_eps = 1e-7f;
    c.position_biased_input = false;
    DisentangledConfig d;
    d.relative = d.c2p = d.p2c = d.share_att_key = d.norm_rel_ebd = true;
    d.position_buckets = 256;
    d.max_relative_positions = 512;
    c.disentangled = d;
  } else if (name == "modernbert-base") {
    // answerdotai/ModernBERT-base's config.json: 22 layers, GeGLU FFN of 1152, global attention
    // every third layer and a window of 128 elsewhere, no biases, 8,192 positions.
    c.model_type = "modernbert";
    c.vocab_size = 50368;
    c.num_layers = 22;
    c.intermediate_size = 1152;
    c.max_position_embeddings = 8192;
    c.type_vocab_size = 0;
    c.pad_token_id = 50283;
    c.layer_norm_eps = 1e-5f;
    ModernBertConfig m;
    for (std::int64_t i = 0; i < c.num_layers; ++i) m.global.push_back(i % 3 == 0);
    m.window = 128;
    c.modernbert = m;
  } else if (name == "qwen3-embedding-0.6b" || name == "embeddinggemma-300m") {
    decoder_shape(name, c);
  } else if (name == "distilbert-base") {
    c.model_type = "distilbert";
    c.num_layers = 6;
    c.type_vocab_size = 0;
  } else if (name == "minilm-l6") {
    c.model_type = "bert";
    c.hidden_size = 384;
    c.num_layers = 6;
    c.intermediate_size = 1536;
  } else {
    fail_usage("unknown --shape '{}' ({})", name, fmt::join(shape_names(), ", "));
  }
  c.family = find_model_type(c.model_type)->family;
  c.embedding_size = c.hidden_size;
  set_position_numbering(c);
  c.architecture = std::string(model_type_of(c).class_stem) +
                   (c.head == Head::kNone ? "Model" : "ForSequenceClassification");
  return c;
}

// The network's sizes, under each family's config names, each bounded.
void read_sizes(const JsonObject& obj, ModelConfig& c) {
  if (c.family == Family::kDistilBert) {
    c.vocab_size = bounded(obj, "vocab_size", 1, kMaxVocab);
    c.hidden_size = bounded(obj, "dim", 1, kMaxHidden);
    c.num_layers = bounded(obj, "n_layers", 1, kMaxLayers);
    c.num_heads = bounded(obj, "n_heads", 1, kMaxHeads);
    c.intermediate_size = bounded(obj, "hidden_dim", 1, kMaxIntermediate);
    c.max_position_embeddings = bounded(obj, "max_position_embeddings", 1, kMaxPositions);
    c.pad_token_id = bounded(obj, "pad_token_id", 0, kMaxVocab, 0);
    c.hidden_act_name = obj.opt_string("activation").value_or("gelu");
    c.hidden_act = parse_activation(obj, "activation", c.hidden_act_name);
    c.sinusoidal_positions = obj.opt_bool("sinusoidal_pos_embds").value_or(false);
    c.type_vocab_size = 0;
    c.layer_norm_eps = 1e-12f;  // fixed in DistilBERT's code, not in its config
  } else {
    c.vocab_size = bounded(obj, "vocab_size", 1, kMaxVocab);
    c.hidden_size = bounded(obj, "hidden_size", 1, kMaxHidden);
    c.num_layers = bounded(obj, "num_hidden_layers", 1, kMaxLayers);
    c.num_heads = bounded(obj, "num_attention_heads", 1, kMaxHeads);
    c.intermediate_size = bounded(obj, "intermediate_size", 1, kMaxIntermediate);
    c.max_position_embeddings = bounded(obj, "max_position_embeddings", 1, kMaxPositions);
    // MPNet and ModernBERT have no token types (MPNet's config may still carry the key; its
    // model ignores it); DeBERTa-v2 has them only when type_vocab_size > 0 (its default is 0).
    const bool deberta = c.family == Family::kDebertaV2;
    if (c.family == Family::kMpnet || c.family == Family::kModernBert) {
      c.type_vocab_size = 0;
    } else {
      c.type_vocab_size =
          bounded(obj, "type_vocab_size", deberta ? 0 : 1, kMaxTypeVocab, deberta ? 0 : 2);
    }
    const bool roberta_positions = c.family == Family::kRoberta || c.family == Family::kMpnet;
    c.pad_token_id = bounded(obj, "pad_token_id", 0, kMaxVocab, roberta_positions ? 1 : 0);
    c.hidden_act_name = obj.opt_string("hidden_act").value_or("gelu");
    c.hidden_act = parse_activation(obj, "hidden_act", c.hidden_act_name);
    double eps = obj.opt_number("layer_norm_eps").value_or(deberta ? 1e-7 : 1e-12);
    if (!(eps > 0 && eps < 1))
      obj.fail_field("layer_norm_eps", fmt::format("{} is not in (0, 1)", eps));
    c.layer_norm_eps = static_cast<float>(eps);
    if (c.family != Family::kMpnet) {
      std::string pos = obj.opt_string("position_embedding_type").value_or("absolute");
      if (pos != "absolute") {
        obj.fail_field(
            "position_embedding_type",
            fmt::format("'{}' is not supported (only absolute position embeddings)", pos));
      }
    }
    set_position_numbering(c);
    // transformers buckets relative positions into 32 whatever the table holds.
    if (c.family == Family::kMpnet)
      c.relative_attention_buckets = bounded(obj, "relative_attention_num_buckets", 32, 4096, 32);
    c.embedding_size = c.family == Family::kElectra
                           ? bounded(obj, "embedding_size", 1, kMaxHidden, c.hidden_size)
                           : c.hidden_size;
  }
  if (c.family == Family::kDistilBert) c.embedding_size = c.hidden_size;
}

// "a|b | c" → {"a", "b", "c"}: trimmed, lower-cased, empty items dropped (DeBERTa's string forms
// of pos_att_type and norm_rel_ebd, read as its config class reads them).
std::vector<std::string> bar_list(const std::string& joined) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= joined.size()) {
    std::size_t bar = joined.find('|', start);
    if (bar == std::string::npos) bar = joined.size();
    std::string t = joined.substr(start, bar - start);
    t.erase(0, t.find_first_not_of(' '));
    t.erase(t.find_last_not_of(' ') + 1);
    for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (!t.empty()) items.push_back(t);
    start = bar + 1;
  }
  return items;
}

// A config value that must keep the default the engine implements, refused by name otherwise.
void require_default(const JsonObject& obj, std::string_view key, bool is_default,
                     std::string_view why) {
  if (!is_default) obj.fail_field(key, fmt::format("is not supported ({})", why));
}

// DeBERTa-v2's attention switches and the fields its code reads that mcinfer does not implement.
void read_deberta(const JsonObject& obj, ModelConfig& c) {
  DisentangledConfig d;
  d.relative = obj.opt_bool("relative_attention").value_or(false);
  if (obj.has("pos_att_type") && !obj.raw("pos_att_type").is_null()) {
    // A list, or transformers' older "c2p|p2c" string.
    std::vector<std::string> types;
    const Json& raw = obj.raw("pos_att_type");
    if (raw.is_string()) {
      types = bar_list(raw.get<std::string>());
    } else if (raw.is_array()) {
      for (const Json& t : raw) {
        if (!t.is_string()) obj.fail_field("pos_att_type", "expected a list of strings");
        types.push_back(t.get<std::string>());
      }
    } else {
      obj.fail_field("pos_att_type", "expected a list such as [\"p2c\", \"c2p\"] or \"p2c|c2p\"");
    }
    for (const std::string& t : types) {
      if (t == "c2p") {
        d.c2p = true;
      } else if (t == "p2c") {
        d.p2c = true;
      } else {
        obj.fail_field("pos_att_type",
                       fmt::format("'{}' is not supported (c2p and p2c; DeBERTa-v1's p2p is not "
                                   "used by DeBERTa-v2)",
                                   t));
      }
    }
  }
  d.position_buckets = bounded(obj, "position_buckets", -1, kMaxPositions, -1);
  d.max_relative_positions = bounded(obj, "max_relative_positions", -1, kMaxPositions, -1);
  if (d.max_relative_positions < 1) d.max_relative_positions = c.max_position_embeddings;
  if (d.position_buckets > 0 &&
      (d.position_buckets < 4 || d.max_relative_positions <= d.position_buckets / 2)) {
    obj.fail_field("position_buckets",
                   fmt::format("{} with max_relative_positions {}: the log buckets need at least 4 "
                               "buckets and max_relative_positions above half of them",
                               d.position_buckets, d.max_relative_positions));
  }
  d.share_att_key = obj.opt_bool("share_att_key").value_or(false);
  const std::string norm = obj.opt_string("norm_rel_ebd").value_or("none");
  for (const std::string& t : bar_list(norm)) {
    if (t == "layer_norm") {
      d.norm_rel_ebd = true;
    } else if (t != "none") {
      obj.fail_field("norm_rel_ebd", fmt::format("'{}' is not supported (layer_norm, none)", t));
    }
  }
  c.disentangled = d;
  c.position_biased_input = obj.opt_bool("position_biased_input").value_or(true);
  c.pooler_act = parse_activation(obj, "pooler_hidden_act",
                                  obj.opt_string("pooler_hidden_act").value_or("gelu"));
  const auto conv = obj.opt_int("conv_kernel_size");
  require_default(obj, "conv_kernel_size", !conv || *conv <= 0,
                  "the convolution layer of DeBERTa-v2-xlarge/xxlarge is not implemented");
  const auto pooler = obj.opt_int("pooler_hidden_size");
  require_default(obj, "pooler_hidden_size", !pooler || *pooler == c.hidden_size,
                  "the ContextPooler runs at hidden_size");
  const auto head_size = obj.opt_int("attention_head_size");
  require_default(obj, "attention_head_size", !head_size || *head_size == c.head_dim(),
                  "heads of hidden_size / num_attention_heads");
  const auto embedding = obj.opt_int("embedding_size");
  require_default(obj, "embedding_size", !embedding || *embedding == c.hidden_size,
                  "embeddings narrower than hidden_size");
  require_default(obj, "z_steps", obj.opt_int("z_steps").value_or(0) <= 1,
                  "repeated last-layer steps");
}

// One attention kind's rotary base from transformers 5's rope_parameters (only the default
// RoPE: scaled variants change the frequencies).
double rope_theta(const JsonObject& obj, const Json& params, std::string_view kind) {
  const std::string field = fmt::format("rope_parameters.{}", kind);
  if (!params.is_object()) obj.fail_field(field, "expected an object with rope_theta");
  const JsonObject kind_obj(params, obj.origin());
  const std::string type = kind_obj.opt_string("rope_type").value_or("default");
  if (type != "default")
    obj.fail_field(field, fmt::format("rope_type '{}' is not supported (default)", type));
  const double theta = kind_obj.get_number("rope_theta");
  if (!(theta > 1)) obj.fail_field(field, fmt::format("rope_theta {} is not above 1", theta));
  return theta;
}

// ModernBERT's fields, under the names transformers 4.48+ and 5 write (layer_types and
// rope_parameters are 5's spelling of global_attn_every_n_layers and the two rope thetas).
void read_modernbert(const JsonObject& obj, ModelConfig& c) {
  ModernBertConfig m;
  c.hidden_act_name = obj.opt_string("hidden_activation").value_or("gelu");
  c.hidden_act = parse_activation(obj, "hidden_activation", c.hidden_act_name);
  const double eps = obj.opt_number("norm_eps").value_or(1e-5);
  if (!(eps > 0 && eps < 1)) obj.fail_field("norm_eps", fmt::format("{} is not in (0, 1)", eps));
  c.layer_norm_eps = static_cast<float>(eps);
  if (c.head_dim() % 2 != 0)
    obj.fail_field(
        "num_attention_heads",
        fmt::format("head size {} is odd (rotary positions pair dimensions)", c.head_dim()));
  m.window = bounded(obj, "local_attention", 2, kMaxPositions, 128);
  if (obj.has("layer_types") && !obj.raw("layer_types").is_null()) {
    const Json& types = obj.raw("layer_types");
    if (!types.is_array() || static_cast<std::int64_t>(types.size()) != c.num_layers)
      obj.fail_field("layer_types", fmt::format("expected a list of {} layer kinds", c.num_layers));
    for (const Json& t : types) {
      const std::string kind = t.is_string() ? t.get<std::string>() : "";
      if (kind != "full_attention" && kind != "sliding_attention")
        obj.fail_field("layer_types", "expected \"full_attention\" or \"sliding_attention\" items");
      m.global.push_back(kind == "full_attention");
    }
  } else {
    const std::int64_t every = bounded(obj, "global_attn_every_n_layers", 1, kMaxLayers, 1);
    for (std::int64_t i = 0; i < c.num_layers; ++i) m.global.push_back(i % every == 0);
  }
  if (obj.has("rope_scaling") && !obj.raw("rope_scaling").is_null())
    obj.fail_field("rope_scaling", "is not supported (unscaled rotary positions only)");
  if (obj.has("rope_parameters") && !obj.raw("rope_parameters").is_null()) {
    const Json& params = obj.raw("rope_parameters");
    if (!params.is_object())
      obj.fail_field("rope_parameters", "expected full_attention and sliding_attention entries");
    const JsonObject params_obj(params, obj.origin());
    if (!params_obj.has("full_attention") || !params_obj.has("sliding_attention"))
      obj.fail_field("rope_parameters", "expected full_attention and sliding_attention entries");
    m.global_theta = rope_theta(obj, params_obj.raw("full_attention"), "full_attention");
    m.local_theta = rope_theta(obj, params_obj.raw("sliding_attention"), "sliding_attention");
  } else {
    m.global_theta = obj.opt_number("global_rope_theta").value_or(160000.0);
    m.local_theta = obj.opt_number("local_rope_theta").value_or(10000.0);
    for (const char* key : {"global_rope_theta", "local_rope_theta"})
      if (obj.has(key) && !(obj.get_number(key) > 1)) obj.fail_field(key, "is not above 1");
  }
  m.attention_bias = obj.opt_bool("attention_bias").value_or(false);
  m.mlp_bias = obj.opt_bool("mlp_bias").value_or(false);
  m.norm_bias = obj.opt_bool("norm_bias").value_or(false);
  m.classifier_bias = obj.opt_bool("classifier_bias").value_or(false);
  m.decoder_bias = obj.opt_bool("decoder_bias").value_or(true);
  m.classifier_act = parse_activation(obj, "classifier_activation",
                                      obj.opt_string("classifier_activation").value_or("gelu"));
  const std::string pooling = obj.opt_string("classifier_pooling").value_or("cls");
  if (pooling != "cls" && pooling != "mean")
    obj.fail_field("classifier_pooling", fmt::format("'{}' is not supported (cls, mean)", pooling));
  m.mean_pooling = pooling == "mean";
  c.modernbert = std::move(m);
}

// A classification head's labels (id2label, or num_labels) and problem type.
void read_labels(const JsonObject& obj, ModelConfig& c) {
  // transformers derives num_labels from id2label; num_labels alone appears in hand-written
  // configs.
  if (obj.has("id2label")) {
    const Json& map = obj.raw("id2label");
    if (!map.is_object() || map.empty())
      obj.fail_field("id2label", "expected a non-empty object of id -> name");
    if (static_cast<std::int64_t>(map.size()) > kMaxLabels)
      obj.fail_field("id2label", "too many labels");
    c.labels.assign(map.size(), "");
    for (auto it = map.begin(); it != map.end(); ++it) {
      std::size_t id = 0;
      const std::string& key = it.key();
      bool numeric =
          !key.empty() && key.size() < 10 &&
          std::all_of(key.begin(), key.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
      if (numeric) id = std::stoul(key);
      if (!numeric || id >= map.size()) {
        obj.fail_field("id2label",
                       fmt::format("key '{}' is not an id in [0, {})", key, map.size()));
      }
      if (!it.value().is_string())
        obj.fail_field("id2label", fmt::format("label of id {} is not a string", key));
      c.labels[id] = it.value().get<std::string>();
    }
    c.num_labels = static_cast<std::int64_t>(c.labels.size());
    if (auto n = obj.opt_int("num_labels"); n && *n != c.num_labels) {
      obj.fail_field("num_labels",
                     fmt::format("{} disagrees with the {} entries of id2label", *n, c.num_labels));
    }
  } else {
    c.num_labels = bounded(obj, "num_labels", 1, kMaxLabels, 2);
    for (std::int64_t i = 0; i < c.num_labels; ++i) c.labels.push_back(fmt::format("LABEL_{}", i));
  }
  std::optional<std::string> pt = obj.opt_string("problem_type");
  if (!pt) {
    c.problem_type = c.num_labels == 1 ? ProblemType::kRegression : ProblemType::kSingleLabel;
  } else if (const auto type = kProblemTypeNames.parse(*pt)) {
    c.problem_type = *type;
  } else {
    obj.fail_field("problem_type", fmt::format("'{}' is not a known problem type", *pt));
  }
}

ModelConfig ModelConfig::load(const std::filesystem::path& config_json) {
  Json json = read_json_file(config_json, 16u << 20);
  JsonObject obj(json, config_json.string());
  ModelConfig c;
  c.model_type = obj.get_string("model_type");
  const ModelType* type = find_model_type(c.model_type);
  if (type == nullptr) {
    obj.fail_field("model_type", fmt::format("'{}' is not supported ({})", c.model_type,
                                             supported_model_types()));
  }
  c.family = type->family;

  if (obj.has("architectures")) {
    const Json& archs = obj.raw("architectures");
    if (!archs.is_array() || archs.empty() || !archs[0].is_string()) {
      obj.fail_field("architectures", "expected a non-empty list of class names");
    }
    if (archs.size() > 1)
      obj.fail_field("architectures", "more than one architecture is not supported");
    c.architecture = archs[0].get<std::string>();
  }
  if (ends_with(c.architecture, "ForSequenceClassification")) {
    c.head = Head::kSequenceClassification;
  } else if (c.architecture.empty() || ends_with(c.architecture, "Model") ||
             ends_with(c.architecture, "ForMaskedLM") ||
             ends_with(c.architecture, "ForPreTraining")) {
    // Base encoders, and pre-training checkpoints whose LM head we leave unused.
    c.head = Head::kNone;
  } else {
    obj.fail_field(
        "architectures",
        fmt::format("'{}' is not supported (the base model or *ForSequenceClassification)",
                    c.architecture));
  }

  if (c.family == Family::kQwen3) {
    read_qwen3(obj, c);
  } else if (c.family == Family::kGemma3) {
    read_gemma3(obj, c);
  } else {
    read_encoder(obj, c);
  }
  // transformers 5 writes "dtype"; 4.x wrote "torch_dtype" (and 5 still reads it).
  c.torch_dtype = obj.opt_string("dtype").value_or(obj.opt_string("torch_dtype").value_or(""));
  c.transformers_version = obj.opt_string("transformers_version");

  if (c.head == Head::kSequenceClassification) read_labels(obj, c);
  return c;
}

void read_encoder(const JsonObject& obj, ModelConfig& c) {
  read_sizes(obj, c);
  // transformers 5 writes both for every encoder; true makes the model a decoder (causal
  // self-attention) or adds cross-attention layers, which an encoder run does not compute.
  for (const char* key : {"is_decoder", "add_cross_attention"}) {
    if (obj.opt_bool(key).value_or(false)) {
      obj.fail_field(key,
                     "true is not supported (mcinfer runs encoders: bidirectional "
                     "self-attention only)");
    }
  }
  if (c.pad_token_id >= c.vocab_size) {
    obj.fail_field("pad_token_id",
                   fmt::format("{} is not below vocab_size {}", c.pad_token_id, c.vocab_size));
  }
  if (c.hidden_size % c.num_heads != 0) {
    obj.fail_field(
        c.family == Family::kDistilBert ? "n_heads" : "num_attention_heads",
        fmt::format("{} heads do not divide the hidden size {}", c.num_heads, c.hidden_size));
  }
  if (c.family == Family::kDebertaV2) read_deberta(obj, c);
  if (c.family == Family::kModernBert) read_modernbert(obj, c);
  if (c.max_sequence_length() < 2) {
    obj.fail_field("max_position_embeddings",
                   fmt::format("{} leaves no room for a sequence", c.max_position_embeddings));
  }
}

}  // namespace mcinfer::model
