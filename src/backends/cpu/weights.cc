#include "backends/cpu/weights.h"

#include <cmath>
#include <cstring>
#include <set>

#include "core/error.h"
#include "core/half.h"
#include "model/model_dir.h"

namespace mcinfer::cpu {

using namespace model;
namespace {

bool is_ignorable_extra(const std::string& name) {
  auto ends = [&](std::string_view s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  auto starts = [&](std::string_view s) { return name.rfind(s, 0) == 0; };
  // Buffers that some transformers versions save, and pre-training heads we do not run.
  return ends("position_ids") || ends("token_type_ids") || starts("cls.") || starts("lm_head.") ||
         starts("vocab_transform.") || starts("vocab_layer_norm.") || starts("vocab_projector.");
}

}  // namespace

// Resolves, checks and converts the checkpoint's tensors while building a Weights.
class WeightLoader {
 public:
  WeightLoader(Weights& w, const ops::Device& device) : w_(w), device_(device) {
    const auto& c = w.config_;
    const std::string prefix = c.base_prefix() + ".";
    for (const auto* t : w.checkpoint_.tensors()) {
      if (t->name.rfind(prefix, 0) == 0) {
        base_ = prefix;
        break;
      }
    }
  }

  bool has(const std::string& name, bool in_base = true) const {
    return w_.checkpoint_.find((in_base ? base_ : "") + name) != nullptr;
  }

  // The tensor `name` (under the base prefix when in_base) as float32 with the expected shape.
  const float* f32(const std::string& name, std::vector<std::int64_t> shape, bool in_base = true) {
    const io::TensorView& t = find(name, shape, in_base);
    if (t.dtype == io::DType::kF32) {
      w_.stats_.mapped_bytes += t.bytes;
      return reinterpret_cast<const float*>(t.data);
    }
    return convert(t);
  }

  // A norm's two vectors, under either of the names transformers accepts.
  Norm norm(const std::string& name) {
    const std::int64_t h = w_.config_.hidden_size;
    if (has(name + ".gamma") && !has(name + ".weight")) {
      return {f32(name + ".gamma", {h}), f32(name + ".beta", {h})};
    }
    return {f32(name + ".weight", {h}), f32(name + ".bias", {h})};
  }

  // A Linear layer's weight [out, in] and bias [out], packed for the device in `precision` (both
  // copied there, so neither stays in use from the mapping).
  // int8: input_max smooths the layer's inputs (ops::Linear::prepare).
  ops::Linear linear(const std::string& name, std::int64_t out, std::int64_t in,
                     bool in_base = true, ops::Precision precision = ops::Precision::kFp32,
                     const float* input_max = nullptr) {
    const io::TensorView& wt = find(name + ".weight", {out, in}, in_base);
    const io::TensorView& bt = find(name + ".bias", {out}, in_base);
    const float* bias = as_f32(bt, bias_temp_);
    ops::Linear l = bf16_as_is(wt, precision)
                        ? ops::Linear::prepare(device_, wt.data, ops::DType::kBf16, bias, out, in,
                                               precision, input_max)
                        : ops::Linear::prepare(device_, as_f32(wt, temp_), ops::DType::kF32, bias,
                                               out, in, precision, input_max);
    w_.stats_.packed_bytes += l.bytes();
    release(wt);
    return l;
  }
  // Query, key and value projections stacked into one [3·hidden, hidden] GEMM.
  ops::Linear fused_qkv(const std::string& q, const std::string& k, const std::string& v,
                        ops::Precision precision, const float* input_max = nullptr) {
    const std::int64_t h = w_.config_.hidden_size;
    const std::size_t part_size = static_cast<std::size_t>(h * h);
    const io::TensorView* parts[3];
    bool all_bf16 = true;
    int i = 0;
    for (const std::string* name : {&q, &k, &v}) {
      parts[i] = &find(*name + ".weight", {h, h}, true);
      all_bf16 = all_bf16 && bf16_as_is(*parts[i], precision);
      ++i;
    }
    AlignedBuffer<float> bias(static_cast<std::size_t>(3 * h));
    i = 0;
    for (const std::string* name : {&q, &k, &v}) {
      copy_as_f32(find(*name + ".bias", {h}, true), bias.data() + i * h);
      ++i;
    }
    ops::Linear l;
    if (all_bf16) {
      AlignedBuffer<std::uint16_t> weight(3 * part_size);
      for (int p = 0; p < 3; ++p)
        std::memcpy(weight.data() + p * part_size, parts[p]->data, part_size * 2);
      l = ops::Linear::prepare(device_, weight.data(), ops::DType::kBf16, bias.data(), 3 * h, h,
                               precision, input_max);
    } else {
      AlignedBuffer<float> weight(3 * part_size);
      for (int p = 0; p < 3; ++p) copy_as_f32(*parts[p], weight.data() + p * part_size);
      l = ops::Linear::prepare(device_, weight.data(), ops::DType::kF32, bias.data(), 3 * h, h,
                               precision, input_max);
    }
    for (const auto* t : parts) release(*t);
    w_.stats_.packed_bytes += l.bytes();
    return l;
  }
  float* own(std::size_t count) {
    w_.owned_.emplace_back(count);
    w_.stats_.converted_bytes += count * sizeof(float);
    return w_.owned_.back().data();
  }

