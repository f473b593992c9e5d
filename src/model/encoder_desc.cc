#include "model/encoder_desc.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"

namespace mcinfer::model {
namespace {

// Where a family keeps a layer's tensors below its layer prefix ({} is the layer index).
struct LayerNames {
  const char *prefix, *query, *key, *value, *attn_out, *attn_norm, *ffn_in, *ffn_out, *ffn_norm;
};
constexpr LayerNames kBertLayer{
    "encoder.layer.{}.",    "attention.self.query",   "attention.self.key",
    "attention.self.value", "attention.output.dense", "attention.output.LayerNorm",
    "intermediate.dense",   "output.dense",           "output.LayerNorm"};
constexpr LayerNames kDistilBertLayer{
    "transformer.layer.{}.", "attention.q_lin", "attention.k_lin", "attention.v_lin",
    "attention.out_lin",     "sa_layer_norm",   "ffn.lin1",        "ffn.lin2",
    "output_layer_norm"};
constexpr LayerNames kMpnetLayer{"encoder.layer.{}.",  "attention.attn.q", "attention.attn.k",
                                 "attention.attn.v",   "attention.attn.o", "attention.LayerNorm",
                                 "intermediate.dense", "output.dense",     "output.LayerNorm"};

constexpr LayerNames kDebertaV2Layer{"encoder.layer.{}.",       "attention.self.query_proj",
                                     "attention.self.key_proj", "attention.self.value_proj",
                                     "attention.output.dense",  "attention.output.LayerNorm",
                                     "intermediate.dense",      "output.dense",
                                     "output.LayerNorm"};

}  // namespace

LinearDesc linear(std::vector<std::string> parts, std::int64_t in, std::int64_t part_out,
                  Activation activation, bool in_base) {
  LinearDesc l;
  l.parts = std::move(parts);
  l.in = in;
  l.part_outs.assign(l.parts.size(), part_out);
  l.activation = activation;
  l.in_base = in_base;
  return l;
}

namespace {

// The post-norm layer of BERT and its descendants: fused QKV, attention, output projection,
// residual + LayerNorm, FFN up (activation), FFN down, residual + LayerNorm.
LayerDesc post_norm_layer(const ModelConfig& c, const LayerNames& n, std::int64_t index) {
  const std::string p = fmt::format(fmt::runtime(n.prefix), index);
  const std::int64_t h = c.hidden_size;
  LayerDesc layer;
  layer.heads = layer.kv_heads = c.num_heads;
  layer.head_dim = c.head_dim();
  layer.gemms = {
      {GemmSlot::kQkv, linear({p + n.query, p + n.key, p + n.value}, h, h)},
      {GemmSlot::kAttnOut, linear({p + n.attn_out}, h, h)},
      {GemmSlot::kFfnIn, linear({p + n.ffn_in}, h, c.intermediate_size, c.hidden_act)},
      {GemmSlot::kFfnOut, linear({p + n.ffn_out}, c.intermediate_size, h)},
  };
  layer.attention_norm = {p + n.attn_norm, h, c.layer_norm_eps};
  layer.ffn_norm = {p + n.ffn_norm, h, c.layer_norm_eps};
  return layer;
}

EmbeddingDesc embeddings(const ModelConfig& c, PositionScheme positions) {
  EmbeddingDesc e;
  e.word = "embeddings.word_embeddings";
  e.vocab = c.vocab_size;
  e.width = c.embedding_size > 0 ? c.embedding_size : c.hidden_size;
  e.positions = positions;
  e.position = "embeddings.position_embeddings";
  e.max_positions = c.max_position_embeddings;
  if (c.type_vocab_size > 0) {
    e.token_type = "embeddings.token_type_embeddings";
    e.type_vocab = c.type_vocab_size;
  }
  e.norm = {"embeddings.LayerNorm", e.width, c.layer_norm_eps};
  if (e.width != c.hidden_size)
    e.projection = linear({"embeddings_project"}, e.width, c.hidden_size);
  return e;
}

// dense (in the base model for BERT's pooler, else at the top) + activation, then `out`.
HeadDesc head(const ModelConfig& c, const std::string& dense, bool dense_in_base,
              Activation activation, const std::string& out) {
  const std::int64_t h = c.hidden_size;
  HeadDesc d;
  d.dense = linear({dense}, h, h, activation, dense_in_base);
  d.out = linear({out}, h, c.num_labels, Activation::kNone, false);
  return d;
}

// Each family's head, decided here only: BERT's pooler (tanh) + classifier; RoBERTa's (and
// CamemBERT's, XLM-R's, MPNet's) classifier.dense + tanh + out_proj; ELECTRA's the same with
// GELU; DistilBERT's pre_classifier + ReLU + classifier.
HeadDesc family_head(const ModelConfig& c) {
  switch (c.family) {
    case Family::kBert:
      return head(c, "pooler.dense", true, Activation::kTanh, "classifier");
    case Family::kRoberta:
    case Family::kMpnet:
      return head(c, "classifier.dense", false, Activation::kTanh, "classifier.out_proj");
    case Family::kElectra:
      return head(c, "classifier.dense", false, Activation::kGeluErf, "classifier.out_proj");
    case Family::kDebertaV2:  // ContextPooler (pooler_hidden_act) + classifier
      return head(c, "pooler.dense", false, c.pooler_act, "classifier");
    case Family::kDistilBert:
      return head(c, "pre_classifier", false, Activation::kRelu, "classifier");
    case Family::kModernBert:  // describe_modernbert builds its head (norm, pooling) itself
    case Family::kQwen3:       // and describe_decoder its own
    case Family::kGemma3:
      break;
  }
  throw Error(fmt::format("no classification head described for the {} family", c.family_name()));
}

// ModernBERT's pre-norm layer under "layers.{}.": fused Wqkv, rotary attention (global or over
// the sliding window), Wo; the gated FFN Wi (GeGLU: [input | gate]) then Wo. The first layer has
// no attention norm (the embeddings' norm precedes it).
LayerDesc modernbert_layer(const ModelConfig& c, std::int64_t index) {
  const ModernBertConfig& m = *c.modernbert;
  const std::string p = fmt::format("layers.{}.", index);
  const std::int64_t h = c.hidden_size, inter = c.intermediate_size;
  LayerDesc layer;
  layer.norm_placement = NormPlacement::kPre;
  layer.heads = layer.kv_heads = c.num_heads;
  layer.head_dim = c.head_dim();
  auto biased = [](LinearDesc l, bool bias) {
    l.bias = bias;
    return l;
  };
  LinearDesc ffn_in = biased(linear({p + "mlp.Wi"}, h, 2 * inter, c.hidden_act), m.mlp_bias);
  ffn_in.gated = true;
  layer.gemms = {
      {GemmSlot::kQkv, biased(linear({p + "attn.Wqkv"}, h, 3 * h), m.attention_bias)},
      {GemmSlot::kAttnOut, biased(linear({p + "attn.Wo"}, h, h), m.attention_bias)},
      {GemmSlot::kFfnIn, ffn_in},
      {GemmSlot::kFfnOut, biased(linear({p + "mlp.Wo"}, inter, h), m.mlp_bias)},
  };
  if (index > 0) layer.attention_norm = {p + "attn_norm", h, c.layer_norm_eps, m.norm_bias};
  layer.ffn_norm = {p + "mlp_norm", h, c.layer_norm_eps, m.norm_bias};
  const bool global = m.global[static_cast<std::size_t>(index)];
  layer.window = global ? 0 : m.window;
  layer.rope_theta = global ? m.global_theta : m.local_theta;
  return layer;
}

// ModernBERT: token embeddings and their norm, rotary positions, pre-norm layers, a final norm;
// the head (dense, activation, norm on the first token or the mean) then the classifier.
void describe_modernbert(const ModelConfig& c, EncoderDesc& d) {
  const ModernBertConfig& m = *c.modernbert;
  const std::int64_t h = c.hidden_size;
  EmbeddingDesc& e = d.embeddings;
  e.word = "embeddings.tok_embeddings";
  e.vocab = c.vocab_size;
  e.width = h;
  e.positions = PositionScheme::kRotary;
  e.max_positions = c.max_position_embeddings;
  e.norm = {"embeddings.norm", h, c.layer_norm_eps, m.norm_bias};
  for (std::int64_t i = 0; i < c.num_layers; ++i) d.layers.push_back(modernbert_layer(c, i));
  d.final_norm = {"final_norm", h, c.layer_norm_eps, m.norm_bias};
  if (c.head != Head::kSequenceClassification) return;
  HeadDesc head;
  head.dense = linear({"head.dense"}, h, h, m.classifier_act, false);
  head.dense->bias = m.classifier_bias;
  head.out = linear({"classifier"}, h, c.num_labels, Activation::kNone, false);
  head.norm = {"head.norm", h, c.layer_norm_eps, m.norm_bias};
  head.pooling = m.mean_pooling ? HeadPooling::kMean : HeadPooling::kFirst;
  d.head = head;
}

// DeBERTa-v2: the relative-position table and each layer's projections of it.
void describe_disentangled(const ModelConfig& c, EncoderDesc& d) {
  const DisentangledConfig& dc = *c.disentangled;
  d.score_terms = dc.score_terms();
  if (!dc.relative || !(dc.c2p || dc.p2c)) return;
  DisentangledDesc dd;
  dd.table = "encoder.rel_embeddings";
  dd.span = dc.span();
  dd.buckets = dc.position_buckets;
  dd.max_relative = dc.max_relative_positions;
  if (dc.norm_rel_ebd) dd.norm = NormDesc{"encoder.LayerNorm", c.hidden_size, c.layer_norm_eps};
  dd.c2p = dc.c2p;
  dd.p2c = dc.p2c;
  d.disentangled = dd;
  const std::int64_t h = c.hidden_size;
  for (std::size_t i = 0; i < d.layers.size(); ++i) {
    const std::string p = fmt::format(fmt::runtime(kDebertaV2Layer.prefix), i);
    LayerDesc& layer = d.layers[i];
    if (dc.c2p)
      layer.position_key = linear(
          {p + (dc.share_att_key ? kDebertaV2Layer.key : "attention.self.pos_key_proj")}, h, h);
    if (dc.p2c)
      layer.position_query = linear(
          {p + (dc.share_att_key ? kDebertaV2Layer.query : "attention.self.pos_query_proj")}, h, h);
  }
}

}  // namespace

std::int64_t LayerDesc::keys_before() const {
  if (window <= 0) return -1;
  return causal ? window - 1 : window / 2;
}

std::int64_t LayerDesc::keys_after() const {
  if (causal) return 0;
  return window > 0 ? window / 2 : -1;
}

const NormDesc& LayerDesc::norm(NormSlot slot) const {
  switch (slot) {
    case NormSlot::kAttention:
      return attention_norm;
    case NormSlot::kFfn:
      return ffn_norm;
    case NormSlot::kQuery:
      return query_norm;
    case NormSlot::kKey:
      return key_norm;
    case NormSlot::kPostAttention:
      return post_attention_norm;
    case NormSlot::kPostFfn:
      return post_ffn_norm;
  }
  fail("internal: norm slot {}", static_cast<int>(slot));
}

const GemmDesc& LayerDesc::gemm(GemmSlot slot) const {
  for (const GemmDesc& g : gemms)
    if (g.slot == slot) return g;
  fail("internal: the layer has no {} GEMM", gemm_label({0, slot}));
}

EncoderDesc describe_encoder(const ModelConfig& c) {
  EncoderDesc d;
  d.family = c.family_name();
  d.hidden = c.hidden_size;
  d.heads = c.num_heads;
  d.intermediate = c.intermediate_size;
  if (c.family == Family::kModernBert) {
    describe_modernbert(c, d);
    return d;
  }
  if (c.decoder) {
    describe_decoder(c, d);
    return d;
  }
  const LayerNames* names = &kBertLayer;
  PositionScheme positions = PositionScheme::kAbsolute;
  if (c.family == Family::kDistilBert) {
    names = &kDistilBertLayer;
    if (c.sinusoidal_positions) positions = PositionScheme::kSinusoidal;
  } else if (c.family == Family::kMpnet) {
    names = &kMpnetLayer;
    positions = PositionScheme::kRelativeBias;
    RelativeBiasDesc bias;
    bias.table = "encoder.relative_attention_bias";
    bias.table_rows = c.relative_attention_buckets;
    d.relative_bias = bias;
  } else if (c.family == Family::kDebertaV2) {
    names = &kDebertaV2Layer;
    if (!c.position_biased_input) positions = PositionScheme::kNone;
  }
  d.embeddings = embeddings(c, positions);
  if (positions == PositionScheme::kNone) d.embeddings.position.clear();
  for (std::int64_t i = 0; i < c.num_layers; ++i) d.layers.push_back(post_norm_layer(c, *names, i));
  if (c.disentangled) describe_disentangled(c, d);
  if (c.head == Head::kSequenceClassification) d.head = family_head(c);
  return d;
}

namespace {

std::string linear_summary(const LinearDesc& l) {
  std::string parts;
  if (l.parts.size() > 1) {
    for (const std::string& p : l.parts) {
      const auto dot = p.rfind('.');
      parts += (parts.empty() ? " = " : " + ") + (dot == std::string::npos ? p : p.substr(dot + 1));
    }
  }
  return fmt::format(
      "{}→{}{}{}{}{}", l.in, l.out(),
      l.activation == Activation::kNone ? "" : fmt::format(" {}", activation_name(l.activation)),
      l.gated ? fmt::format(" gated → {}", l.out_after()) : "", l.bias ? "" : " (no bias)", parts);
}

// "global in layers 0, 3, 6; window ±64 in the others; rotary bases 160000 (global), 10000".
std::string attention_summary(const std::vector<LayerDesc>& layers) {
  std::string global, rope;
  std::int64_t window = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].window == 0) {
      global += fmt::format("{}{}", global.empty() ? "" : ", ", i);
    } else {
      window = layers[i].window;
    }
  }
  const bool causal = !layers.empty() && layers.front().causal;
  std::string out = causal ? "causal, " : "";
  if (window == 0) {
    out += "global in every layer";
  } else if (causal) {
    out += fmt::format("global in layers {}, the {} keys up to the query in the others",
                       global.empty() ? "none" : global, window);
  } else {
    out += fmt::format("global in layers {}, a window of ±{} in the others",
                       global.empty() ? "none" : global, window / 2);
  }
  double global_theta = 0, local_theta = 0;
  for (const LayerDesc& l : layers) (l.window == 0 ? global_theta : local_theta) = l.rope_theta;
  if (global_theta > 0 || local_theta > 0) {
    out += fmt::format("; rotary base {}", global_theta > 0 ? global_theta : local_theta);
    if (window != 0 && global_theta > 0) out += fmt::format(" (global), {} (window)", local_theta);
  }
  return out;
}

}  // namespace

