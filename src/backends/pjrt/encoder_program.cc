#include "backends/pjrt/encoder_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <optional>

#include "backends/pjrt/attention_program.h"
#include "core/error.h"

namespace mcinfer::pjrt {
namespace {

using model::Activation;
using model::EncoderDesc;
using model::GemmSlot;

// Whether the embeddings add a learned (or DistilBERT's fixed) position table.
bool position_table(const model::EmbeddingDesc& e) {
  return e.positions != model::PositionScheme::kNone &&
         e.positions != model::PositionScheme::kRotary;
}

struct LinearParams {
  Value weight;
  std::optional<Value> bias;
  Activation activation = Activation::kNone;
  bool gated = false;  // LinearDesc::gated
};
struct NormParams {
  Value gamma;
  std::optional<Value> beta;  // none without a shift (NormDesc::bias)
  float eps = 1e-12f;
  bool rms = false;  // RMSNorm (NormKind::kRms): no centering, no shift
};
// One layer's weights as the program takes them (weight_slots' order).
struct LayerParams {
  std::array<std::optional<LinearParams>, model::kGemmSlots> gemms;
  // By model::NormSlot: none where the layer has none (ModernBERT's first attention norm).
  std::array<std::optional<NormParams>, model::kNormSlots> norms;
  std::optional<LinearParams> position_key, position_query;  // DeBERTa-v2
  const std::optional<NormParams>& norm(model::NormSlot slot) const {
    return norms[static_cast<std::size_t>(slot)];
  }
  const LinearParams& gemm(GemmSlot slot) const {
    const auto& g = gemms[static_cast<std::size_t>(slot)];
    if (!g) fail("internal: the layer has no {} GEMM", model::gemm_label({0, slot}));
    return *g;
  }
};

// The forward pass, written op by op from the description; `b`, `l`, `h` are the batch, length
// and hidden size.
class EncoderWriter {
 public:
  EncoderWriter(const EncoderDesc& desc, const ProgramSpec& spec)
      : d_(desc), spec_(spec), b_(spec.batch), l_(spec.length), h_(desc.hidden) {}

  std::string write(const std::vector<WeightSlot>& slots) {
    std::vector<Value> weights;
    for (const WeightSlot& slot : slots)
      weights.push_back(p_.parameter(slot.dims, slot.gemm && bf16() ? DType::kBf16 : DType::kF32));
    next_ = weights.begin();
    end_ = all_end_ = weights.end();
    // A looped program's per-layer weights are the stacked slots (weight_slots names them).
    layer_slots_ =
        static_cast<std::size_t>(std::count_if(slots.begin(), slots.end(), [](const WeightSlot& s) {
          return s.name.rfind("layers.", 0) == 0;
        }));
    const bool types = !d_.embeddings.token_type.empty();
    const Value ids = p_.parameter({b_, l_}, DType::kS32);
    const Value type_ids = types ? p_.parameter({b_, l_}, DType::kS32) : Value{};
    const Value positions = p_.parameter({b_, l_}, DType::kS32);
    const Value lengths = p_.parameter({b_}, DType::kS32);
    lengths_ = lengths;
    ids_ = ids;
    positions_ = positions;
    // MPNet's bucket or DeBERTa's table row of every (query, key) pair.
    const bool pairs = d_.relative_bias || d_.disentangled;
    const Value buckets = pairs ? p_.parameter({l_, l_}, DType::kS32) : Value{};

    Value x = embeddings(ids, type_ids, positions);  // [b, l, h]
    // Added to every full-attention layer's scaled scores [b, heads, l, l]: the key mask (and the
    // relative position bias, which depends on the positions only). Not written when every layer
    // runs as a band, so that such a program holds no [l, l] tensor at all.
    Value mask;
    const auto full = [&](const model::LayerDesc& layer) { return !band(layer); };
    if (std::any_of(d_.layers.begin(), d_.layers.end(), full)) mask = key_mask(lengths);
    if (d_.relative_bias) mask = p_.binary("add", mask, relative_bias(buckets));
    if (d_.disentangled) {
      relative_table_ = weight();
      if (d_.disentangled->norm)
        relative_table_ = layer_norm(relative_table_, take_norm(*d_.disentangled->norm));
      relative_index_ = buckets;
    }
    x = layers(x, mask);
    if (d_.final_norm.present()) x = layer_norm(x, take_norm(d_.final_norm));
    std::vector<Value> results;
    if (spec_.hidden) results.push_back(x);
    if (spec_.logits) results.push_back(head(x));
    if (spec_.sparse) results.push_back(splade(x, *spec_.sparse));
    // Without logits the head's weights stay unused parameters (one upload serves every task).
    if ((spec_.logits || spec_.sparse) && next_ != end_)
      fail("internal: the program took fewer weights than it was given");
    return p_.module(results);
  }

