#include "backends/pjrt/encoder_program.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <functional>

#include "core/error.h"

namespace mcinfer::pjrt {
namespace {

using model::Activation;
using model::ModelConfig;

// Weights of one layer, stacked over the layers in the program's parameters: query, key, value
// and attention output (weight and bias each), the attention LayerNorm, the two FFN GEMMs, the
// FFN LayerNorm.
constexpr std::size_t kLayerSlots = 16;

// The forward pass, written op by op; `b`, `l`, `h` are the batch, length and hidden size.
class EncoderWriter {
 public:
  EncoderWriter(const ModelConfig& config, const ProgramSpec& spec)
      : c_(config), spec_(spec), b_(spec.batch), l_(spec.length), h_(config.hidden_size) {}

  std::string write(const std::vector<WeightSlot>& slots) {
    std::vector<Value> weights;
    for (const WeightSlot& slot : slots)
      weights.push_back(p_.parameter(slot.dims, slot.gemm && bf16() ? DType::kBf16 : DType::kF32));
    next_ = weights.begin();
    end_ = all_end_ = weights.end();
    const Value ids = p_.parameter({b_, l_}, DType::kS32);
    const Value types = c_.type_vocab_size > 0 ? p_.parameter({b_, l_}, DType::kS32) : Value{};
    const Value positions = p_.parameter({b_, l_}, DType::kS32);
    const Value lengths = p_.parameter({b_}, DType::kS32);

    Value x = embeddings(ids, types, positions);  // [b, l, h]
    const Value mask = key_mask(lengths);         // [b, heads, l, l]: 0 or -inf-like
    x = layers(x, mask);
    std::vector<Value> results;
    if (spec_.hidden) results.push_back(x);
    if (spec_.logits) results.push_back(head(x));
    // Without logits the head's weights stay unused parameters (one upload serves every task).
    if (spec_.logits && next_ != end_)
      fail("internal: the program took fewer weights than it was given");
    return p_.module(results);
  }

 private:
  bool bf16() const { return spec_.precision == model::Precision::kBf16; }
  const Value& weight() {
    if (next_ == end_) fail("internal: the program needs more weights than it was given");
    return *next_++;
  }

  Value embeddings(const Value& ids, const Value& types, const Value& positions) {
    const Value& word = weight();
    const Value& position = weight();
    Value x = p_.binary("add", p_.gather_rows(word, ids), p_.gather_rows(position, positions));
    if (c_.type_vocab_size > 0) x = p_.binary("add", x, p_.gather_rows(weight(), types));
    return layer_norm(x);
  }

  // The layers: unrolled over per-layer weights, or (spec.loop_layers) one loop whose body is
  // one layer, over the weights stacked [layers, ...] (weight_slots).
  Value layers(Value x, const Value& mask) {
    if (!spec_.loop_layers) {
      for (std::int64_t i = 0; i < c_.num_layers; ++i) x = encoder_layer(x, mask);
      return x;
    }
    std::vector<Value> carried = {x, mask};
    for (std::size_t k = 0; k < kLayerSlots; ++k) carried.push_back(weight());
    const auto after_layers = next_;
    const auto body = [&](const Value& index, const std::vector<Value>& in) {
      std::vector<Value> layer;  // this trip's weights, in weight_slots order
      for (std::size_t k = 0; k < kLayerSlots; ++k)
        layer.push_back(p_.index_first(in[2 + k], index));
      next_ = layer.begin();
      end_ = layer.end();
      std::vector<Value> next(in);
      next[0] = encoder_layer(in[0], in[1]);
      if (next_ != end_) fail("internal: a layer took fewer weights than it was given");
      return next;
    };
    const Value out = p_.loop(c_.num_layers, carried, body).front();
    next_ = after_layers;
    end_ = all_end_;
    return out;
  }

  // Additive mask on the scores [b, heads, lq, lk]: key k of sequence s counts when k < length[s].
  Value key_mask(const Value& lengths) {
    const Dims dims{b_, c_.num_heads, l_, l_};
    const Value key = p_.iota(dims, 3);
    const Value limit = p_.broadcast(lengths, dims, {0});
    // A large finite negative, as transformers adds finfo.min: exp underflows to exactly 0.
    return p_.select(p_.compare("LT", key, limit), p_.splat(0.0f, dims), p_.splat(-1e30f, dims));
  }

