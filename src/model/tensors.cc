#include "model/tensors.h"

#include <cmath>
#include <cstring>
#include <set>

#include "core/error.h"
#include "core/half.h"

namespace mcinfer::model {
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

std::string model_name(const ModelConfig& c) {
  return c.architecture.empty() ? c.family_name() : c.architecture;
}

}  // namespace

// Finds tensors by name under the base prefix, checks them and remembers which were used.
class TensorFinder {
 public:
  TensorFinder(ModelTensors& t, const std::filesystem::path& dir) : t_(t), dir_(dir) {
    const std::string prefix = t.config_.base_prefix() + ".";
    for (const auto* tensor : t.checkpoint_.tensors()) {
      if (tensor->name.rfind(prefix, 0) == 0) {
        base_ = prefix;
        break;
      }
    }
  }

  bool has(const std::string& name) const { return t_.checkpoint_.find(base_ + name) != nullptr; }

  const Tensor& find(const std::string& name, const std::vector<std::int64_t>& shape,
                     bool in_base = true) {
    const std::string full = (in_base ? base_ : "") + name;
    const Tensor* t = t_.checkpoint_.find(full);
    if (t == nullptr) {
      const std::string where = t_.checkpoint_.files().size() == 1
                                    ? t_.checkpoint_.files()[0]->path().string()
                                    : dir_.string();
      fail("{}: missing tensor '{}' (needed by {} with the sizes in config.json)", where, full,
           model_name(t_.config_));
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
      TensorStats& s = t_.stats_;
      s.parameters += t->numel();
      const std::string dt(io::dtype_name(t->dtype));
      if (s.dtype.empty()) {
        s.dtype = dt;
      } else if (s.dtype != dt && s.dtype != "mixed") {
        s.dtype = "mixed";
      }
    }
    return *t;
  }

  // A norm's two vectors, under either of the names transformers accepts.
  NormTensors norm(const std::string& name) {
    const std::int64_t h = t_.config_.hidden_size;
    if (has(name + ".gamma") && !has(name + ".weight"))
      return {&find(name + ".gamma", {h}), &find(name + ".beta", {h})};
    return {&find(name + ".weight", {h}), &find(name + ".bias", {h})};
  }

  LinearTensors linear(const std::string& name, std::int64_t out, std::int64_t in,
                       bool in_base = true) {
    return {&find(name + ".weight", {out, in}, in_base), &find(name + ".bias", {out}, in_base)};
  }

  // Every tensor of the checkpoint is either used or known to be safe to ignore.
  void check_all_used(std::vector<std::string>* warnings) const {
    std::vector<std::string> ignored;
    for (const auto* t : t_.checkpoint_.tensors()) {
      if (used_.count(t->name)) continue;
      const std::string bare =
          t->name.rfind(base_, 0) == 0 ? t->name.substr(base_.size()) : t->name;
      if (is_ignorable_extra(bare) || is_ignorable_extra(t->name) ||
          bare.rfind("pooler.", 0) == 0) {
        ignored.push_back(t->name);
        continue;
      }
      fail("{}: unexpected tensor '{}' for {} ({})", t->file->string(), t->name,
           model_name(t_.config_), "the checkpoint and config.json describe different models");
    }
    if (warnings && !ignored.empty()) {
      warnings->push_back(fmt::format("ignored {} tensor(s) the task does not use (e.g. '{}')",
                                      ignored.size(), ignored.front()));
    }
  }

 private:
  ModelTensors& t_;
  const std::filesystem::path& dir_;
  std::string base_;
  std::set<std::string> used_;
};

namespace {

// Where each family keeps a layer's tensors below its layer prefix ({} is the layer index), in
// the order of the members (the fixtures of every family check each name).
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

LayerTensors find_layer(TensorFinder& f, const ModelConfig& c, std::int64_t i) {
  const std::int64_t h = c.hidden_size, inter = c.intermediate_size;
  const LayerNames& n = c.family == Family::kDistilBert ? kDistilBertLayer : kBertLayer;
  const std::string p = fmt::format(fmt::runtime(n.prefix), i);
  LayerTensors layer;
  layer.query = f.linear(p + n.query, h, h);
  layer.key = f.linear(p + n.key, h, h);
  layer.value = f.linear(p + n.value, h, h);
  layer.attn_out = f.linear(p + n.attn_out, h, h);
  layer.attn_norm = f.norm(p + n.attn_norm);
  layer.ffn_in = f.linear(p + n.ffn_in, inter, h);
  layer.ffn_out = f.linear(p + n.ffn_out, h, inter);
  layer.ffn_norm = f.norm(p + n.ffn_norm);
  return layer;
}

HeadTensors find_head(TensorFinder& f, const ModelConfig& c) {
  const std::int64_t h = c.hidden_size, labels = c.num_labels;
  HeadTensors head;
  switch (c.family) {
    case Family::kBert:
      head.dense = f.linear("pooler.dense", h, h);
      head.dense_activation = Activation::kTanh;
      head.out = f.linear("classifier", labels, h, /*in_base=*/false);
      break;
    case Family::kRoberta:
      head.dense = f.linear("classifier.dense", h, h, false);
      head.dense_activation = Activation::kTanh;
      head.out = f.linear("classifier.out_proj", labels, h, false);
      break;
    case Family::kDistilBert:
      head.dense = f.linear("pre_classifier", h, h, false);
      head.dense_activation = Activation::kRelu;
      head.out = f.linear("classifier", labels, h, false);
      break;
  }
  return head;
}

}  // namespace

ModelTensors ModelTensors::open(const std::filesystem::path& dir, const ModelConfig& config,
                                std::vector<std::string>* warnings) {
  ModelTensors t;
  t.config_ = config;
  t.checkpoint_ = io::Checkpoint::open(dir);
  t.stats_.file_bytes = t.checkpoint_.total_bytes();
  const ModelConfig& c = t.config_;
  const std::int64_t h = c.hidden_size;
  TensorFinder f(t, dir);
  t.word_ = &f.find("embeddings.word_embeddings.weight", {c.vocab_size, h});
  if (!(c.family == Family::kDistilBert && c.sinusoidal_positions &&
        !f.has("embeddings.position_embeddings.weight"))) {
    t.position_ = &f.find("embeddings.position_embeddings.weight", {c.max_position_embeddings, h});
  }
  if (c.type_vocab_size > 0)
    t.token_type_ = &f.find("embeddings.token_type_embeddings.weight", {c.type_vocab_size, h});
  t.embedding_norm_ = f.norm("embeddings.LayerNorm");
  t.layers_.reserve(static_cast<std::size_t>(c.num_layers));
  for (std::int64_t i = 0; i < c.num_layers; ++i) t.layers_.push_back(find_layer(f, c, i));
  if (c.head == Head::kSequenceClassification) t.head_ = find_head(f, c);
  f.check_all_used(warnings);
  return t;
}

void fill_sinusoidal(float* out, std::int64_t positions, std::int64_t dim) {
  for (std::int64_t pos = 0; pos < positions; ++pos) {
    for (std::int64_t j = 0; j < dim; ++j) {
      const double angle =
          static_cast<double>(pos) / std::pow(10000.0, 2.0 * static_cast<double>(j / 2) / dim);
      out[pos * dim + j] = static_cast<float>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  }
}

void copy_as_f32(const Tensor& t, float* out) {
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
      fail("{}: tensor {} has dtype {}, not a float type", t.file ? t.file->string() : "?", t.name,
           io::dtype_name(t.dtype));
  }
}

}  // namespace mcinfer::model
