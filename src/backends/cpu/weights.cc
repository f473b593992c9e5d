#include "backends/cpu/weights.h"

#include <cmath>
#include <cstring>
#include <set>

#include "core/error.h"
#include "model/model_dir.h"
#include "model/tensors.h"

namespace mcinfer::cpu {

using namespace model;
// Turns the checkpoint's tensors into the CPU's form while building a Weights: GEMM weights
// packed (or quantized) for the library, other tensors used in place from the mapping when they
// are float32, else converted to float32 once.
class WeightLoader {
 public:
  WeightLoader(Weights& w, const ops::Device& device) : w_(w), device_(device) {}

  const float* f32(const Tensor& t) {
    if (t.dtype == io::DType::kF32) {
      w_.stats_.mapped_bytes += t.bytes;
      return reinterpret_cast<const float*>(t.data);
    }
    float* out = own(static_cast<std::size_t>(t.numel()));
    model::copy_as_f32(t, out);
    w_.tensors_.release(t);
    return out;
  }

  Norm norm(const NormTensors& n) { return {f32(*n.gamma), f32(*n.beta)}; }

  // A Linear layer packed for the device in `precision` (weight and bias both copied there, so
  // neither stays in use from the mapping). int8: input_max smooths the layer's inputs.
  ops::Linear linear(const LinearTensors& t, ops::Precision precision = ops::Precision::kFp32,
                     const float* input_max = nullptr) {
    const Tensor& wt = *t.weight;
    const std::int64_t out = wt.shape[0], in = wt.shape[1];
    const float* bias = as_f32(*t.bias, bias_temp_);
    ops::Linear l = bf16_as_is(wt, precision)
                        ? ops::Linear::prepare(device_, wt.data, ops::DType::kBf16, bias, out, in,
                                               precision, input_max)
                        : ops::Linear::prepare(device_, as_f32(wt, temp_), ops::DType::kF32, bias,
                                               out, in, precision, input_max);
    w_.stats_.packed_bytes += l.bytes();
    w_.tensors_.release(wt);
    return l;
  }

  // Query, key and value projections stacked into one [3·hidden, hidden] GEMM.
  ops::Linear fused_qkv(const LayerTensors& layer, ops::Precision precision,
                        const float* input_max = nullptr) {
    const LinearTensors* parts[3] = {&layer.query, &layer.key, &layer.value};
    const std::int64_t h = layer.query.weight->shape[0];
    const std::size_t part_size = static_cast<std::size_t>(h * h);
    bool all_bf16 = true;
    for (const auto* p : parts) all_bf16 = all_bf16 && bf16_as_is(*p->weight, precision);
    AlignedBuffer<float> bias(static_cast<std::size_t>(3 * h));
    for (int i = 0; i < 3; ++i) model::copy_as_f32(*parts[i]->bias, bias.data() + i * h);
    ops::Linear l;
    if (all_bf16) {
      AlignedBuffer<std::uint16_t> weight(3 * part_size);
      for (int i = 0; i < 3; ++i)
        std::memcpy(weight.data() + i * part_size, parts[i]->weight->data, part_size * 2);
      l = ops::Linear::prepare(device_, weight.data(), ops::DType::kBf16, bias.data(), 3 * h, h,
                               precision, input_max);
    } else {
      AlignedBuffer<float> weight(3 * part_size);
      for (int i = 0; i < 3; ++i)
        model::copy_as_f32(*parts[i]->weight, weight.data() + i * part_size);
      l = ops::Linear::prepare(device_, weight.data(), ops::DType::kF32, bias.data(), 3 * h, h,
                               precision, input_max);
    }
    for (const auto* p : parts) w_.tensors_.release(*p->weight);
    w_.stats_.packed_bytes += l.bytes();
    return l;
  }

  float* own(std::size_t count) {
    w_.owned_.emplace_back(count);
    w_.stats_.converted_bytes += count * sizeof(float);
    return w_.owned_.back().data();
  }

 private:
  // The tensor as float32: in place when it is, else a copy in `scratch` that lives until the
  // next use of the same scratch (GEMM weights are packed right away).
  static const float* as_f32(const Tensor& t, AlignedBuffer<float>& scratch) {
    if (t.dtype == io::DType::kF32) return reinterpret_cast<const float*>(t.data);
    scratch.resize(static_cast<std::size_t>(t.numel()));
    model::copy_as_f32(t, scratch.data());
    return scratch.data();
  }

