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

  // An absent norm stays absent; one without a shift gets zeros; Gemma's (1 + w) scale is
  // added once here (in float32, as its forward pass adds it).
  Norm norm(const NormTensors& n, model::NormKind kind = model::NormKind::kLayerNorm) {
    if (n.gamma == nullptr) return {};
    const auto width = static_cast<std::size_t>(n.gamma->numel());
    const float* gamma = f32(*n.gamma);
    if (kind == model::NormKind::kRmsOffset) {
      float* shifted = own(width);
      for (std::size_t i = 0; i < width; ++i) shifted[i] = 1.0f + gamma[i];
      gamma = shifted;
    }
    if (n.beta != nullptr) return {gamma, f32(*n.beta)};
    float* zeros = own(width);
    std::fill(zeros, zeros + width, 0.0f);
    return {gamma, zeros};
  }
  Norm norm(const NormTensors& n, const model::NormDesc& desc) { return norm(n, desc.kind); }

  // A GEMM packed for the device in `precision` from its parts stacked along the output (weight
  // and bias copied there, so neither stays in use from the mapping). int8: input_max smooths
  // the layer's inputs. A checkpoint's bf16 weights reach a bf16 or int8 layer unwidened.
  ops::Linear linear(const GemmTensors& g, ops::Precision precision = ops::Precision::kFp32,
                     const float* input_max = nullptr) {
    const std::int64_t in = g.parts.front().weight->shape[1];
    // Part i fills rows [first[i], first[i + 1]) of the stacked [out, in] weight.
    std::vector<std::int64_t> first{0};
    for (const LinearTensors& p : g.parts) first.push_back(first.back() + p.weight->shape[0]);
    const std::int64_t out = first.back();
    const std::size_t parts = g.parts.size();
    bool all_bf16 = true;
    for (const LinearTensors& p : g.parts) all_bf16 = all_bf16 && bf16_as_is(*p.weight, precision);
    const bool has_bias = g.parts.front().bias != nullptr;
    if (has_bias) bias_temp_.resize(static_cast<std::size_t>(out));
    for (std::size_t i = 0; i < parts && has_bias; ++i)
      model::copy_as_f32(*g.parts[i].bias, bias_temp_.data() + first[i]);
    const float* bias = has_bias ? bias_temp_.data() : nullptr;
    ops::Linear l;
    if (all_bf16) {
      AlignedBuffer<std::uint16_t> weight(static_cast<std::size_t>(out * in));
      for (std::size_t i = 0; i < parts; ++i)
        std::memcpy(weight.data() + first[i] * in, g.parts[i].weight->data,
                    static_cast<std::size_t>((first[i + 1] - first[i]) * in) * 2);
      l = ops::Linear::prepare(device_, weight.data(), ops::DType::kBf16, bias, out, in, precision,
                               input_max);
    } else {
      // One f32 part is packed straight from the mapping; stacked or other dtypes go through
      // float32 scratch first.
      const io::TensorView& front = *g.parts.front().weight;
      const float* weight = reinterpret_cast<const float*>(front.data);
      if (parts > 1 || front.dtype != io::DType::kF32) {
        temp_.resize(static_cast<std::size_t>(out * in));
        for (std::size_t i = 0; i < parts; ++i)
          model::copy_as_f32(*g.parts[i].weight, temp_.data() + first[i] * in);
        weight = temp_.data();
      }
      l = ops::Linear::prepare(device_, weight, ops::DType::kF32, bias, out, in, precision,
                               input_max);
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

const RotaryTable* Weights::rotary_table(double theta, std::int64_t head_dim) {
  for (const auto& t : rotary_)
    if (t->theta() == theta && 2 * t->half() == head_dim) return t.get();
  rotary_.push_back(std::make_unique<RotaryTable>(
      RotaryTable::build(theta, head_dim, desc_.embeddings.max_positions)));
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
  // The bf16 kernels run heads of hidden / heads without masks or q/k norms; other layers
  // (decoders') attend in f32 between their bf16 or int8 GEMMs.
  for (const LayerDesc& l : desc_.layers) {
    if (l.kv_heads != l.heads || l.head_dim * l.heads != desc_.hidden || l.causal ||
        l.score_scale > 0 || l.query_norm.present())
      return ops::DType::kF32;
  }
  return p == ops::Precision::kBf16 ? ops::DType::kBf16 : ops::DType::kF32;
}

namespace {

// The steps of `d` the CPU backend cannot run, refused by name before any weight is packed.
void check_cpu_runs(const EncoderDesc& d, const std::string& where) {
  auto refuse = [&](std::size_t layer, std::string_view step) {
    fail("{}: layer {}: the CPU backend does not run the step '{}'", where, layer, step);
  };
  for (std::size_t i = 0; i < d.layers.size(); ++i) {
    const LayerDesc& l = d.layers[i];
    if (l.norm_placement != d.layers.front().norm_placement)
      refuse(i, "pre-norm and post-norm layers in one model");
    if (l.norm_placement == NormPlacement::kPost &&
        (l.attention_norm.kind != NormKind::kLayerNorm || l.ffn_norm.kind != NormKind::kLayerNorm))
      refuse(i, "an RMS norm after the residual add");
    for (const NormDesc* n : {&l.post_attention_norm, &l.post_ffn_norm}) {
      if (n->present() &&
          (n->kind == NormKind::kLayerNorm || l.norm_placement != NormPlacement::kPre))
        refuse(i, "a LayerNorm or post-norm layer's norm on a block's output");
    }
    if ((l.query_norm.present() && l.query_norm.kind == NormKind::kLayerNorm) ||
        l.query_norm.present() != l.key_norm.present())
      refuse(i, "q/k norms other than RMS norms on both queries and keys");
    if ((l.causal || l.window > 0 || l.rope_theta > 0) && (d.relative_bias || d.disentangled))
      refuse(i, "a mask, window or rotary positions with relative-position attention");
    if (l.kv_heads <= 0 || l.heads % l.kv_heads != 0 || l.head_dim <= 0)
      refuse(i, "attention heads that key-value heads do not divide");
    if (l.gemm(GemmSlot::kQkv).linear.out() != l.query_width() + 2 * l.kv_width())
      refuse(i, "a QKV projection of another width than its heads");
  }
}

}  // namespace

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
  check_cpu_runs(w->desc_, w->directory_.string());
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
    for (const auto& [slot, name] : kNormSlotNames.entries)
      layer.norms[static_cast<std::size_t>(slot)] = norm(ld.norm(slot));
    if (ld.rope_theta > 0) layer.rotary = w->rotary_table(ld.rope_theta, ld.head_dim);
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
    if (d.head->dense) {
      head.dense = linear(*d.head->dense);
      head.dense_act = d.head->dense->activation;
    }
    head.out = linear(d.head->out);
    head.norm = norm(d.head->norm);
    head.norm_eps = d.head->norm.eps;
    head.pooling = d.head->pooling;
    head.pad_id = d.head->pad_id;
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
  // Before any tensor is read: a step this backend cannot run is refused by its name.
  check_cpu_runs(desc ? *desc : describe_encoder(config), model_dir.string());
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
  e.norm = L.norm(t.embedding_norm(), d.embeddings.norm);
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
    for (const auto& [slot, name] : kNormSlotNames.entries)
      layer.norms[static_cast<std::size_t>(slot)] = L.norm(lt.norm(slot), ld.norm(slot));
    if (ld.rope_theta > 0) layer.rotary = w->rotary_table(ld.rope_theta, ld.head_dim);
    w->layers_.push_back(std::move(layer));
  }
  w->final_norm_ = L.norm(t.final_norm(), d.final_norm);
  if (t.head()) {
    ClassifierWeights head;
    if (t.head()->dense) {
      head.dense = L.linear(*t.head()->dense);
      head.dense_act = d.head->dense->activation;
    }
    head.out = L.linear(t.head()->out);
    head.norm = L.norm(t.head()->norm, d.head->norm);
    head.norm_eps = d.head->norm.eps;
    head.pooling = d.head->pooling;
    head.pad_id = d.head->pad_id;
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