std::vector<std::string> EncoderDesc::summary() const {
  std::vector<std::string> lines;
  const LayerDesc first = layers.empty() ? LayerDesc{} : layers.front();
  const NormKind norm_kind = first.ffn_norm.kind;
  lines.push_back(fmt::format(
      "{}: hidden {}, {} layers, {} heads × {}{}, FFN {}, {}-norm{}", family, hidden, layers.size(),
      heads, head_dim(),
      first.kv_heads != first.heads ? fmt::format(" ({} key-value heads)", first.kv_heads) : "",
      intermediate, kNormPlacementNames.name(first.norm_placement),
      norm_kind == NormKind::kLayerNorm ? ""
                                        : fmt::format(" ({})", kNormKindNames.name(norm_kind))));
  const EmbeddingDesc& e = embeddings;
  lines.push_back(
      fmt::format("embeddings: word [{}, {}], positions {}{}, token types {}{}{}", e.vocab, e.width,
                  kPositionSchemeNames.name(e.positions),
                  e.positions == PositionScheme::kNone || e.positions == PositionScheme::kRotary
                      ? ""
                      : fmt::format(" [{}, {}]", e.max_positions, e.width),
                  e.token_type.empty() ? "none" : fmt::format("[{}, {}]", e.type_vocab, e.width),
                  e.projection ? fmt::format(", projection {}", linear_summary(*e.projection)) : "",
                  e.scale != 1 ? fmt::format(", scaled by {}", e.scale) : ""));
  if (relative_bias) {
    lines.push_back(fmt::format(
        "relative attention bias: {} buckets ({} per direction, exact below {}, log-spaced to {}), "
        "one [{}, {}] table added in every layer",
        relative_bias->buckets, relative_bias->buckets / 2, relative_bias->buckets / 4,
        relative_bias->max_distance, relative_bias->table_rows, heads));
  }
  if (disentangled) {
    const DisentangledDesc& r = *disentangled;
    lines.push_back(fmt::format(
        "disentangled attention: {}{}; table [{}, {}]{}; distances {}; scores / √(d · {})",
        r.c2p ? "c2p" : "", r.c2p && r.p2c ? " + p2c" : (r.p2c ? "p2c" : ""), r.rows(), hidden,
        r.norm ? " LayerNormed" : "",
        r.buckets > 0
            ? fmt::format("exact below {}, log-bucketed to {}", r.buckets / 2, r.max_relative)
            : fmt::format("clamped to ±{}", r.span),
        score_terms));
  }
  if (!layers.empty()) {
    std::string gemms;
    for (const GemmDesc& g : layers.front().gemms)
      gemms += fmt::format("{}{} {}", gemms.empty() ? "" : "; ", gemm_key({0, g.slot}).substr(2),
                           linear_summary(g.linear));
    lines.push_back(
        fmt::format("layer ×{}: {} heads; GEMMs: {}", layers.size(), layers.front().heads, gemms));
    std::string extras;
    if (first.query_norm.present()) extras += "; q/k RMSNorm per head";
    if (first.post_attention_norm.present()) extras += "; norms after each block too";
    if (first.score_scale > 0) extras += fmt::format("; scores × {}", first.score_scale);
    lines.push_back("attention: " + attention_summary(layers) + extras);
  }
  if (final_norm.present()) lines.push_back(fmt::format("final norm: {}", final_norm.name));
  if (head) {
    lines.push_back(
        fmt::format("head: {}, {}{}out {}", kHeadPoolingNames.name(head->pooling),
                    head->dense ? fmt::format("dense {}, ", linear_summary(*head->dense)) : "",
                    head->norm.present() ? "LayerNorm, " : "", linear_summary(head->out)));
  }
  if (mlm_head) {
    lines.push_back(fmt::format(
        "MLM head: transform {}, LayerNorm, decoder tied to the word embeddings [{} x {}] + {}",
        linear_summary(mlm_head->transform), mlm_head->vocab, hidden, mlm_head->decoder_bias));
  }
  return lines;
}