 private:
  bool bf16() const { return spec_.precision == model::Precision::kBf16; }
  const Value& weight() {
    if (next_ == end_) fail("internal: the program needs more weights than it was given");
    return *next_++;
  }
  LinearParams take_linear(const model::LinearDesc& desc) {
    LinearParams l{weight(), std::nullopt, desc.activation, desc.gated};
    if (desc.bias) l.bias = weight();
    return l;
  }
  NormParams take_norm(const model::NormDesc& desc) {
    NormParams n{weight(), std::nullopt, desc.eps, desc.kind != model::NormKind::kLayerNorm};
    // Gemma's RMSNorm scales by (1 + w), added in float32 as its forward pass adds it.
    if (desc.kind == model::NormKind::kRmsOffset)
      n.gamma = p_.binary("add", n.gamma, p_.splat(1.0f, n.gamma.dims));
    if (desc.bias) n.beta = weight();
    return n;
  }
  LayerParams take_layer(const model::LayerDesc& desc) {
    LayerParams layer;
    for (const model::GemmDesc& g : desc.gemms)
      layer.gemms[static_cast<std::size_t>(g.slot)] = take_linear(g.linear);
    for (const auto& [slot, name] : model::kNormSlotNames.entries)
      if (desc.norm(slot).present())
        layer.norms[static_cast<std::size_t>(slot)] = take_norm(desc.norm(slot));
    if (desc.position_key) layer.position_key = take_linear(*desc.position_key);
    if (desc.position_query) layer.position_query = take_linear(*desc.position_query);
    return layer;
  }

  Value embeddings(const Value& ids, const Value& types, const Value& positions) {
    word_embeddings_ = weight();
    Value x = p_.gather_rows(word_embeddings_, ids);
    // Gemma: the token embeddings times √hidden.
    if (d_.embeddings.scale != 1)
      x = p_.binary("multiply", x, p_.splat(d_.embeddings.scale, x.dims));
    if (position_table(d_.embeddings)) x = p_.binary("add", x, p_.gather_rows(weight(), positions));
    if (!d_.embeddings.token_type.empty()) x = p_.binary("add", x, p_.gather_rows(weight(), types));
    if (d_.embeddings.norm.present()) x = layer_norm(x, take_norm(d_.embeddings.norm));
    if (d_.embeddings.projection) x = linear(x, take_linear(*d_.embeddings.projection));
    return x;
  }

  // table [rows, heads] at the host's buckets [l, l] → [b, heads, l, l].
  Value relative_bias(const Value& buckets) {
    const Value by_pair = p_.gather_rows(weight(), buckets);  // [l, l, heads]
    const Value by_head = p_.transpose(by_pair, {2, 0, 1});
    return p_.broadcast(by_head, {b_, d_.heads, l_, l_}, {1, 2, 3});
  }

  // The layers: unrolled over per-layer weights, or (spec.loop_layers) one loop whose body is
  // one layer, over the weights stacked [layers, ...] (weight_slots).
  Value layers(Value x, const Value& mask) {
    const auto count = static_cast<std::int64_t>(d_.layers.size());
    if (!spec_.loop_layers) {
      for (const model::LayerDesc& layer : d_.layers)
        x = encoder_layer(x, mask, layer, take_layer(layer));
      return x;
    }
    const std::size_t per_layer = layer_slots_;
    // Carried through the loop: x, the mask, DeBERTa's table and pair indices, the weights.
    std::vector<Value> carried = {x, mask};
    if (d_.disentangled) carried.insert(carried.end(), {relative_table_, relative_index_});
    const std::size_t first_weight = carried.size();
    for (std::size_t k = 0; k < per_layer; ++k) carried.push_back(weight());
    const auto after_layers = next_;
    const Value table = relative_table_, pairs = relative_index_;
    const auto body = [&](const Value& index, const std::vector<Value>& in) {
      std::vector<Value> layer;  // this trip's weights, in weight_slots order
      for (std::size_t k = 0; k < per_layer; ++k)
        layer.push_back(p_.index_first(in[first_weight + k], index));
      next_ = layer.begin();
      end_ = layer.end();
      if (d_.disentangled) {
        relative_table_ = in[2];
        relative_index_ = in[3];
      }
      std::vector<Value> next(in);
      next[0] = encoder_layer(in[0], in[1], d_.layers.front(), take_layer(d_.layers.front()));
      if (next_ != end_) fail("internal: a layer took fewer weights than it was given");
      return next;
    };
    const Value out = p_.loop(count, carried, body).front();
    relative_table_ = table;
    relative_index_ = pairs;
    next_ = after_layers;
    end_ = all_end_;
    return out;
  }

  // Additive mask on the scores [b, heads, lq, lk]: key k of sequence s counts when k < length[s].
  Value key_mask(const Value& lengths) {
    const Dims dims{b_, d_.heads, l_, l_};
    const Value key = p_.iota(dims, 3);
    const Value limit = p_.broadcast(lengths, dims, {0});
    // A large finite negative, as transformers adds finfo.min: exp underflows to exactly 0.
    return p_.select(p_.compare("LT", key, limit), p_.splat(0.0f, dims), p_.splat(-1e30f, dims));
  }