  // Every tensor of the checkpoint is either used or known to be safe to ignore.
  void check_all_used(std::vector<std::string>* warnings) const {
    std::vector<std::string> ignored;
    for (const auto* t : w_.checkpoint_.tensors()) {
      if (used_.count(t->name)) continue;
      std::string bare = t->name.rfind(base_, 0) == 0 ? t->name.substr(base_.size()) : t->name;
      if (is_ignorable_extra(bare) || is_ignorable_extra(t->name) ||
          bare.rfind("pooler.", 0) == 0) {
        ignored.push_back(t->name);
        continue;
      }
      fail("{}: unexpected tensor '{}' for {} ({})", t->file->string(), t->name,
           w_.config_.architecture.empty() ? w_.config_.family_name() : w_.config_.architecture,
           "the checkpoint and config.json describe different models");
    }
    if (warnings && !ignored.empty()) {
      warnings->push_back(fmt::format("ignored {} tensor(s) the task does not use (e.g. '{}')",
                                      ignored.size(), ignored.front()));
    }
  }

 private:
  const io::TensorView& find(const std::string& name, const std::vector<std::int64_t>& shape,
                             bool in_base) {
    const std::string full = (in_base ? base_ : "") + name;
    const io::TensorView* t = w_.checkpoint_.find(full);
    if (t == nullptr) {
      std::string where = w_.checkpoint_.files().size() == 1
                              ? w_.checkpoint_.files()[0]->path().string()
                              : w_.directory_.string();
      fail("{}: missing tensor '{}' (needed by {} with the sizes in config.json)", where, full,
           w_.config_.architecture.empty() ? w_.config_.family_name() : w_.config_.architecture);
    }
    if (t->shape != shape) {
      std::string want = "[";
      for (std::size_t i = 0; i < shape.size(); ++i)
        want += (i ? ", " : "") + std::to_string(shape[i]);
      want += "]";
      fail("{}: tensor '{}' has shape {} but config.json implies {}", t->file->string(), full,
           t->shape_string(), want);
    }
    if (t->dtype != io::DType::kF32 && t->dtype != io::DType::kF16 &&
        t->dtype != io::DType::kBF16 && t->dtype != io::DType::kF64) {
      fail("{}: tensor '{}' has dtype {}; weights must be F32, F16, BF16 or F64", t->file->string(),
           full, io::dtype_name(t->dtype));
    }
    if (used_.insert(full).second) {
      w_.stats_.parameters += t->numel();
      std::string dt(io::dtype_name(t->dtype));
      if (w_.stats_.dtype.empty()) {
        w_.stats_.dtype = dt;
      } else if (w_.stats_.dtype != dt && w_.stats_.dtype != "mixed") {
        w_.stats_.dtype = "mixed";
      }
    }
    return *t;
  }