// Each family's masked-LM head, as its *ForMaskedLM class computes it: BERT's cls.predictions
// (hidden_act), RoBERTa's and XLM-R's lm_head (GELU), DistilBERT's vocab_transform (its
// activation) and vocab_layer_norm (eps 1e-12), ModernBERT's head (classifier_activation, its
// norm's bias as norm_bias says) and decoder.bias (when decoder_bias).
MlmHeadDesc describe_mlm_head(const ModelConfig& c) {
  const std::int64_t h = c.hidden_size;
  MlmHeadDesc m;
  m.vocab = c.vocab_size;
  auto head = [&](const char* dense, Activation act, const char* norm, float eps, const char* bias,
                  const char* untied) {
    m.transform = linear({dense}, h, h, act, false);
    m.norm = {norm, h, eps};
    m.decoder_bias = bias;
    m.untied_decoder = untied;
  };
  switch (c.family) {
    case Family::kBert:
      head("cls.predictions.transform.dense", c.hidden_act, "cls.predictions.transform.LayerNorm",
           c.layer_norm_eps, "cls.predictions.bias", "cls.predictions.decoder.weight");
      return m;
    case Family::kRoberta:
      head("lm_head.dense", Activation::kGeluErf, "lm_head.layer_norm", c.layer_norm_eps,
           "lm_head.bias", "lm_head.decoder.weight");
      return m;
    case Family::kDistilBert:
      head("vocab_transform", c.hidden_act, "vocab_layer_norm", 1e-12f, "vocab_projector.bias",
           "vocab_projector.weight");
      return m;
    case Family::kModernBert: {
      const ModernBertConfig& mb = *c.modernbert;
      head("head.dense", mb.classifier_act, "head.norm", c.layer_norm_eps,
           mb.decoder_bias ? "decoder.bias" : "", "decoder.weight");
      m.transform.bias = mb.classifier_bias;
      m.norm.bias = mb.norm_bias;
      return m;
    }
    default:
      break;
  }
  fail(
      "config.json: field 'model_type': a masked-LM head on {} is not supported (BERT, RoBERTa, "
      "XLM-R, CamemBERT, DistilBERT and ModernBERT heads)",
      c.family_name());
}