  // act(x [.., in] · Wᵀ + bias): W [out, in]. A bf16 weight takes inputs rounded to bf16, with
  // f32 sums.
  Value linear(const Value& x, const LinearParams& l) {
    const Value in = l.weight.type == DType::kBf16 ? p_.convert(x, DType::kBf16) : x;
    const auto last = static_cast<std::int64_t>(x.dims.size()) - 1;
    Value y = p_.dot(in, l.weight, {}, {}, {last}, {1}, DType::kF32);
    if (l.bias) y = p_.binary("add", y, p_.broadcast(*l.bias, y.dims, {last}));
    if (!l.gated) return activation(y, l.activation);
    // [a | g] → activation(a) · g, as transformers' Wi(x).chunk(2, -1).
    Dims half = y.dims, start(y.dims.size(), 0);
    half.back() /= 2;
    start.back() = half.back();
    const Value gate = p_.slice(y, start, y.dims);
    return p_.binary("multiply",
                     activation(p_.slice(y, Dims(y.dims.size(), 0), half), l.activation), gate);
  }

  Value layer_norm(const Value& x, const NormParams& n) {
    const auto last = static_cast<std::int64_t>(x.dims.size()) - 1;
    Dims rows = x.dims;
    rows.pop_back();
    Dims keep;
    for (std::int64_t i = 0; i < last; ++i) keep.push_back(i);
    const float inv_n = 1.0f / static_cast<float>(x.dims.back());
    auto row_mean = [&](const Value& v) {
      return p_.broadcast(p_.binary("multiply", p_.reduce(v, "add", {last}), p_.splat(inv_n, rows)),
                          x.dims, keep);
    };
    // RMSNorm: x / √(mean(x²) + eps) · gamma (no centering, no shift).
    const Value centered = n.rms ? x : p_.binary("subtract", x, row_mean(x));
    const Value variance = row_mean(p_.binary("multiply", centered, centered));
    const Value scale = p_.unary("rsqrt", p_.binary("add", variance, p_.splat(n.eps, x.dims)));
    const Value normed = p_.binary("multiply", centered, scale);
    const Value scaled = p_.binary("multiply", normed, p_.broadcast(n.gamma, x.dims, {last}));
    if (!n.beta) return scaled;
    return p_.binary("add", scaled, p_.broadcast(*n.beta, x.dims, {last}));
  }
  Value activation(const Value& x, Activation act) {
    switch (act) {
      case Activation::kNone:
        return x;
      case Activation::kRelu:
        return p_.binary("maximum", x, p_.splat(0.0f, x.dims));
      case Activation::kTanh:
        return p_.unary("tanh", x);
      case Activation::kSilu:
        return p_.binary("multiply", x, p_.unary("logistic", x));
      case Activation::kGeluErf: {
        // 0.5·x·(1 + erf(x/√2))
        const Value e = p_.unary(
            "erf", p_.binary("multiply", x, p_.splat(static_cast<float>(M_SQRT1_2), x.dims)));
        const Value half_x = p_.binary("multiply", x, p_.splat(0.5f, x.dims));
        return p_.binary("multiply", half_x, p_.binary("add", e, p_.splat(1.0f, x.dims)));
      }
      case Activation::kGeluTanh: {
        // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
        const Value x3 = p_.binary("multiply", p_.binary("multiply", x, x), x);
        const Value inner =
            p_.binary("add", x, p_.binary("multiply", x3, p_.splat(0.044715f, x.dims)));
        const Value t = p_.unary(
            "tanh", p_.binary("multiply", inner,
                              p_.splat(static_cast<float>(std::sqrt(2.0 / M_PI)), x.dims)));
        const Value half_x = p_.binary("multiply", x, p_.splat(0.5f, x.dims));
        return p_.binary("multiply", half_x, p_.binary("add", t, p_.splat(1.0f, x.dims)));
      }
    }
    fail("internal: activation {} has no StableHLO form", model::activation_name(act));
  }