  static void copy_as_f32(const io::TensorView& t, float* out) {
    const std::int64_t n = t.numel();
    switch (t.dtype) {
      case io::DType::kF32:
        std::memcpy(out, t.data, static_cast<std::size_t>(n) * 4);
        break;
      case io::DType::kF16: {
        const auto* p = reinterpret_cast<const std::uint16_t*>(t.data);
        for (std::int64_t i = 0; i < n; ++i) out[i] = half_to_float(p[i]);
        break;
      }
      case io::DType::kBF16: {
        const auto* p = reinterpret_cast<const std::uint16_t*>(t.data);
        for (std::int64_t i = 0; i < n; ++i) out[i] = bf16_to_float(p[i]);
        break;
      }
      case io::DType::kF64: {
        const auto* p = reinterpret_cast<const double*>(t.data);
        for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(p[i]);
        break;
      }
      default:
        fail("internal: unexpected dtype");
    }
  }

  const float* convert(const io::TensorView& t) {
    float* out = own(static_cast<std::size_t>(t.numel()));
    copy_as_f32(t, out);
    release(t);
    return out;
  }

  // The tensor as float32: in place when it is, else a copy in `scratch` that lives until the
  // next use of the same scratch (GEMM weights are packed right away).
  static const float* as_f32(const io::TensorView& t, AlignedBuffer<float>& scratch) {
    if (t.dtype == io::DType::kF32) return reinterpret_cast<const float*>(t.data);
    scratch.resize(static_cast<std::size_t>(t.numel()));
    copy_as_f32(t, scratch.data());
    return scratch.data();
  }

  // A bf16 tensor for a bf16 or int8 layer is packed (or quantized) from the checkpoint's
  // bits, never widened.
  static bool bf16_as_is(const io::TensorView& t, ops::Precision precision) {
    return t.dtype == io::DType::kBF16 &&
           (precision == ops::Precision::kBf16 || precision == ops::Precision::kInt8);
  }
  void release(const io::TensorView& t) { w_.checkpoint_.release(t); }