  // x [.., in] · Wᵀ + bias: W [out, in]. bf16: inputs rounded to bf16, f32 sums.
  Value linear(const Value& x) {
    const Value& w = weight();
    const Value& bias = weight();
    const Value in = bf16() ? p_.convert(x, DType::kBf16) : x;
    const auto last = static_cast<std::int64_t>(x.dims.size()) - 1;
    const Value y = p_.dot(in, w, {}, {}, {last}, {1}, DType::kF32);
    return p_.binary("add", y, p_.broadcast(bias, y.dims, {last}));
  }

  Value layer_norm(const Value& x) {
    const Value& gamma = weight();
    const Value& beta = weight();
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
    const Value centered = p_.binary("subtract", x, row_mean(x));
    const Value variance = row_mean(p_.binary("multiply", centered, centered));
    const Value scale =
        p_.unary("rsqrt", p_.binary("add", variance, p_.splat(c_.layer_norm_eps, x.dims)));
    const Value normed = p_.binary("multiply", centered, scale);
    return p_.binary("add", p_.binary("multiply", normed, p_.broadcast(gamma, x.dims, {last})),
                     p_.broadcast(beta, x.dims, {last}));
  }

  Value activation(const Value& x, Activation act) {
    switch (act) {
      case Activation::kNone:
        return x;
      case Activation::kRelu:
        return p_.binary("maximum", x, p_.splat(0.0f, x.dims));
      case Activation::kTanh:
        return p_.unary("tanh", x);
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

  // [b, l, h] → [b, heads, l, d]
  Value split_heads(const Value& x) {
    const std::int64_t d = c_.head_dim();
    return p_.transpose(p_.reshape(x, {b_, l_, c_.num_heads, d}), {0, 2, 1, 3});
  }

  Value attention(const Value& x, const Value& mask) {
    const DType product = bf16() ? DType::kBf16 : DType::kF32;
    const Value q = p_.convert(split_heads(linear(x)), product);
    const Value k = p_.convert(split_heads(linear(x)), product);
    const Value v = p_.convert(split_heads(linear(x)), product);
    const Dims score_dims{b_, c_.num_heads, l_, l_};
    Value scores = p_.dot(q, k, {0, 1}, {0, 1}, {3}, {3}, DType::kF32);  // [b, heads, lq, lk]
    const float scale = 1.0f / std::sqrt(static_cast<float>(c_.head_dim()));
    scores = p_.binary("add", p_.binary("multiply", scores, p_.splat(scale, score_dims)), mask);
    const Value row_max = p_.broadcast(p_.reduce(scores, "maximum", {3}), score_dims, {0, 1, 2});
    const Value e = p_.unary("exponential", p_.binary("subtract", scores, row_max));
    const Value sum = p_.broadcast(p_.reduce(e, "add", {3}), score_dims, {0, 1, 2});
    const Value probs = p_.convert(p_.binary("divide", e, sum), product);
    const Value context = p_.dot(probs, v, {0, 1}, {0, 1}, {3}, {2}, DType::kF32);  // [b,h,l,d]
    return p_.reshape(p_.transpose(context, {0, 2, 1, 3}), {b_, l_, h_});
  }

  Value encoder_layer(const Value& x, const Value& mask) {
    const Value attended = linear(attention(x, mask));
    const Value x1 = layer_norm(p_.binary("add", attended, x));
    const Value inner = activation(linear(x1), c_.hidden_act);
    return layer_norm(p_.binary("add", linear(inner), x1));
  }

  // The first token of each sequence through dense + activation, then the projection.
  Value head(const Value& x) {
    const Value first = p_.reshape(p_.slice(x, {0, 0, 0}, {b_, 1, h_}), {b_, h_});
    return linear(activation(linear(first), spec_.head_activation));
  }

  const ModelConfig& c_;
  const ProgramSpec& spec_;
  const std::int64_t b_, l_, h_;
  Program p_;
  std::vector<Value>::const_iterator next_, end_, all_end_;
};

}  // namespace

std::vector<WeightSlot> weight_slots(const model::ModelConfig& c, bool head, bool stacked) {
  const std::int64_t h = c.hidden_size, inter = c.intermediate_size;
  std::vector<WeightSlot> slots;
  auto add = [&](std::string name, Dims dims, bool gemm = false) {
    slots.push_back({std::move(name), std::move(dims), gemm});
  };
  auto linear = [&](const std::string& name, Dims weight, Dims bias) {
    add(name + ".weight", std::move(weight), true);
    add(name + ".bias", std::move(bias));
  };
  auto norm = [&](const std::string& name, const Dims& dims) {
    add(name + ".weight", dims);
    add(name + ".bias", dims);
  };
  add("word_embeddings", {c.vocab_size, h});
  add("position_embeddings", {c.max_position_embeddings, h});
  if (c.type_vocab_size > 0) add("token_type_embeddings", {c.type_vocab_size, h});
  norm("embeddings.LayerNorm", {h});
  // Stacked: every layer's tensor of a role in one slot [layers, ...]; else a slot per layer.
  const std::int64_t n = c.num_layers;
  for (std::int64_t i = 0; i < (stacked ? 1 : n); ++i) {
    const std::string layer = stacked ? "layers." : fmt::format("layer.{}.", i);
    auto dims = [&](Dims d) {
      if (stacked) d.insert(d.begin(), n);
      return d;
    };
    for (const char* part : {"query", "key", "value", "attention_output"})
      linear(layer + part, dims({h, h}), dims({h}));
    norm(layer + "attention_norm", dims({h}));
    linear(layer + "ffn_in", dims({inter, h}), dims({inter}));
    linear(layer + "ffn_out", dims({h, inter}), dims({h}));
    norm(layer + "ffn_norm", dims({h}));
  }
  if (head) {
    linear("head.dense", {h, h}, {h});
    linear("head.out", {c.num_labels, h}, {c.num_labels});
  }
  return slots;
}

std::vector<std::vector<const model::Tensor*>> slot_tensors(const model::ModelTensors& t, bool head,
                                                            bool stacked) {
  std::vector<std::vector<const model::Tensor*>> out;
  auto one = [&](const model::Tensor* tensor) { out.push_back({tensor}); };
  out.push_back({&t.word_embeddings()});
  one(t.position_embeddings());
  if (t.config().type_vocab_size > 0) one(t.token_type_embeddings());
  one(t.embedding_norm().gamma);
  one(t.embedding_norm().beta);
  // The layers' tensors of each role, in weight_slots' order of roles.
  using L = model::LayerTensors;
  auto linear = [](const model::LinearTensors L::*part) {
    return std::array<std::function<const model::Tensor*(const L&)>, 2>{
        [part](const L& l) { return (l.*part).weight; },
        [part](const L& l) { return (l.*part).bias; }};
  };
  auto norm = [](const model::NormTensors L::*part) {
    return std::array<std::function<const model::Tensor*(const L&)>, 2>{
        [part](const L& l) { return (l.*part).gamma; },
        [part](const L& l) { return (l.*part).beta; }};
  };
  const auto roles = {linear(&L::query),    linear(&L::key),     linear(&L::value),
                      linear(&L::attn_out), norm(&L::attn_norm), linear(&L::ffn_in),
                      linear(&L::ffn_out),  norm(&L::ffn_norm)};
  if (stacked) {
    for (const auto& pair : roles) {
      for (const auto& pick : pair) {
        out.emplace_back();
        for (const L& layer : t.layers()) out.back().push_back(pick(layer));
      }
    }
  } else {
    for (const L& layer : t.layers())
      for (const auto& pair : roles)
        for (const auto& pick : pair) one(pick(layer));
  }
  if (head) {
    if (!t.head()) fail("internal: a head was asked of a model without one");
    for (const model::LinearTensors* l : {&t.head()->dense, &t.head()->out}) {
      one(l->weight);
      one(l->bias);
    }
  }
  return out;
}

std::string encoder_program(const model::ModelConfig& config, const std::vector<WeightSlot>& slots,
                            const ProgramSpec& spec) {
  if (spec.precision != model::Precision::kFp32 && spec.precision != model::Precision::kBf16)
    fail("internal: the PJRT program runs fp32 or bf16, not {}",
         model::precision_name(spec.precision));
  if (!spec.hidden && !spec.logits) fail("internal: a program with no output");
  return EncoderWriter(config, spec).write(slots);
}

}  // namespace mcinfer::pjrt