float EncoderDesc::score_scale(const LayerDesc& layer) const {
  if (layer.score_scale > 0) return layer.score_scale;
  return 1.0f / std::sqrt(static_cast<float>(layer.head_dim * score_terms));
}

std::int64_t relative_index(std::int64_t delta, const DisentangledDesc& desc) {
  std::int64_t bucket = delta;
  const std::int64_t mid = desc.buckets / 2;
  if (desc.buckets > 0 && (delta >= mid || delta <= -mid)) {
    // |delta| ≥ mid: ceil(log(|delta| / mid) / log((max − 1) / mid) · (mid − 1)) + mid, each
    // step a float32 op as in torch (the Python float (max − 1) / mid becomes a float32 tensor).
    const std::int64_t magnitude = delta < 0 ? -delta : delta;
    const float ratio = static_cast<float>(magnitude) / static_cast<float>(mid);
    const auto base =
        static_cast<float>(static_cast<double>(desc.max_relative - 1) / static_cast<double>(mid));
    const float scaled = std::log(ratio) / std::log(base) * static_cast<float>(mid - 1);
    // magnitude == mid stays exact (torch's where picks the distance itself there).
    const std::int64_t log_bucket =
        magnitude == mid ? mid : static_cast<std::int64_t>(std::ceil(scaled)) + mid;
    bucket = delta < 0 ? -log_bucket : log_bucket;
  }
  const std::int64_t index = bucket + desc.span;
  return index < 0 ? 0 : (index >= 2 * desc.span ? 2 * desc.span - 1 : index);
}