  // A bf16 tensor for a bf16 or int8 layer is packed (or quantized) from the checkpoint's
  // bits, never widened.
  static bool bf16_as_is(const Tensor& t, ops::Precision precision) {
    return t.dtype == io::DType::kBF16 &&
           (precision == ops::Precision::kBf16 || precision == ops::Precision::kInt8);
  }

  Weights& w_;
  const ops::Device& device_;
  AlignedBuffer<float> temp_, bias_temp_;
};

namespace {

ops::Precision checked_precision(ops::Precision precision) {
  if (precision == ops::Precision::kAuto)
    fail("internal: weights need a resolved precision (fp32 or bf16), not auto");
  return precision;
}

}  // namespace

const ops::Linear& Weights::linear(GemmId id) const {
  if (id.layer < 0 || id.layer >= static_cast<std::int64_t>(layers_.size()))
    fail("internal: GEMM of layer {} in a model of {} layers", id.layer, layers_.size());
  const LayerWeights& layer = layers_[static_cast<std::size_t>(id.layer)];
  switch (id.slot) {
    case GemmSlot::kQkv:
      return layer.qkv;
    case GemmSlot::kAttnOut:
      return layer.attn_out;
    case GemmSlot::kFfnIn:
      return layer.ffn_in;
    case GemmSlot::kFfnOut:
      break;
  }
  return layer.ffn_out;
}

ops::Activation Weights::activation(GemmId id) const {
  return id.slot == GemmSlot::kFfnIn ? config_.hidden_act : ops::Activation::kNone;
}

std::shared_ptr<const Weights> Weights::synthetic(const ModelConfig& config,
                                                  const ops::Device& device, std::uint32_t seed,
                                                  ops::Precision precision) {
  auto w = std::shared_ptr<Weights>(new Weights());
  w->precision_ = checked_precision(precision);
  w->config_ = config;
  w->directory_ = "(synthetic " + config.architecture + ")";
  w->stats_.dtype = "F32";
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 1;
  // Small uniform values keep activations in a realistic range through many layers.
  auto fill = [&](std::size_t count, float scale, float offset = 0.0f) {
    w->owned_.emplace_back(count);
    float* p = w->owned_.back().data();
    for (std::size_t i = 0; i < count; ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      p[i] =
          offset + scale * (static_cast<float>(state >> 40) / static_cast<float>(1 << 24) - 0.5f);
    }
    w->stats_.parameters += static_cast<std::int64_t>(count);
    w->stats_.file_bytes += count * sizeof(float);
    return p;
  };
  const std::int64_t h = config.hidden_size, inter = config.intermediate_size;
  auto linear = [&](std::int64_t out, std::int64_t in,
                    ops::Precision layer_precision = ops::Precision::kFp32) {
    AlignedBuffer<float> weight(static_cast<std::size_t>(out * in));
    const float* random = fill(static_cast<std::size_t>(out * in), 0.08f);
    std::memcpy(weight.data(), random, weight.size() * sizeof(float));
    w->owned_.pop_back();  // only the packed copy is kept
    const float* bias = fill(static_cast<std::size_t>(out), 0.02f);
    ops::Linear l = ops::Linear::prepare(device, weight.data(), ops::DType::kF32, bias, out, in,
                                         layer_precision);
    w->stats_.packed_bytes += l.bytes();
    return l;
  };
  auto norm = [&]() {
    return Norm{fill(static_cast<std::size_t>(h), 0.1f, 1.0f),
                fill(static_cast<std::size_t>(h), 0.1f)};
  };
  auto& e = w->embeddings_;
  e.word = fill(static_cast<std::size_t>(config.vocab_size * h), 0.1f);
  e.position = fill(static_cast<std::size_t>(config.max_position_embeddings * h), 0.1f);
  if (config.type_vocab_size > 0)
    e.token_type = fill(static_cast<std::size_t>(config.type_vocab_size * h), 0.1f);
  e.norm = norm();
  for (std::int64_t i = 0; i < config.num_layers; ++i) {
    LayerWeights layer;
    layer.qkv = linear(3 * h, h, w->precision_);
    layer.attn_out = linear(h, h, w->precision_);
    layer.attn_norm = norm();
    layer.ffn_in = linear(inter, h, w->precision_);
    layer.ffn_out = linear(h, inter, w->precision_);
    layer.ffn_norm = norm();
    w->layers_.push_back(std::move(layer));
  }
  if (config.head == Head::kSequenceClassification) {
    ClassifierWeights head;
    head.dense = linear(h, h);
    head.dense_act =
        config.family == Family::kDistilBert ? ops::Activation::kRelu : ops::Activation::kTanh;
    head.out = linear(config.num_labels, h);
    w->classifier_ = std::move(head);
  }
  return w;
}

std::shared_ptr<const Weights> Weights::load(const std::filesystem::path& model_dir,
                                             const ops::Device& device,
                                             std::vector<std::string>* warnings,
                                             ops::Precision precision, std::span<const GemmId> keep,
                                             const InputRanges* ranges) {
  const auto config_path = model_dir / "config.json";
  std::error_code ec;
  if (!std::filesystem::exists(config_path, ec))
    fail("{}: no config.json in the model directory", model_dir.string());
  return load_with(model_dir, ModelConfig::load(config_path), device, warnings, precision, keep,
                   ranges);
}

std::shared_ptr<const Weights> Weights::load(const ModelDir& dir, const ops::Device& device,
                                             std::vector<std::string>* warnings,
                                             ops::Precision precision, std::span<const GemmId> keep,
                                             const InputRanges* ranges) {
  return load_with(dir.path(), dir.config(), device, warnings, precision, keep, ranges);
}

std::shared_ptr<const Weights> Weights::load_with(const std::filesystem::path& model_dir,
                                                  ModelConfig config, const ops::Device& device,
                                                  std::vector<std::string>* warnings,
                                                  ops::Precision precision,
                                                  std::span<const GemmId> keep,
                                                  const InputRanges* ranges) {
  auto w = std::shared_ptr<Weights>(new Weights());
  w->precision_ = checked_precision(precision);
  if (!keep.empty() && precision != ops::Precision::kInt8)
    fail("internal: GEMMs kept out of int8 in a {} model", ops::precision_name(precision));
  w->kept_.assign(keep.begin(), keep.end());
  std::sort(w->kept_.begin(), w->kept_.end());
  w->directory_ = model_dir;
  w->tensors_ = ModelTensors::open(model_dir, config, warnings);
  w->config_ = std::move(config);
  const TensorStats& found = w->tensors_.stats();
  w->stats_.parameters = found.parameters;
  w->stats_.file_bytes = found.file_bytes;
  w->stats_.dtype = found.dtype;
  w->smoothed_ = ranges != nullptr && precision == ops::Precision::kInt8;
  const ModelConfig& c = w->config_;
  const ModelTensors& t = w->tensors_;
  WeightLoader L(*w, device);

  auto& e = w->embeddings_;
  e.word = L.f32(t.word_embeddings());
  if (t.position_embeddings()) {
    e.position = L.f32(*t.position_embeddings());
  } else {
    float* table = L.own(static_cast<std::size_t>(c.max_position_embeddings * c.hidden_size));
    fill_sinusoidal(table, c.max_position_embeddings, c.hidden_size);
    e.position = table;
  }
  if (t.token_type_embeddings()) e.token_type = L.f32(*t.token_type_embeddings());
  e.norm = L.norm(t.embedding_norm());

  // The encoder layers' precision per GEMM (an int8 plan keeps some in the fallback precision)
  // and, for int8 ones, the input ranges that smooth them. The head stays fp32.
  auto precision_of = [&](GemmId id) {
    const bool kept = std::binary_search(w->kept_.begin(), w->kept_.end(), id);
    return kept ? ops::int8_fallback_precision() : w->precision_;
  };
  auto range = [&](GemmId id) -> const float* {
    return ranges && precision_of(id) == ops::Precision::kInt8 ? ranges->of(id) : nullptr;
  };
  auto prepare = [&](const LinearTensors& lt, std::int64_t layer, GemmSlot slot) {
    return L.linear(lt, precision_of({layer, slot}), range({layer, slot}));
  };
  w->layers_.reserve(t.layers().size());
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    const LayerTensors& lt = t.layers()[static_cast<std::size_t>(i)];
    LayerWeights layer;
    const GemmId qkv{i, GemmSlot::kQkv};
    layer.qkv = L.fused_qkv(lt, precision_of(qkv), range(qkv));
    layer.attn_out = prepare(lt.attn_out, i, GemmSlot::kAttnOut);
    layer.attn_norm = L.norm(lt.attn_norm);
    layer.ffn_in = prepare(lt.ffn_in, i, GemmSlot::kFfnIn);
    layer.ffn_out = prepare(lt.ffn_out, i, GemmSlot::kFfnOut);
    layer.ffn_norm = L.norm(lt.ffn_norm);
    w->layers_.push_back(std::move(layer));
  }
  if (t.head()) {
    ClassifierWeights head;
    head.dense = L.linear(t.head()->dense);
    head.dense_act = t.head()->dense_activation;
    head.out = L.linear(t.head()->out);
    w->classifier_ = std::move(head);
  }
  return w;
}

}  // namespace mcinfer::cpu
