// The config.json of decoder-style models: Qwen3 (transformers 5's Qwen3Config, and the 4.x
// spelling of its rotary base) and Gemma 3's text model (Gemma3TextConfig, EmbeddingGemma with
// use_bidirectional_attention): every size bounded, every feature the engine does not run
// refused by field name.

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "model/config_fields.h"

namespace mcinfer::model {

using namespace config_fields;

namespace {

// The rotary base: transformers 5's rope_parameters {rope_type, rope_theta} or 4.x's rope_theta
// with rope_scaling. Only the default RoPE: a scaled one changes the frequencies.
double read_rope_theta(const JsonObject& obj) {
  if (obj.has("rope_scaling") && !obj.raw("rope_scaling").is_null())
    obj.fail_field("rope_scaling", "is not supported (unscaled rotary positions only)");
  double theta = obj.opt_number("rope_theta").value_or(10000.0);
  if (obj.has("rope_parameters") && !obj.raw("rope_parameters").is_null()) {
    const Json& params = obj.raw("rope_parameters");
    if (!params.is_object()) obj.fail_field("rope_parameters", "expected an object");
    const JsonObject p(params, obj.origin());
    const std::string type = p.opt_string("rope_type").value_or("default");
    if (type != "default") {
      obj.fail_field("rope_parameters.rope_type",
                     fmt::format("'{}' is not supported (default)", type));
    }
    theta = p.opt_number("rope_theta").value_or(theta);
  }
  if (!(theta > 1)) obj.fail_field("rope_theta", fmt::format("{} is not above 1", theta));
  return theta;
}

// One attention kind's base from rope_parameters.<kind> (default RoPE only).
double kind_theta(const JsonObject& obj, const Json& params, std::string_view kind,
                  double fallback) {
  const std::string field = fmt::format("rope_parameters.{}", kind);
  if (!params.is_object()) obj.fail_field(field, "expected an object");
  const JsonObject p(params, obj.origin());
  const std::string type = p.opt_string("rope_type").value_or("default");
  if (type != "default")
    obj.fail_field(field + ".rope_type", fmt::format("'{}' is not supported (default)", type));
  const double theta = p.opt_number("rope_theta").value_or(fallback);
  if (!(theta > 1)) obj.fail_field(field + ".rope_theta", fmt::format("{} is not above 1", theta));
  return theta;
}

// The sizes every decoder names the same way.
void read_decoder_sizes(const JsonObject& obj, ModelConfig& c, DecoderConfig& d,
                        std::int64_t default_head_dim) {
  c.vocab_size = bounded(obj, "vocab_size", 1, kMaxVocab);
  c.hidden_size = bounded(obj, "hidden_size", 1, kMaxHidden);
  c.num_layers = bounded(obj, "num_hidden_layers", 1, kMaxLayers);
  c.num_heads = bounded(obj, "num_attention_heads", 1, kMaxHeads);
  c.intermediate_size = bounded(obj, "intermediate_size", 1, kMaxIntermediate);
  c.max_position_embeddings = bounded(obj, "max_position_embeddings", 2, kMaxPositions);
  c.type_vocab_size = 0;
  c.embedding_size = c.hidden_size;
  const double eps = obj.opt_number("rms_norm_eps").value_or(1e-6);
  if (!(eps > 0 && eps < 1)) obj.fail_field("rms_norm_eps", fmt::format("{} is not in (0, 1)", eps));
  c.layer_norm_eps = static_cast<float>(eps);
  d.kv_heads = bounded(obj, "num_key_value_heads", 1, c.num_heads, c.num_heads);
  if (c.num_heads % d.kv_heads != 0) {
    obj.fail_field("num_key_value_heads", fmt::format("{} does not divide num_attention_heads {}",
                                                      d.kv_heads, c.num_heads));
  }
  d.head_dim = bounded(obj, "head_dim", 2, kMaxHidden, default_head_dim);
  if (d.head_dim % 2 != 0)
    obj.fail_field("head_dim", fmt::format("{} is odd (rotary positions pair dimensions)", d.head_dim));
  d.attention_bias = obj.opt_bool("attention_bias").value_or(false);
  if (const auto pad = obj.opt_int("pad_token_id")) {
    if (*pad < 0 || *pad >= c.vocab_size)
      obj.fail_field("pad_token_id", fmt::format("{} is not in [0, {})", *pad, c.vocab_size));
    d.pad_id = *pad;
  }
}

// layer_types when given (full_attention / sliding_attention), else `sliding(i)`.
template <typename Fn>
void read_layer_types(const JsonObject& obj, const ModelConfig& c, DecoderConfig& d, Fn sliding) {
  if (obj.has("layer_types") && !obj.raw("layer_types").is_null()) {
    const Json& types = obj.raw("layer_types");
    if (!types.is_array() || static_cast<std::int64_t>(types.size()) != c.num_layers)
      obj.fail_field("layer_types", fmt::format("expected a list of {} layer kinds", c.num_layers));
    for (const Json& t : types) {
      const std::string kind = t.is_string() ? t.get<std::string>() : "";
      if (kind != "full_attention" && kind != "sliding_attention")
        obj.fail_field("layer_types", "expected \"full_attention\" or \"sliding_attention\" items");
      d.sliding.push_back(kind == "sliding_attention");
    }
    return;
  }
  for (std::int64_t i = 0; i < c.num_layers; ++i) d.sliding.push_back(sliding(i));
}

// Which layers slide, as Qwen3Config decides: layer_types when given, else the layers from
// max_window_layers on when use_sliding_window; a window only where sliding_window is set.
void read_sliding(const JsonObject& obj, ModelConfig& c, DecoderConfig& d) {
  const bool use = obj.opt_bool("use_sliding_window").value_or(false);
  std::optional<std::int64_t> window = std::nullopt;
  if (use) window = bounded(obj, "sliding_window", 1, kMaxPositions, 4096);
  d.sliding_window = window.value_or(0);
  const std::int64_t from = bounded(obj, "max_window_layers", 0, kMaxLayers, 28);
  read_layer_types(obj, c, d, [&](std::int64_t i) { return window.has_value() && i >= from; });
  // A sliding layer without a window attends to every key at or before the query.
  if (!window)
    for (std::size_t i = 0; i < d.sliding.size(); ++i) d.sliding[i] = false;
}

}  // namespace

void read_qwen3(const JsonObject& obj, ModelConfig& c) {
  DecoderConfig d;
  // Qwen3Config's default head size is 128 whatever hidden / heads is.
  read_decoder_sizes(obj, c, d, 128);
  c.hidden_act_name = obj.opt_string("hidden_act").value_or("silu");
  c.hidden_act = parse_activation(obj, "hidden_act", c.hidden_act_name);
  d.rope_theta = d.sliding_rope_theta = read_rope_theta(obj);
  read_sliding(obj, c, d);
  c.decoder = std::move(d);
}

// Gemma3TextConfig: (1 + w) RMS norms before and after each block, GELU-tanh gates, scores scaled
// by query_pre_attn_scalar^−½, a rotary base per layer kind, every sixth layer global by default;
// with use_bidirectional_attention (EmbeddingGemma) no causal mask and a sliding window of
// |i − j| < sliding_window / 2 + 1 (the config converts the saved value so).
void read_gemma3(const JsonObject& obj, ModelConfig& c) {
  DecoderConfig d;
  read_decoder_sizes(obj, c, d, 256);
  c.hidden_act_name = obj.opt_string("hidden_activation").value_or("gelu_pytorch_tanh");
  c.hidden_act = parse_activation(obj, "hidden_activation", c.hidden_act_name);
  for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"}) {
    if (obj.has(key) && !obj.raw(key).is_null())
      obj.fail_field(key, "is not supported (no logit soft-capping)");
  }
  if (obj.has("rope_scaling") && !obj.raw("rope_scaling").is_null())
    obj.fail_field("rope_scaling", "is not supported (unscaled rotary positions only)");
  d.rope_theta = 1'000'000.0;
  d.sliding_rope_theta = 10'000.0;
  if (obj.has("rope_parameters") && !obj.raw("rope_parameters").is_null()) {
    const Json& params = obj.raw("rope_parameters");
    if (!params.is_object()) obj.fail_field("rope_parameters", "expected an object");
    const JsonObject by_kind(params, obj.origin());
    if (by_kind.has("full_attention"))
      d.rope_theta = kind_theta(obj, by_kind.raw("full_attention"), "full_attention", d.rope_theta);
    if (by_kind.has("sliding_attention")) {
      d.sliding_rope_theta = kind_theta(obj, by_kind.raw("sliding_attention"), "sliding_attention",
                                        d.sliding_rope_theta);
    }
  } else {
    d.rope_theta = obj.opt_number("rope_theta").value_or(d.rope_theta);
    d.sliding_rope_theta = obj.opt_number("rope_local_base_freq").value_or(d.sliding_rope_theta);
  }
  const double scalar = obj.opt_number("query_pre_attn_scalar").value_or(256);
  if (!(scalar > 0)) obj.fail_field("query_pre_attn_scalar", "is not above 0");
  d.score_scale = static_cast<float>(1.0 / std::sqrt(scalar));
  d.causal = !obj.opt_bool("use_bidirectional_attention").value_or(false);
  const std::int64_t window = bounded(obj, "sliding_window", 1, kMaxPositions, 4096);
  d.sliding_window = d.causal ? window : 2 * (window / 2);
  const std::int64_t pattern = bounded(obj, "sliding_window_pattern", 1, kMaxLayers, 6);
  read_layer_types(obj, c, d, [&](std::int64_t i) { return (i + 1) % pattern != 0; });
  c.decoder = std::move(d);
}

}  // namespace mcinfer::model
