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
  // ModernBERT's masked-LM head and decoder bias sit at the top as head.* and decoder.*.
  return ends("position_ids") || ends("token_type_ids") || starts("cls.") || starts("lm_head.") ||
         starts("head.") || starts("decoder.") || starts("vocab_transform.") ||
         starts("vocab_layer_norm.") || starts("vocab_projector.") || starts("lm_predictions.") ||
         starts("mask_predictions.");
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

  // A norm's vectors, under either of the names transformers accepts (none for an absent
  // norm, no shift for one without bias).
  NormTensors norm(const NormDesc& desc, bool in_base = true) {
    if (!desc.present()) return {};
    const std::string& name = desc.name;
    const std::int64_t h = desc.width;
    if (has(name + ".gamma") && !has(name + ".weight"))
      return {&find(name + ".gamma", {h}), desc.bias ? &find(name + ".beta", {h}) : nullptr};
    return {&find(name + ".weight", {h}, in_base),
            desc.bias ? &find(name + ".bias", {h}, in_base) : nullptr};
  }

  LinearTensors linear(const std::string& name, std::int64_t out, std::int64_t in, bool bias,
                       bool in_base) {
    return {&find(name + ".weight", {out, in}, in_base),
            bias ? &find(name + ".bias", {out}, in_base) : nullptr};
  }

  GemmTensors gemm(const LinearDesc& desc) {
    GemmTensors g;
    for (std::size_t i = 0; i < desc.parts.size(); ++i)
      g.parts.push_back(
          linear(desc.parts[i], desc.part_outs.at(i), desc.in, desc.bias, desc.in_base));
    return g;
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

ModelTensors ModelTensors::open(const std::filesystem::path& dir, const ModelConfig& config,
                                std::vector<std::string>* warnings, const EncoderDesc* desc) {
  ModelTensors t;
  t.config_ = config;
  t.desc_ = desc ? *desc : describe_encoder(config);
  t.checkpoint_ = io::Checkpoint::open(dir);
  t.stats_.file_bytes = t.checkpoint_.total_bytes();
  const EncoderDesc& d = t.desc_;
  const EmbeddingDesc& e = d.embeddings;
  TensorFinder f(t, dir);
  t.word_ = &f.find(e.word + ".weight", {e.vocab, e.width});
  // DistilBERT's sinusoidal table may be absent (then computed) or saved (then used as is);
  // DeBERTa-v3 and ModernBERT have none.
  if (e.positions != PositionScheme::kNone && e.positions != PositionScheme::kRotary &&
      !(e.positions == PositionScheme::kSinusoidal && !f.has(e.position + ".weight")))
    t.position_ = &f.find(e.position + ".weight", {e.max_positions, e.width});
  if (!e.token_type.empty())
    t.token_type_ = &f.find(e.token_type + ".weight", {e.type_vocab, e.width});
  t.embedding_norm_ = f.norm(e.norm);
  if (e.projection) t.projection_ = f.gemm(*e.projection).parts.front();
  if (d.relative_bias)
    t.relative_bias_ =
        &f.find(d.relative_bias->table + ".weight", {d.relative_bias->table_rows, d.heads});
  if (d.disentangled) {
    t.relative_table_ =
        &f.find(d.disentangled->table + ".weight", {d.disentangled->rows(), d.hidden});
    if (d.disentangled->norm) t.relative_table_norm_ = f.norm(*d.disentangled->norm);
  }
  t.layers_.reserve(d.layers.size());
  for (const LayerDesc& layer : d.layers) {
    LayerTensors lt;
    for (const GemmDesc& g : layer.gemms) lt.gemms.push_back(f.gemm(g.linear));
    for (const auto& [slot, name] : kNormSlotNames.entries)
      lt.norms[static_cast<std::size_t>(slot)] = f.norm(layer.norm(slot));
    if (layer.position_key) lt.position_key = f.gemm(*layer.position_key).parts.front();
    if (layer.position_query) lt.position_query = f.gemm(*layer.position_query).parts.front();
    t.layers_.push_back(std::move(lt));
  }
  t.final_norm_ = f.norm(d.final_norm);
  if (d.head) {
    HeadTensors head;
    if (d.head->dense) head.dense = f.gemm(*d.head->dense).parts.front();
    head.out = f.gemm(d.head->out).parts.front();
    head.norm = f.norm(d.head->norm, false);
    t.head_ = head;
  }
  if (const auto& m = d.mlm_head) {
    // An untied decoder would be another [vocab, hidden] matrix: not what this head describes.
    if (const Tensor* untied = t.checkpoint_.find(m->untied_decoder)) {
      fail(
          "{}: tensor '{}': an untied MLM decoder is not supported (mcinfer projects onto the word "
          "embeddings, as tie_word_embeddings does)",
          untied->file->string(), m->untied_decoder);
    }
    t.mlm_head_ = MlmHeadTensors{
        f.gemm(m->transform), f.norm(m->norm, false),
        m->decoder_bias.empty() ? nullptr : &f.find(m->decoder_bias, {m->vocab}, false)};
  }
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