  // DeBERTa's c2p (of_queries: q_i · key[t]) or p2c (k_j · query[t]) term of the scores
  // [b, heads, l, l], t = the host's table row of (i, j): rows [b, heads, l, d] times the table
  // projected by `projection` [rows, h], then gathered by t along the last axis.
  Value relative_term(const Value& rows, const LinearParams& projection, bool of_queries,
                      DType product) {
    const std::int64_t heads = d_.heads, dim = d_.head_dim(), r = d_.disentangled->rows();
    const Value table = p_.convert(
        p_.transpose(p_.reshape(linear(relative_table_, projection), {r, heads, dim}), {1, 0, 2}),
        product);                                                               // [heads, r, d]
    const Value by_row = p_.dot(rows, table, {1}, {0}, {3}, {2}, DType::kF32);  // [heads, b, l, r]
    const Value products = p_.transpose(by_row, {1, 0, 2, 3});                  // [b, heads, l, r]
    // Flat position of products[b, h, row, t]: ((b·heads + h)·l + row)·r + t, with row = i for
    // c2p and j for p2c.
    const Dims dims{b_, heads, l_, l_};
    auto times = [&](const Value& v, std::int64_t k) {
      return p_.binary("multiply", v, p_.splat(static_cast<float>(k), dims, DType::kS32));
    };
    const Value sequence_head = p_.binary("add", times(p_.iota(dims, 0, DType::kS32), heads),
                                          p_.iota(dims, 1, DType::kS32));
    const Value row = p_.iota(dims, of_queries ? 2 : 3, DType::kS32);
    const Value flat = p_.binary("add", times(p_.binary("add", times(sequence_head, l_), row), r),
                                 p_.broadcast(relative_index_, dims, {2, 3}));
    const Value column = p_.reshape(products, {b_ * heads * l_ * r, 1});
    return p_.reshape(p_.gather_rows(column, flat), dims);
  }

  // The fused QKV projection, then softmax(Q Kᵀ / √d + mask) V per head (DeBERTa: plus its
  // relative terms, over √(d · terms)); rotary positions turn Q and K first, and a windowed
  // layer scores a band (attention_program.h).
  Value attention(const Value& x, const Value& mask, const model::LayerDesc& layer,
                  const LayerParams& w) {
    const DType product = bf16() ? DType::kBf16 : DType::kF32;
    const Value fused = linear(x, w.gemm(GemmSlot::kQkv));  // [b, l, 3h]
    const std::int64_t heads = layer.heads, dim = layer.head_dim;
    const std::int64_t width = layer.query_width(), kv = layer.kv_width();
    // The fused rows are [queries | keys | values]; a part as [b, heads, l, d], its per-head
    // norm applied and rotated in f32 before the product's type.
    auto part = [&](std::int64_t first, std::int64_t part_heads, const NormParams* norm,
                    bool rotate) {
      Value rows = p_.reshape(p_.slice(fused, {0, 0, first}, {b_, l_, first + part_heads * dim}),
                              {b_, l_, part_heads, dim});
      if (norm) rows = layer_norm(rows, *norm);
      if (rotate) rows = apply_rotary(p_, rows, rotary(layer.rope_theta, dim));
      Value by_head = p_.convert(p_.transpose(rows, {0, 2, 1, 3}), product);
      if (part_heads == heads) return by_head;
      // Grouped-query attention: key-value head g serves query heads g·group … (g + 1)·group − 1.
      const std::int64_t group = heads / part_heads;
      return p_.reshape(p_.broadcast(by_head, {b_, part_heads, group, l_, dim}, {0, 1, 3, 4}),
                        {b_, heads, l_, dim});
    };
    const bool rotate = d_.embeddings.positions == model::PositionScheme::kRotary;
    const auto& query_norm = w.norm(model::NormSlot::kQuery);
    const auto& key_norm = w.norm(model::NormSlot::kKey);
    const Value q = part(0, heads, query_norm ? &*query_norm : nullptr, rotate);
    const Value k = part(width, layer.kv_heads, key_norm ? &*key_norm : nullptr, rotate);
    const Value v = part(width + kv, layer.kv_heads, nullptr, false);
    const float scale = d_.score_scale(layer);
    if (band(layer)) {
      const Value context =
          banded_attention(p_, q, k, v, band_mask(layer.window), layer.window, scale);
      return p_.reshape(p_.transpose(context, {0, 2, 1, 3}), {b_, l_, width});
    }
    const Dims score_dims{b_, heads, l_, l_};
    Value scores = p_.dot(q, k, {0, 1}, {0, 1}, {3}, {3}, DType::kF32);  // [b, heads, lq, lk]
    if (w.position_key)
      scores = p_.binary("add", scores, relative_term(q, *w.position_key, true, product));
    if (w.position_query)
      scores = p_.binary("add", scores, relative_term(k, *w.position_query, false, product));
    scores = p_.binary("multiply", scores, p_.splat(scale, score_dims));
    scores = p_.binary("add", scores, layer.causal ? causal_mask(mask, layer.window) : mask);
    const Value probs = softmax_last(p_, scores, product);
    const Value context = p_.dot(probs, v, {0, 1}, {0, 1}, {3}, {2}, DType::kF32);  // [b,h,l,d]
    return p_.reshape(p_.transpose(context, {0, 2, 1, 3}), {b_, l_, width});
  }