  Weights& w_;
  const ops::Device& device_;
  std::string base_;
  std::set<std::string> used_;
  AlignedBuffer<float> temp_, bias_temp_;
};

namespace {

ops::Precision checked_precision(ops::Precision precision) {
  if (precision == ops::Precision::kAuto)
    fail("internal: weights need a resolved precision (fp32 or bf16), not auto");
  return precision;
}

// DistilBERT's fixed table: even columns sin(pos / 10000^(2i/d)), odd columns cos of the same.
void fill_sinusoidal(float* out, std::int64_t positions, std::int64_t dim) {
  for (std::int64_t pos = 0; pos < positions; ++pos) {
    for (std::int64_t j = 0; j < dim; ++j) {
      double angle =
          static_cast<double>(pos) / std::pow(10000.0, 2.0 * static_cast<double>(j / 2) / dim);
      out[pos * dim + j] = static_cast<float>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  }
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
  w->config_ = std::move(config);
  w->checkpoint_ = io::Checkpoint::open(model_dir);
  w->stats_.file_bytes = w->checkpoint_.total_bytes();
  const ModelConfig& c = w->config_;
  const std::int64_t h = c.hidden_size, inter = c.intermediate_size;
  WeightLoader L(*w, device);
  // The encoder layers' precision (the head stays fp32), per GEMM for an int8 plan.
  auto lp_for = [&](std::int64_t layer, GemmSlot slot) {
    const bool kept = std::binary_search(w->kept_.begin(), w->kept_.end(), GemmId{layer, slot});
    return kept ? ops::int8_fallback_precision() : w->precision_;
  };
  auto range = [&](std::int64_t layer, GemmSlot slot) -> const float* {
    if (!ranges || lp_for(layer, slot) != ops::Precision::kInt8) return nullptr;
    return ranges->of(GemmId{layer, slot});
  };
  w->smoothed_ = ranges != nullptr && precision == ops::Precision::kInt8;

  auto& e = w->embeddings_;
  e.word = L.f32("embeddings.word_embeddings.weight", {c.vocab_size, h});
  if (c.family == Family::kDistilBert && c.sinusoidal_positions &&
      !L.has("embeddings.position_embeddings.weight")) {
    float* table = L.own(static_cast<std::size_t>(c.max_position_embeddings * h));
    fill_sinusoidal(table, c.max_position_embeddings, h);
    e.position = table;
  } else {
    e.position = L.f32("embeddings.position_embeddings.weight", {c.max_position_embeddings, h});
  }
  if (c.type_vocab_size > 0) {
    e.token_type = L.f32("embeddings.token_type_embeddings.weight", {c.type_vocab_size, h});
  }
  e.norm = L.norm("embeddings.LayerNorm");

  w->layers_.reserve(static_cast<std::size_t>(c.num_layers));
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    LayerWeights layer;
    const ops::Precision qkv_p = lp_for(i, GemmSlot::kQkv),
                         attn_out_p = lp_for(i, GemmSlot::kAttnOut),
                         ffn_in_p = lp_for(i, GemmSlot::kFfnIn),
                         ffn_out_p = lp_for(i, GemmSlot::kFfnOut);
    if (c.family == Family::kDistilBert) {
      const std::string p = fmt::format("transformer.layer.{}.", i);
      layer.qkv = L.fused_qkv(p + "attention.q_lin", p + "attention.k_lin", p + "attention.v_lin",
                              qkv_p, range(i, GemmSlot::kQkv));
      layer.attn_out =
          L.linear(p + "attention.out_lin", h, h, true, attn_out_p, range(i, GemmSlot::kAttnOut));
      layer.attn_norm = L.norm(p + "sa_layer_norm");
      layer.ffn_in = L.linear(p + "ffn.lin1", inter, h, true, ffn_in_p, range(i, GemmSlot::kFfnIn));
      layer.ffn_out =
          L.linear(p + "ffn.lin2", h, inter, true, ffn_out_p, range(i, GemmSlot::kFfnOut));
      layer.ffn_norm = L.norm(p + "output_layer_norm");
    } else {
      const std::string p = fmt::format("encoder.layer.{}.", i);
      layer.qkv = L.fused_qkv(p + "attention.self.query", p + "attention.self.key",
                              p + "attention.self.value", qkv_p, range(i, GemmSlot::kQkv));
      layer.attn_out = L.linear(p + "attention.output.dense", h, h, true, attn_out_p,
                                range(i, GemmSlot::kAttnOut));
      layer.attn_norm = L.norm(p + "attention.output.LayerNorm");
      layer.ffn_in =
          L.linear(p + "intermediate.dense", inter, h, true, ffn_in_p, range(i, GemmSlot::kFfnIn));
      layer.ffn_out =
          L.linear(p + "output.dense", h, inter, true, ffn_out_p, range(i, GemmSlot::kFfnOut));
      layer.ffn_norm = L.norm(p + "output.LayerNorm");
    }
    w->layers_.push_back(std::move(layer));
  }

  if (c.head == Head::kSequenceClassification) {
    const std::int64_t labels = c.num_labels;
    ClassifierWeights head;
    switch (c.family) {
      case Family::kBert:
        head.dense = L.linear("pooler.dense", h, h);
        head.dense_act = ops::Activation::kTanh;
        head.out = L.linear("classifier", labels, h, /*in_base=*/false);
        break;
      case Family::kRoberta:
        head.dense = L.linear("classifier.dense", h, h, false);
        head.dense_act = ops::Activation::kTanh;
        head.out = L.linear("classifier.out_proj", labels, h, false);
        break;
      case Family::kDistilBert:
        head.dense = L.linear("pre_classifier", h, h, false);
        head.dense_act = ops::Activation::kRelu;
        head.out = L.linear("classifier", labels, h, false);
        break;
    }
    w->classifier_ = std::move(head);
  }
  L.check_all_used(warnings);
  return w;
}

}  // namespace mcinfer::cpu
