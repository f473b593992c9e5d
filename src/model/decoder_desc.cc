// The description of decoder-style models run as embedders and classifiers (Qwen3, Gemma 3):
// pre-norm layers of RMS norms, grouped-query attention with q/k norms per head and rotary
// positions under a causal mask or none (a sliding window in some layers), a gated FFN, a final
// norm; the classification head on the last non-pad token. Gemma 3 adds (1 + w) norms, norms on
// each block's output before its residual add, its score scale and embeddings scaled by √hidden.

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "model/encoder_desc.h"

namespace mcinfer::model {
namespace {

NormDesc rms(std::string name, std::int64_t width, float eps, NormKind kind = NormKind::kRms) {
  return {std::move(name), width, eps, false, kind};
}

// Qwen3's layer under "layers.{}.": input_layernorm, q/k/v_proj (fused, q wider than k and v
// under grouped-query attention), q_norm/k_norm per head, rotary positions, causal attention,
// o_proj; post_attention_layernorm, gate_proj/up_proj (fused: [gate | up], silu(gate) · up),
// down_proj.
LayerDesc qwen3_layer(const ModelConfig& c, std::int64_t index) {
  const DecoderConfig& dc = *c.decoder;
  const std::string p = fmt::format("layers.{}.", index);
  const std::int64_t h = c.hidden_size, inter = c.intermediate_size;
  LayerDesc layer;
  layer.norm_placement = NormPlacement::kPre;
  layer.heads = c.num_heads;
  layer.kv_heads = dc.kv_heads;
  layer.head_dim = dc.head_dim;
  LinearDesc qkv =
      linear({p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"}, h, 0);
  qkv.part_outs = {layer.query_width(), layer.kv_width(), layer.kv_width()};
  qkv.bias = dc.attention_bias;
  LinearDesc attn_out = linear({p + "self_attn.o_proj"}, layer.query_width(), h);
  attn_out.bias = dc.attention_bias;
  LinearDesc ffn_in = linear({p + "mlp.gate_proj", p + "mlp.up_proj"}, h, inter, c.hidden_act);
  ffn_in.bias = false;
  ffn_in.gated = true;
  LinearDesc ffn_out = linear({p + "mlp.down_proj"}, inter, h);
  ffn_out.bias = false;
  layer.gemms = {{GemmSlot::kQkv, qkv},
                 {GemmSlot::kAttnOut, attn_out},
                 {GemmSlot::kFfnIn, ffn_in},
                 {GemmSlot::kFfnOut, ffn_out}};
  layer.attention_norm = rms(p + "input_layernorm", h, c.layer_norm_eps);
  layer.ffn_norm = rms(p + "post_attention_layernorm", h, c.layer_norm_eps);
  layer.query_norm = rms(p + "self_attn.q_norm", dc.head_dim, c.layer_norm_eps);
  layer.key_norm = rms(p + "self_attn.k_norm", dc.head_dim, c.layer_norm_eps);
  const bool sliding = dc.sliding[static_cast<std::size_t>(index)];
  layer.causal = dc.causal;
  layer.window = sliding ? dc.sliding_window : 0;
  layer.rope_theta = sliding ? dc.sliding_rope_theta : dc.rope_theta;
  layer.score_scale = dc.score_scale;
  return layer;
}

// Gemma 3's layer: Qwen3's attention and gated FFN (GELU-tanh) with (1 + w) RMS norms, named
// input_layernorm (before the attention), post_attention_layernorm (on its output, before the
// residual add), pre_feedforward_layernorm and post_feedforward_layernorm (the same around the
// FFN).
LayerDesc gemma3_layer(const ModelConfig& c, std::int64_t index) {
  LayerDesc layer = qwen3_layer(c, index);
  const std::string p = fmt::format("layers.{}.", index);
  const std::int64_t h = c.hidden_size, d = c.decoder->head_dim;
  const float eps = c.layer_norm_eps;
  const NormKind offset = NormKind::kRmsOffset;
  layer.attention_norm = rms(p + "input_layernorm", h, eps, offset);
  layer.post_attention_norm = rms(p + "post_attention_layernorm", h, eps, offset);
  layer.ffn_norm = rms(p + "pre_feedforward_layernorm", h, eps, offset);
  layer.post_ffn_norm = rms(p + "post_feedforward_layernorm", h, eps, offset);
  layer.query_norm = rms(p + "self_attn.q_norm", d, eps, offset);
  layer.key_norm = rms(p + "self_attn.k_norm", d, eps, offset);
  return layer;
}

}  // namespace

void describe_decoder(const ModelConfig& c, EncoderDesc& d) {
  const bool gemma = c.family == Family::kGemma3;
  if (c.family != Family::kQwen3 && !gemma)
    fail("internal: no decoder description for the {} family", c.family_name());
  const std::int64_t h = c.hidden_size;
  EmbeddingDesc& e = d.embeddings;
  e.word = "embed_tokens";
  e.vocab = c.vocab_size;
  e.width = h;
  e.positions = PositionScheme::kRotary;
  e.max_positions = c.max_position_embeddings;
  // Gemma: the embeddings times √hidden, a float32 of the Python float (the weights are used in
  // float32 here, as transformers scales them in their dtype).
  if (gemma) e.scale = static_cast<float>(std::sqrt(static_cast<double>(h)));
  for (std::int64_t i = 0; i < c.num_layers; ++i)
    d.layers.push_back(gemma ? gemma3_layer(c, i) : qwen3_layer(c, i));
  d.final_norm = rms("norm", h, c.layer_norm_eps, gemma ? NormKind::kRmsOffset : NormKind::kRms);
  if (c.head != Head::kSequenceClassification) return;
  HeadDesc head;
  head.out = linear({"score"}, h, c.num_labels, Activation::kNone, false);
  head.out.bias = false;
  head.pooling = HeadPooling::kLastNonPad;
  head.pad_id = c.decoder->pad_id.value_or(-1);
  d.head = head;
}

}  // namespace mcinfer::model