  // Whether a layer scores a band (a bidirectional window shorter than the rows); causal layers
  // score [l, l] under causal_mask.
  bool band(const model::LayerDesc& layer) const {
    return !layer.causal && banded(layer.window, l_);
  }
  // The key mask plus a causal one: key j counts for query i when j ≤ i (and, with a window,
  // i − j < window). Written once per window and shared by its layers.
  const Value& causal_mask(const Value& mask, std::int64_t window) {
    auto it = causal_masks_.find(window);
    if (it != causal_masks_.end()) return it->second;
    const Dims dims{b_, d_.heads, l_, l_};
    const Value query = p_.iota(dims, 2), key = p_.iota(dims, 3);
    Value allowed = p_.compare("LE", key, query);
    if (window > 0) {
      const Value distance = p_.binary("subtract", query, key);
      allowed = p_.binary(
          "and", allowed,
          p_.compare("LT", distance, p_.splat(static_cast<float>(window), dims, DType::kS32)));
    }
    const Value causal = p_.select(allowed, p_.splat(0.0f, dims), p_.splat(-1e30f, dims));
    return causal_masks_.emplace(window, p_.binary("add", mask, causal)).first->second;
  }

  // The cos and sin of a rotary base, written once and shared by its layers.
  const RotaryAngles& rotary(double theta, std::int64_t head_dim) {
    auto it = rotary_.find(theta);
    if (it == rotary_.end())
      it = rotary_.emplace(theta, rotary_angles(p_, positions_, theta, head_dim)).first;
    return it->second;
  }
  // The band's mask of a window, written once and shared by its layers.
  const Value& band_mask(std::int64_t window) {
    auto it = band_masks_.find(window);
    if (it == band_masks_.end())
      it = band_masks_.emplace(window, pjrt::band_mask(p_, lengths_, l_, window)).first;
    return it->second;
  }

  // Post-norm: x = LN(x + attention(x)), then x = LN(x + FFN(x)). Pre-norm: x += attention(LN(x)),
  // then x += FFN(LN(x)), the attention's LN absent in ModernBERT's first layer.
  Value encoder_layer(const Value& x, const Value& mask, const model::LayerDesc& layer,
                      const LayerParams& w) {
    using model::NormSlot;
    const auto& attention_norm = w.norm(NormSlot::kAttention);
    const NormParams& ffn_norm = *w.norm(NormSlot::kFfn);
    if (layer.norm_placement == model::NormPlacement::kPre) {
      const Value in = attention_norm ? layer_norm(x, *attention_norm) : x;
      Value attended = linear(attention(in, mask, layer, w), w.gemm(GemmSlot::kAttnOut));
      if (const auto& post = w.norm(NormSlot::kPostAttention))
        attended = layer_norm(attended, *post);
      const Value x1 = p_.binary("add", x, attended);
      const Value inner = linear(layer_norm(x1, ffn_norm), w.gemm(GemmSlot::kFfnIn));
      Value out = linear(inner, w.gemm(GemmSlot::kFfnOut));
      if (const auto& post = w.norm(NormSlot::kPostFfn)) out = layer_norm(out, *post);
      return p_.binary("add", x1, out);
    }
    const Value attended = linear(attention(x, mask, layer, w), w.gemm(GemmSlot::kAttnOut));
    const Value x1 = layer_norm(p_.binary("add", attended, x), *attention_norm);
    const Value inner = linear(x1, w.gemm(GemmSlot::kFfnIn));
    return layer_norm(p_.binary("add", linear(inner, w.gemm(GemmSlot::kFfnOut)), x1), ffn_norm);
  }

  // Each sequence's first token, or (HeadDesc::mean_pooling) the mean of its real tokens, through
  // dense + activation (+ ModernBERT's norm), then the projection.
  Value head(const Value& x) {
    Value pooled;
    switch (d_.head->pooling) {
      case model::HeadPooling::kMean:
        pooled = mean_of_tokens(x);
        break;
      case model::HeadPooling::kFirst:
        pooled = p_.reshape(p_.slice(x, {0, 0, 0}, {b_, 1, h_}), {b_, h_});
        break;
      case model::HeadPooling::kLastNonPad:
        pooled = last_non_pad(x);
        break;
    }
    std::optional<LinearParams> dense;
    if (d_.head->dense) dense = take_linear(*d_.head->dense);
    std::optional<NormParams> norm;
    if (d_.head->norm.present()) norm = take_norm(d_.head->norm);
    const LinearParams out = take_linear(d_.head->out);
    Value y = dense ? linear(pooled, *dense) : pooled;
    if (norm) y = layer_norm(y, *norm);
    return linear(y, out);
  }

