#include "backends/cpu/weights.h"

#include <algorithm>
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

  // An absent norm stays absent; one without a shift gets zeros.
  Norm norm(const NormTensors& n) {
    if (n.gamma == nullptr) return {};
    if (n.beta != nullptr) return {f32(*n.gamma), f32(*n.beta)};
    const auto width = static_cast<std::size_t>(n.gamma->numel());
    float* zeros = own(width);
    std::fill(zeros, zeros + width, 0.0f);
    return {f32(*n.gamma), zeros};
  }

  // A GEMM packed for the device in `precision` from its parts stacked along the output (weight
  // and bias copied there, so neither stays in use from the mapping). int8: input_max smooths
  // the layer's inputs. A checkpoint's bf16 weights reach a bf16 or int8 layer unwidened.
  ops::Linear linear(const GemmTensors& g, ops::Precision precision = ops::Precision::kFp32,
                     const float* input_max = nullptr) {
    const std::int64_t part_out = g.parts.front().weight->shape[0];
    const std::int64_t in = g.parts.front().weight->shape[1];
    const auto parts = static_cast<std::int64_t>(g.parts.size());
    const auto part_size = static_cast<std::size_t>(part_out * in);
    bool all_bf16 = true;
    for (const LinearTensors& p : g.parts) all_bf16 = all_bf16 && bf16_as_is(*p.weight, precision);
    const bool has_bias = g.parts.front().bias != nullptr;
    if (has_bias) bias_temp_.resize(static_cast<std::size_t>(parts * part_out));
    for (std::int64_t i = 0; i < parts && has_bias; ++i)
      model::copy_as_f32(*g.parts[i].bias, bias_temp_.data() + i * part_out);
    const float* bias = has_bias ? bias_temp_.data() : nullptr;
    ops::Linear l;
    if (all_bf16) {
      AlignedBuffer<std::uint16_t> weight(static_cast<std::size_t>(parts) * part_size);
      for (std::int64_t i = 0; i < parts; ++i)
        std::memcpy(weight.data() + i * part_size, g.parts[i].weight->data, part_size * 2);
      l = ops::Linear::prepare(device_, weight.data(), ops::DType::kBf16, bias, parts * part_out,
                               in, precision, input_max);
    } else {
      // One f32 part is packed straight from the mapping; stacked or other dtypes go through
      // float32 scratch first.
      const io::TensorView& first = *g.parts.front().weight;
      const float* weight = reinterpret_cast<const float*>(first.data);
      if (parts > 1 || first.dtype != io::DType::kF32) {
        temp_.resize(static_cast<std::size_t>(parts) * part_size);
        for (std::int64_t i = 0; i < parts; ++i)
          model::copy_as_f32(*g.parts[i].weight, temp_.data() + i * part_size);
        weight = temp_.data();
      }
      l = ops::Linear::prepare(device_, weight, ops::DType::kF32, bias, parts * part_out, in,
                               precision, input_max);
    }
    for (const LinearTensors& p : g.parts) w_.tensors_.release(*p.weight);
    w_.stats_.packed_bytes += l.bytes();
    return l;
  }
  ops::Linear linear(const LinearTensors& t, ops::Precision precision = ops::Precision::kFp32) {
    return linear(GemmTensors{{t}}, precision);
  }

  // DeBERTa-v2: `table` [rows, hidden] projected by the layer's position key and query
  // projections (weights widened to float32 in scratch).
  RelativeTables relative(const AlignedBuffer<float>& table, const EncoderDesc& d,
                          const LayerTensors& lt) {
    const std::int64_t h = d.hidden;
    AlignedBuffer<float> weights(static_cast<std::size_t>(2 * h * h)),
        biases(static_cast<std::size_t>(2 * h));
    RelativeProjection key, query;
    auto widen = [&](const std::optional<LinearTensors>& t, std::int64_t slot,
                     RelativeProjection& p) {
      if (!t) return;
      model::copy_as_f32(*t->weight, weights.data() + slot * h * h);
      p.weight = weights.data() + slot * h * h;
      if (t->bias) {
        model::copy_as_f32(*t->bias, biases.data() + slot * h);
        p.bias = biases.data() + slot * h;
      }
    };
    widen(lt.position_key, 0, key);
    widen(lt.position_query, 1, query);
    RelativeTables r =
        RelativeTables::build(table.data(), d.disentangled->rows(), h, d.heads, key, query);
    w_.stats_.converted_bytes += r.bytes();
    return r;
  }

  float* own(std::size_t count) {
    w_.owned_.emplace_back(count);
    w_.stats_.converted_bytes += count * sizeof(float);
    return w_.owned_.back().data();
  }

 private:
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

const RotaryTable* Weights::rotary_table(double theta) {
  for (const auto& t : rotary_)
    if (t->theta() == theta) return t.get();
  rotary_.push_back(std::make_unique<RotaryTable>(
      RotaryTable::build(theta, desc_.head_dim(), desc_.embeddings.max_positions)));
  stats_.converted_bytes += rotary_.back()->bytes();
  return rotary_.back().get();
}

