#pragma once
// One read-only copy of a model's weights per process, shared by every replica. Tensors used as
// they are (embeddings, norms) stay in the file mapping; GEMM weights are packed once for the
// device (in fp32 or bf16); other fp16/bf16 tensors are converted to float32 once. Immutable
// after load().

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/relative_tables.h"
#include "backends/cpu/rotary.h"
#include "core/aligned_buffer.h"
#include "model/config.h"
#include "model/encoder_desc.h"
#include "model/gemm_plan.h"
#include "model/tensors.h"

namespace mcinfer::model {
class ModelDir;
}

namespace mcinfer::cpu {

struct Norm {
  const float* gamma = nullptr;  // [hidden]; null for an absent norm (model::NormDesc::present)
  const float* beta = nullptr;   // [hidden]; zeros for a norm without a shift
  bool present() const { return gamma != nullptr; }
};

struct EmbeddingWeights {
  const float* word = nullptr;        // [vocab, width]
  const float* position = nullptr;    // [max_positions, width]
  const float* token_type = nullptr;  // [type_vocab, width], null without token types
  Norm norm;
  std::optional<ops::Linear> projection;  // width -> hidden, fp32 (ELECTRA)
  const float* relative_bias = nullptr;   // [table_rows, heads] (MPNet)
};

// A layer's GEMMs as the description lists them (query, key and value fused into one), each
// prepared in the precision the plan gives it.
struct LayerWeights {
  std::vector<ops::Linear> gemms;                            // as model::LayerDesc::gemms
  std::array<int, model::kGemmSlots> index{-1, -1, -1, -1};  // slot -> position in gemms
  std::array<Norm, model::kNormSlots> norms;  // by model::NormSlot; absent where none
  const Norm& norm(model::NormSlot slot) const { return norms[static_cast<std::size_t>(slot)]; }
  RelativeTables relative;  // DeBERTa-v2: the projected relative-position table; empty otherwise
  const RotaryTable* rotary = nullptr;  // the table of this layer's rotary base, if it has one
  const ops::Linear& gemm(model::GemmSlot slot) const {
    return gemms[static_cast<std::size_t>(index[static_cast<std::size_t>(slot)])];
  }
};

// The sequence-classification head on the first token (model::HeadDesc): dense + its activation,
// then the projection to the labels.
struct ClassifierWeights {
  std::optional<ops::Linear> dense;  // absent in decoders' heads
  ops::Activation dense_act = ops::Activation::kTanh;
  ops::Linear out;
  Norm norm;  // after the activation (ModernBERT), absent otherwise
  float norm_eps = 1e-5f;
  model::HeadPooling pooling = model::HeadPooling::kFirst;  // which token(s) go in
  std::int64_t pad_id = -1;                                 // kLastNonPad skips it
};

// A SparseEncoder's MLM head (model::MlmHeadDesc), fp32: the transform, its LayerNorm, and the
// projection onto the vocabulary packed from the word embeddings with the decoder bias.
struct MlmHeadWeights {
  ops::Linear transform;
  ops::Activation transform_act = ops::Activation::kGeluErf;
  Norm norm;
  float norm_eps = 1e-12f;
  ops::Linear decoder;  // [vocab, hidden]
};

using WeightStats = backend::WeightStats;

class Weights {
 public:
  // Loads config.json and the safetensors of `model_dir`. Throws Error naming the file and the
  // tensor or field on any inconsistency; `warnings` receives notes about ignored tensors.
  // `precision` is that of the encoder layers' GEMMs (fp32, bf16 or int8); the classification
  // head always runs in fp32 (a few hundred thousand FLOPs per row, and it sets the
  // probabilities). With int8, the GEMMs in `keep` are prepared in
  // ops::int8_fallback_precision() instead, and `ranges` (when given) smooth each int8 GEMM's
  // inputs (ops::Linear::prepare).
  static std::shared_ptr<const Weights> load(const std::filesystem::path& model_dir,
                                             const ops::Device& device,
                                             std::vector<std::string>* warnings = nullptr,
                                             ops::Precision precision = ops::Precision::kFp32,
                                             std::span<const model::GemmId> keep = {},
                                             const model::InputRanges* ranges = nullptr);
  // The same, with config.json as `dir` read it, and the network `desc` describes when given
  // (else model::describe_encoder(config)).
  static std::shared_ptr<const Weights> load(const model::ModelDir& dir, const ops::Device& device,
                                             std::vector<std::string>* warnings = nullptr,
                                             ops::Precision precision = ops::Precision::kFp32,
                                             std::span<const model::GemmId> keep = {},
                                             const model::InputRanges* ranges = nullptr,
                                             const model::EncoderDesc* desc = nullptr);