  // SpladePooling of the MLM head's logits: per real token, transform + activation and its norm,
  // then the logits against the word embeddings (+ the decoder's bias), log1p(relu) (twice for
  // log1p_relu), pooled by max or sum over the sequence: [b, vocab]. The logits are made `step`
  // positions at a time in a loop (position-major slices of the transformed tokens), each folded
  // into the pooled rows, so no [b, l, vocab] tensor exists; a masked position adds 0, which max
  // pooling ignores too (every activation is ≥ 0).
  Value splade(const Value& x, const model::SparseSpec& spec) {
    const model::MlmHeadDesc& m = *d_.mlm_head;
    const LinearParams transform = take_linear(m.transform);
    const NormParams norm = take_norm(m.norm);
    const std::optional<Value> bias =
        m.decoder_bias.empty() ? std::nullopt : std::optional<Value>(weight());
    const std::int64_t vocab = word_embeddings_.dims[0];
    const std::int64_t step = std::gcd(l_, kSparsePositionsPerTrip);
    const std::int64_t trips = l_ / step;
    const Value y = layer_norm(linear(x, transform), norm);  // [b, l, h]
    const Value by_step =
        p_.reshape(p_.transpose(y, {1, 0, 2}), {trips, step, b_, h_});  // [trips, step, b, h]
    const Dims positions{l_, b_};
    const Value real =
        p_.compare("LT", p_.iota(positions, 0), p_.broadcast(lengths_, positions, {1}));
    const Value keep = p_.reshape(
        p_.select(real, p_.splat(1.0f, positions), p_.splat(0.0f, positions)), {trips, step, b_});
    const Value zero_bias = p_.splat(0.0f, {vocab});
    const std::vector<Value> carried{p_.splat(0.0f, {b_, vocab}), by_step, keep, word_embeddings_,
                                     bias.value_or(zero_bias)};
    const bool max_pool = spec.pooling == model::SpladePooling::kMax;
    const auto body = [&](const Value& index, const std::vector<Value>& in) {
      const Value tokens = p_.index_first(in[1], index);  // [step, b, h]
      const Dims dims{step, b_, vocab};
      Value logits = p_.dot(tokens, in[3], {}, {}, {2}, {1}, DType::kF32);
      logits = p_.binary("add", logits, p_.broadcast(in[4], dims, {2}));
      Value w = p_.unary("log_plus_one", p_.binary("maximum", logits, p_.splat(0.0f, dims)));
      if (spec.activation == model::SpladeActivation::kLog1pRelu) w = p_.unary("log_plus_one", w);
      w = p_.binary("multiply", w, p_.broadcast(p_.index_first(in[2], index), dims, {0, 1}));
      const Value pooled = p_.reduce(w, max_pool ? "maximum" : "add", {0});
      std::vector<Value> next(in);
      next[0] = p_.binary(max_pool ? "maximum" : "add", in[0], pooled);
      return next;
    };
    return p_.loop(trips, carried, body).front();
  }

  // x [b, l, h] at each sequence's last real token whose id is not the pad id (transformers'
  // argmax of index · (id ≠ pad): the first token when every one is the pad): [b, h].
  Value last_non_pad(const Value& x) {
    const Dims rows{b_, l_};
    const Value index = p_.iota(rows, 1);
    Value counts = p_.compare("LT", index, p_.broadcast(lengths_, rows, {0}));
    if (d_.head->pad_id >= 0) {
      const Value pad = p_.splat(static_cast<float>(d_.head->pad_id), rows, DType::kS32);
      counts = p_.binary("and", counts, p_.compare("NE", ids_, pad));
    }
    const Value at = p_.convert(index, DType::kF32);
    const Value last = p_.reduce(p_.select(counts, at, p_.splat(0.0f, rows)), "maximum", {1});
    const Dims dims{b_, l_, h_};
    const Value pick =
        p_.compare("EQ", p_.broadcast(at, dims, {0, 1}), p_.broadcast(last, dims, {0}));
    return p_.reduce(p_.select(pick, x, p_.splat(0.0f, dims)), "add", {1});
  }

  // x [b, l, h] summed over each sequence's tokens below its length, over that length: [b, h].
  Value mean_of_tokens(const Value& x) {
    const Dims dims{b_, l_, h_};
    const Value real = p_.compare("LT", p_.iota(dims, 1), p_.broadcast(lengths_, dims, {0}));
    const Value sum = p_.reduce(p_.select(real, x, p_.splat(0.0f, dims)), "add", {1});
    return p_.binary("divide", sum, p_.broadcast(p_.convert(lengths_, DType::kF32), {b_, h_}, {0}));
  }