const ops::Linear& Weights::linear(GemmId id) const {
  if (id.layer < 0 || id.layer >= static_cast<std::int64_t>(layers_.size()))
    fail("internal: GEMM of layer {} in a model of {} layers", id.layer, layers_.size());
  return layers_[static_cast<std::size_t>(id.layer)].gemm(id.slot);
}

ops::DType Weights::attention_type() const {
  const ops::Precision p =
      precision_ == ops::Precision::kInt8 ? ops::int8_fallback_precision() : precision_;
  return p == ops::Precision::kBf16 ? ops::DType::kBf16 : ops::DType::kF32;
}

ops::Activation Weights::activation(GemmId id) const {
  return desc_.layers.at(static_cast<std::size_t>(id.layer)).gemm(id.slot).linear.activation;
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
  w->desc_ = model::describe_encoder(config);
  const EncoderDesc& d = w->desc_;
  auto linear = [&](const LinearDesc& l, ops::Precision layer_precision = ops::Precision::kFp32) {
    const std::int64_t out = l.out(), in = l.in;
    AlignedBuffer<float> weight(static_cast<std::size_t>(out * in));
    const float* random = fill(static_cast<std::size_t>(out * in), 0.08f);
    std::memcpy(weight.data(), random, weight.size() * sizeof(float));
    w->owned_.pop_back();  // only the packed copy is kept
    const float* bias = l.bias ? fill(static_cast<std::size_t>(out), 0.02f) : nullptr;
    ops::Linear packed = ops::Linear::prepare(device, weight.data(), ops::DType::kF32, bias, out,
                                              in, layer_precision);
    w->stats_.packed_bytes += packed.bytes();
    return packed;
  };
  auto norm = [&](const NormDesc& n) {
    if (!n.present()) return Norm{};
    return Norm{fill(static_cast<std::size_t>(n.width), 0.1f, 1.0f),
                fill(static_cast<std::size_t>(n.width), n.bias ? 0.1f : 0.0f)};
  };
  const EmbeddingDesc& ed = d.embeddings;
  auto& e = w->embeddings_;
  e.word = fill(static_cast<std::size_t>(ed.vocab * ed.width), 0.1f);
  if (ed.positions != PositionScheme::kNone && ed.positions != PositionScheme::kRotary)
    e.position = fill(static_cast<std::size_t>(ed.max_positions * ed.width), 0.1f);
  const float* relative_table = nullptr;
  if (d.disentangled)
    relative_table = fill(static_cast<std::size_t>(d.disentangled->rows() * d.hidden), 1.0f);
  if (!ed.token_type.empty())
    e.token_type = fill(static_cast<std::size_t>(ed.type_vocab * ed.width), 0.1f);
  e.norm = norm(ed.norm);
  if (ed.projection) e.projection = linear(*ed.projection);
  if (d.relative_bias)
    e.relative_bias = fill(static_cast<std::size_t>(d.relative_bias->table_rows * d.heads), 0.5f);
  for (const LayerDesc& ld : d.layers) {
    LayerWeights layer;
    for (const GemmDesc& g : ld.gemms) {
      layer.index[static_cast<std::size_t>(g.slot)] = static_cast<int>(layer.gemms.size());
      layer.gemms.push_back(linear(g.linear, w->precision_));
    }
    layer.attention_norm = norm(ld.attention_norm);
    layer.ffn_norm = norm(ld.ffn_norm);
    if (ld.rope_theta > 0) layer.rotary = w->rotary_table(ld.rope_theta);
    if (d.disentangled) {
      const auto square = static_cast<std::size_t>(d.hidden * d.hidden);
      auto projection = [&](bool present) {
        if (!present) return RelativeProjection{};
        return RelativeProjection{fill(square, 0.08f),
                                  fill(static_cast<std::size_t>(d.hidden), 0.02f)};
      };
      layer.relative = RelativeTables::build(relative_table, d.disentangled->rows(), d.hidden,
                                             d.heads, projection(ld.position_key.has_value()),
                                             projection(ld.position_query.has_value()));
    }
    w->layers_.push_back(std::move(layer));
  }
  w->final_norm_ = norm(d.final_norm);
  if (d.head) {
    ClassifierWeights head;
    head.dense = linear(d.head->dense);
    head.dense_act = d.head->dense.activation;
    head.out = linear(d.head->out);
    head.norm = norm(d.head->norm);
    head.norm_eps = d.head->norm.eps;
    head.mean_pooling = d.head->mean_pooling;
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
                                             const InputRanges* ranges, const EncoderDesc* desc) {
  return load_with(dir.path(), dir.config(), device, warnings, precision, keep, ranges, desc);
}

std::shared_ptr<const Weights> Weights::load_with(
    const std::filesystem::path& model_dir, ModelConfig config, const ops::Device& device,
    std::vector<std::string>* warnings, ops::Precision precision, std::span<const GemmId> keep,
    const InputRanges* ranges, const EncoderDesc* desc) {
  auto w = std::shared_ptr<Weights>(new Weights());
  w->precision_ = checked_precision(precision);
  if (!keep.empty() && precision != ops::Precision::kInt8)
    fail("internal: GEMMs kept out of int8 in a {} model", ops::precision_name(precision));
  w->kept_.assign(keep.begin(), keep.end());
  std::sort(w->kept_.begin(), w->kept_.end());
  w->directory_ = model_dir;
  w->tensors_ = ModelTensors::open(model_dir, config, warnings, desc);
  w->config_ = std::move(config);
  w->desc_ = w->tensors_.desc();
  const TensorStats& found = w->tensors_.stats();
  w->stats_.parameters = found.parameters;
  w->stats_.file_bytes = found.file_bytes;
  w->stats_.dtype = found.dtype;
  w->smoothed_ = ranges != nullptr && precision == ops::Precision::kInt8;
  const ModelTensors& t = w->tensors_;
  WeightLoader L(*w, device);

  const EncoderDesc& d = w->desc_;
  auto& e = w->embeddings_;
  e.word = L.f32(t.word_embeddings());
  if (t.position_embeddings()) {
    e.position = L.f32(*t.position_embeddings());
  } else if (d.embeddings.positions == PositionScheme::kSinusoidal) {
    const std::int64_t rows = d.embeddings.max_positions, width = d.embeddings.width;
    float* table = L.own(static_cast<std::size_t>(rows * width));
    fill_sinusoidal(table, rows, width);
    e.position = table;
  }
  if (t.token_type_embeddings()) e.token_type = L.f32(*t.token_type_embeddings());
  e.norm = L.norm(t.embedding_norm());
  if (t.embedding_projection()) e.projection = L.linear(*t.embedding_projection());
  if (t.relative_bias_table()) e.relative_bias = L.f32(*t.relative_bias_table());
  // DeBERTa-v2's relative-position table, through its LayerNorm, for each layer's projections.
  AlignedBuffer<float> relative_table;
  if (d.disentangled) {
    relative_table.resize(static_cast<std::size_t>(t.relative_table()->numel()));
    copy_as_f32(*t.relative_table(), relative_table.data());
    if (const auto& n = t.relative_table_norm()) {
      const Norm norm = L.norm(*n);
      layer_norm_rows(relative_table.data(), d.disentangled->rows(), d.hidden, norm.gamma,
                      norm.beta, d.disentangled->norm->eps);
    }
  }

  // The encoder layers' precision per GEMM (an int8 plan keeps some in the fallback precision)
  // and, for int8 ones, the input ranges that smooth them. The head stays fp32.
  auto precision_of = [&](GemmId id) {
    const bool kept = std::binary_search(w->kept_.begin(), w->kept_.end(), id);
    return kept ? ops::int8_fallback_precision() : w->precision_;
  };
  auto range = [&](GemmId id) -> const float* {
    return ranges && precision_of(id) == ops::Precision::kInt8 ? ranges->of(id) : nullptr;
  };
  w->layers_.reserve(t.layers().size());
  for (std::size_t i = 0; i < d.layers.size(); ++i) {
    const LayerDesc& ld = d.layers[i];
    const LayerTensors& lt = t.layers()[i];
    LayerWeights layer;
    // Before the GEMMs are packed: with shared keys the projections are the layer's own
    // key_proj / query_proj, whose pages packing releases.
    if (d.disentangled) layer.relative = L.relative(relative_table, d, lt);
    for (std::size_t k = 0; k < ld.gemms.size(); ++k) {
      const GemmId id{static_cast<std::int64_t>(i), ld.gemms[k].slot};
      layer.index[static_cast<std::size_t>(id.slot)] = static_cast<int>(k);
      layer.gemms.push_back(L.linear(lt.gemms[k], precision_of(id), range(id)));
    }
    layer.attention_norm = L.norm(lt.attention_norm);
    layer.ffn_norm = L.norm(lt.ffn_norm);
    if (ld.rope_theta > 0) layer.rotary = w->rotary_table(ld.rope_theta);
    w->layers_.push_back(std::move(layer));
  }
  w->final_norm_ = L.norm(t.final_norm());
  if (t.head()) {
    ClassifierWeights head;
    head.dense = L.linear(t.head()->dense);
    head.dense_act = d.head->dense.activation;
    head.out = L.linear(t.head()->out);
    head.norm = L.norm(t.head()->norm);
    head.norm_eps = d.head->norm.eps;
    head.mean_pooling = d.head->mean_pooling;
    w->classifier_ = std::move(head);
  }
  if (const auto& m = t.mlm_head()) {
    MlmHeadWeights head;
    head.transform = L.linear(m->transform);
    head.transform_act = d.mlm_head->transform.activation;
    head.norm = L.norm(m->norm);
    head.norm_eps = d.mlm_head->norm.eps;
    // The decoder is tied: the word embeddings, packed once more as a GEMM's weight.
    head.decoder = L.linear(model::GemmTensors{{{&t.word_embeddings(), m->decoder_bias}}});
    w->mlm_head_ = std::move(head);
  }
  return w;
}

}  // namespace mcinfer::cpu