  // A model of the given shape with seeded random weights and no files, for benchmarks.
  static std::shared_ptr<const Weights> synthetic(const model::ModelConfig& config,
                                                  const ops::Device& device, std::uint32_t seed = 1,
                                                  ops::Precision precision = ops::Precision::kFp32);

  const model::ModelConfig& config() const { return config_; }
  const model::EncoderDesc& desc() const { return desc_; }
  const EmbeddingWeights& embeddings() const { return embeddings_; }
  const std::vector<LayerWeights>& layers() const { return layers_; }
  const std::optional<ClassifierWeights>& classifier() const { return classifier_; }
  const std::optional<MlmHeadWeights>& mlm_head() const { return mlm_head_; }
  const Norm& final_norm() const { return final_norm_; }  // absent unless pre-norm
  // One of the encoder layers' dense GEMMs by name, and the activation its output takes.
  const ops::Linear& linear(model::GemmId id) const;
  ops::Activation activation(model::GemmId id) const;
  const WeightStats& stats() const { return stats_; }
  ops::Precision precision() const { return precision_; }
  // The type attention runs in: f32 for fp32 models, bf16 for bf16 ones, and for int8 ones that
  // of ops::int8_fallback_precision().
  ops::DType attention_type() const;
  // int8: the GEMMs kept in ops::int8_fallback_precision() (sorted); empty otherwise.
  const std::vector<model::GemmId>& kept() const { return kept_; }
  // int8: whether the inputs of the int8 GEMMs are smoothed (calibrated on check rows).
  bool smoothed() const { return smoothed_; }
  const std::filesystem::path& directory() const { return directory_; }

 private:
  Weights() = default;
  friend class WeightLoader;
  // The rotary table of `theta` for heads of `head_dim` (built on first use), shared by every
  // layer of that base.
  const RotaryTable* rotary_table(double theta, std::int64_t head_dim);
  static std::shared_ptr<const Weights> load_with(
      const std::filesystem::path& model_dir, model::ModelConfig config, const ops::Device& device,
      std::vector<std::string>* warnings, ops::Precision precision,
      std::span<const model::GemmId> keep, const model::InputRanges* ranges,
      const model::EncoderDesc* desc = nullptr);

  std::filesystem::path directory_;
  model::ModelConfig config_;
  model::EncoderDesc desc_;
  model::ModelTensors tensors_;              // keeps the mapping alive
  std::vector<AlignedBuffer<float>> owned_;  // converted or computed float32 tensors
  EmbeddingWeights embeddings_;
  std::vector<LayerWeights> layers_;
  std::optional<ClassifierWeights> classifier_;
  std::optional<MlmHeadWeights> mlm_head_;
  Norm final_norm_;
  // One table per rotary base, up to the model's positions (unique_ptr: layers point into them).
  std::vector<std::unique_ptr<RotaryTable>> rotary_;
  WeightStats stats_;
  ops::Precision precision_ = ops::Precision::kFp32;
  std::vector<model::GemmId> kept_;
  bool smoothed_ = false;
};

}  // namespace mcinfer::cpu