  const EncoderDesc& d_;
  const ProgramSpec& spec_;
  const std::int64_t b_, l_, h_;
  Program p_;
  std::vector<Value>::const_iterator next_, end_, all_end_;
  std::size_t layer_slots_ = 0;
  Value relative_table_, relative_index_;     // DeBERTa: the (normed) table [rows, h], pairs [l, l]
  Value lengths_, positions_, ids_;           // the run's inputs [b], [b, l] and [b, l]
  Value word_embeddings_;                     // [vocab, width]: an MLM head's decoder too
  std::map<double, RotaryAngles> rotary_;     // by rotary base
  std::map<std::int64_t, Value> band_masks_;  // by window
  std::map<std::int64_t, Value> causal_masks_;  // by window (0: none)
};

}  // namespace

bool stacks_layers(const EncoderDesc& d, bool loop_layers) {
  const auto plain = [](const model::LayerDesc& l) { return l.window == 0 && l.rope_theta == 0; };
  return loop_layers && d.layers.front().norm_placement == model::NormPlacement::kPost &&
         std::all_of(d.layers.begin(), d.layers.end(), plain);
}

namespace {

// The steps of a description the program builder has no form for, refused by name.
void check_pjrt_runs(const EncoderDesc& d) {
  auto refuse = [&](std::string_view step) {
    fail_usage("the PJRT backend does not run {}'s step '{}' yet: use --backend cpu", d.family,
               step);
  };
  for (const model::LayerDesc& l : d.layers) {
    if (l.norm_placement != d.layers.front().norm_placement)
      refuse("pre-norm and post-norm layers in one model");
    if (l.norm_placement == model::NormPlacement::kPost &&
        (l.post_attention_norm.present() || l.post_ffn_norm.present()))
      refuse("a post-norm layer's norm on a block's output");
  }
}

}  // namespace

std::vector<WeightSlot> weight_slots(const EncoderDesc& d, bool head, bool stacked) {
  // Every model reaches the program through its slots: what the program cannot build is refused
  // here, by what it lacks.
  check_pjrt_runs(d);
  const auto windowed = [](const model::LayerDesc& l) { return l.window > 0; };
  if ((d.relative_bias || d.disentangled) &&
      std::any_of(d.layers.begin(), d.layers.end(), windowed)) {
    fail_usage(
        "the PJRT backend does not run {} with a sliding window over relative position terms (its "
        "band scores no relative bias): use --backend cpu",
        d.family);
  }
  if (stacked && !stacks_layers(d, true))
    fail("internal: {}'s layers differ from each other and cannot be stacked", d.family);
  std::vector<WeightSlot> slots;
  auto add = [&](std::string name, Dims dims, bool gemm = false) {
    slots.push_back({std::move(name), std::move(dims), gemm});
  };
  auto linear = [&](const std::string& name, const model::LinearDesc& l, bool gemm,
                    const Dims& lead = {}) {
    Dims weight = lead, bias = lead;
    weight.insert(weight.end(), {l.out(), l.in});
    bias.push_back(l.out());
    add(name + ".weight", weight, gemm);
    if (l.bias) add(name + ".bias", bias);
  };
  // An absent norm takes no slot; one without a shift only its scale.
  auto norm = [&](const std::string& name, const model::NormDesc& n, const Dims& lead = {}) {
    if (!n.present()) return;
    Dims dims = lead;
    dims.push_back(n.width);
    add(name + ".weight", dims);
    if (n.bias) add(name + ".bias", dims);
  };
  const model::EmbeddingDesc& e = d.embeddings;
  add("word_embeddings", {e.vocab, e.width});
  if (position_table(e)) add("position_embeddings", {e.max_positions, e.width});
  if (!e.token_type.empty()) add("token_type_embeddings", {e.type_vocab, e.width});
  norm("embeddings.LayerNorm", e.norm);
  // The projection stays f32, as on the CPU backend.
  if (e.projection) linear("embeddings.projection", *e.projection, false);
  if (d.relative_bias) add("relative_attention_bias", {d.relative_bias->table_rows, d.heads});
  if (d.disentangled) {
    add("relative_table", {d.disentangled->rows(), d.hidden});
    if (d.disentangled->norm) norm("relative_table_norm", *d.disentangled->norm);
  }
  // Stacked: every layer's tensor of a role in one slot [layers, ...]; else a slot per layer.
  const auto n = static_cast<std::int64_t>(d.layers.size());
  for (std::int64_t i = 0; i < (stacked ? 1 : n); ++i) {
    const std::string prefix = stacked ? "layers." : fmt::format("layer.{}.", i);
    const Dims lead = stacked ? Dims{n} : Dims{};
    const model::LayerDesc& layer = d.layers[static_cast<std::size_t>(i)];
    for (const model::GemmDesc& g : layer.gemms)
      linear(prefix + model::gemm_key({0, g.slot}).substr(2), g.linear, true, lead);
    for (const auto& [slot, name] : model::kNormSlotNames.entries)
      norm(prefix + std::string(name), layer.norm(slot), lead);
    if (layer.position_key) linear(prefix + "position_key", *layer.position_key, false, lead);
    if (layer.position_query) linear(prefix + "position_query", *layer.position_query, false, lead);
  }
  norm("final_norm", d.final_norm);
  if (head) {
    if (d.head->dense) linear("head.dense", *d.head->dense, true);
    norm("head.norm", d.head->norm);
    linear("head.out", d.head->out, true);
  }
  if (d.mlm_head) {
    // The MLM head stays f32, as on the CPU backend; its decoder is the word embeddings' slot.
    if (head) fail("internal: a model with both a classification head and an MLM head");
    linear("mlm.transform", d.mlm_head->transform, false);
    norm("mlm.norm", d.mlm_head->norm);
    if (!d.mlm_head->decoder_bias.empty()) add("mlm.decoder_bias", {d.mlm_head->vocab});
  }
  return slots;
}

namespace {

using Pick = std::function<void(const model::LayerTensors&, std::vector<const model::Tensor*>&)>;

// A layer's slots in weight_slots' order, each the tensors it concatenates: a GEMM's parts
// (query, key, value) for one layer, or for every layer in layer order when stacked.
std::vector<Pick> layer_picks(const model::LayerTensors& layer) {
  std::vector<Pick> picks;
  for (std::size_t k = 0; k < layer.gemms.size(); ++k) {
    picks.push_back([k](const model::LayerTensors& l, std::vector<const model::Tensor*>& to) {
      for (const model::LinearTensors& part : l.gemms[k].parts) to.push_back(part.weight);
    });
    if (layer.gemms[k].parts.front().bias) {
      picks.push_back([k](const model::LayerTensors& l, std::vector<const model::Tensor*>& to) {
        for (const model::LinearTensors& part : l.gemms[k].parts) to.push_back(part.bias);
      });
    }
  }
  for (std::size_t n = 0; n < model::kNormSlots; ++n) {
    if (!layer.norms[n].gamma) continue;
    picks.push_back([n](const model::LayerTensors& l, std::vector<const model::Tensor*>& to) {
      to.push_back(l.norms[n].gamma);
    });
    if (!layer.norms[n].beta) continue;
    picks.push_back([n](const model::LayerTensors& l, std::vector<const model::Tensor*>& to) {
      to.push_back(l.norms[n].beta);
    });
  }
  for (auto projection :
       {&model::LayerTensors::position_key, &model::LayerTensors::position_query}) {
    if (!(layer.*projection)) continue;
    picks.push_back(
        [projection](const model::LayerTensors& l, std::vector<const model::Tensor*>& to) {
          to.push_back((l.*projection)->weight);
        });
    if ((layer.*projection)->bias) {
      picks.push_back(
          [projection](const model::LayerTensors& l, std::vector<const model::Tensor*>& to) {
            to.push_back((l.*projection)->bias);
          });
    }
  }
  return picks;
}

}  // namespace

std::vector<std::vector<const model::Tensor*>> slot_tensors(const model::ModelTensors& t, bool head,
                                                            bool stacked) {
  const EncoderDesc& d = t.desc();
  std::vector<std::vector<const model::Tensor*>> out;
  auto one = [&](const model::Tensor* tensor) { out.push_back({tensor}); };
  auto linear = [&](const model::LinearTensors& l) {
    one(l.weight);
    if (l.bias) one(l.bias);
  };
  auto norm = [&](const model::NormTensors& n) {
    if (n.gamma) one(n.gamma);
    if (n.gamma && n.beta) one(n.beta);
  };
  one(&t.word_embeddings());
  if (position_table(d.embeddings)) one(t.position_embeddings());
  if (t.token_type_embeddings()) one(t.token_type_embeddings());
  norm(t.embedding_norm());
  if (t.embedding_projection()) linear(*t.embedding_projection());
  if (t.relative_bias_table()) one(t.relative_bias_table());
  if (t.relative_table()) one(t.relative_table());
  if (const auto& n = t.relative_table_norm()) norm(*n);
  if (stacked) {
    for (const Pick& pick : layer_picks(t.layers().front())) {
      out.emplace_back();
      for (const model::LayerTensors& layer : t.layers()) pick(layer, out.back());
    }
  } else {
    for (const model::LayerTensors& layer : t.layers()) {
      for (const Pick& pick : layer_picks(layer)) {
        out.emplace_back();
        pick(layer, out.back());
      }
    }
  }
  norm(t.final_norm());
  if (head) {
    if (!t.head()) fail("internal: a head was asked of a model without one");
    if (t.head()->dense) linear(*t.head()->dense);
    norm(t.head()->norm);
    linear(t.head()->out);
  }
  if (d.mlm_head) {
    const auto& m = t.mlm_head();
    if (!m) fail("internal: an MLM head was described but its tensors were not found");
    for (const model::LinearTensors& part : m->transform.parts) linear(part);
    norm(m->norm);
    if (m->decoder_bias) one(m->decoder_bias);
  }
  return out;
}

std::string encoder_program(const EncoderDesc& desc, const std::vector<WeightSlot>& slots,
                            const ProgramSpec& spec) {
  if (spec.precision != model::Precision::kFp32 && spec.precision != model::Precision::kBf16)
    fail("internal: the PJRT program runs fp32 or bf16, not {}",
         model::precision_name(spec.precision));
  if (!spec.hidden && !spec.logits && !spec.sparse) fail("internal: a program with no output");
  if (spec.sparse && !desc.mlm_head)
    fail("internal: token weights asked of a model without an MLM head");
  return EncoderWriter(desc, spec).write(slots);
}

}  // namespace mcinfer::pjrt