void relative_index_by_distance(const DisentangledDesc& desc, std::int64_t max_len,
                                std::vector<std::int32_t>& out) {
  out.resize(static_cast<std::size_t>(2 * max_len - 1));
  for (std::int64_t delta = -(max_len - 1); delta <= max_len - 1; ++delta)
    out[static_cast<std::size_t>(delta + max_len - 1)] =
        static_cast<std::int32_t>(relative_index(delta, desc));
}

std::int64_t relative_bucket(std::int64_t relative, const RelativeBiasDesc& desc) {
  // transformers: n = −relative; half the buckets per sign; exact below a quarter; beyond,
  // max_exact + trunc(log(n / max_exact) / log(max_distance / max_exact) · (half − max_exact)),
  // in float32 (the division by the Python float log is a float32 op).
  const std::int64_t half = desc.buckets / 2, exact = half / 2;
  std::int64_t n = -relative;
  std::int64_t bucket = n < 0 ? half : 0;
  n = n < 0 ? -n : n;
  if (n < exact) return bucket + n;
  const float ratio = static_cast<float>(n) / static_cast<float>(exact);
  const auto denominator = static_cast<float>(
      std::log(static_cast<double>(desc.max_distance) / static_cast<double>(exact)));
  const float scaled = std::log(ratio) / denominator * static_cast<float>(half - exact);
  const std::int64_t large = exact + static_cast<std::int64_t>(scaled);
  return bucket + (large < half - 1 ? large : half - 1);
}

void relative_bias_by_distance(const RelativeBiasDesc& desc, const float* table, std::int64_t heads,
                               std::int64_t max_len, std::vector<float>& out) {
  const std::int64_t span = 2 * max_len - 1;
  out.resize(static_cast<std::size_t>(heads * span));
  for (std::int64_t r = -(max_len - 1); r <= max_len - 1; ++r) {
    const std::int64_t bucket = relative_bucket(r, desc);
    for (std::int64_t h = 0; h < heads; ++h)
      out[static_cast<std::size_t>(h * span + (max_len - 1) + r)] = table[bucket * heads + h];
  }
}

}  // namespace mcinfer::model
