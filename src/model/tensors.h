#pragma once
// The checkpoint's tensors as an encoder uses them, by role: every tensor the encoder description
// (encoder_desc.h) names is found, its shape checked against the
// config and its dtype one a backend can take (F32, F16, BF16, F64); each is a view of the read-
// only file mapping. Nothing here knows a device: packing for a GEMM library, converting dtypes
// or uploading to an accelerator is the backend's (backends/cpu/weights.h).
//
// Immutable after open(); the views stay valid while the ModelTensors lives.

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/config.h"
#include "model/encoder_desc.h"

namespace mcinfer::model {

using Tensor = io::TensorView;

struct NormTensors {
  const Tensor* gamma = nullptr;  // [width]; null for an absent norm (NormDesc::present)
  const Tensor* beta = nullptr;   // [width]; null without a shift (NormDesc::bias)
};

struct LinearTensors {
  const Tensor* weight = nullptr;  // [out, in] (PyTorch layout)
  const Tensor* bias = nullptr;    // [out]; null when the description says the layer has none
};

// One GEMM of the description: its parts, stacked along the output in this order.
struct GemmTensors {
  std::vector<LinearTensors> parts;
};

struct LayerTensors {
  std::vector<GemmTensors> gemms;             // as LayerDesc::gemms
  std::array<NormTensors, kNormSlots> norms;  // by NormSlot; empty where the layer has none
  const NormTensors& norm(NormSlot slot) const { return norms[static_cast<std::size_t>(slot)]; }
  std::optional<LinearTensors> position_key;    // LayerDesc::position_key
  std::optional<LinearTensors> position_query;  // LayerDesc::position_query
};

struct HeadTensors {
  std::optional<LinearTensors> dense;  // HeadDesc::dense
  LinearTensors out;
  NormTensors norm;  // HeadDesc::norm (ModernBERT); empty otherwise
};

// MlmHeadDesc's tensors; the decoder's weight is the word embeddings.
struct MlmHeadTensors {
  GemmTensors transform;
  NormTensors norm;
  const Tensor* decoder_bias = nullptr;  // [vocab]
};

struct TensorStats {
  std::int64_t parameters = 0;   // elements of every tensor the model uses
  std::uint64_t file_bytes = 0;  // bytes of all tensors in the checkpoint files
  std::string dtype;             // of the tensors used ("F32", "F16", "BF16", "mixed")
};

class ModelTensors {
 public:
  // Opens the checkpoint in `dir` (model.safetensors or a sharded index) and finds every tensor
  // of `config`. Throws Error naming the file and the tensor: missing, of the wrong shape or
  // dtype, or unexpected (the checkpoint and config.json describe different models); tensors
  // known to be safe to ignore (pre-training heads, saved buffers) are noted in `warnings`.
  // `desc` replaces describe_encoder(config) when given.
  static ModelTensors open(const std::filesystem::path& dir, const ModelConfig& config,
                           std::vector<std::string>* warnings = nullptr,
                           const EncoderDesc* desc = nullptr);

  const ModelConfig& config() const { return config_; }
  const EncoderDesc& desc() const { return desc_; }
  const Tensor& word_embeddings() const { return *word_; }  // [vocab, width]
  // [max_positions, width]; null for a DistilBERT checkpoint with sinusoidal positions and no
  // stored table (fill_sinusoidal() computes it).
  const Tensor* position_embeddings() const { return position_; }
  const Tensor* token_type_embeddings() const { return token_type_; }  // null without types
  const NormTensors& embedding_norm() const { return embedding_norm_; }
  const std::optional<LinearTensors>& embedding_projection() const { return projection_; }
  const Tensor* relative_bias_table() const { return relative_bias_; }  // [rows, heads] or null
  // DeBERTa-v2's relative-position table [2 · span, hidden] and its LayerNorm (DisentangledDesc).
  const Tensor* relative_table() const { return relative_table_; }
  const std::optional<NormTensors>& relative_table_norm() const { return relative_table_norm_; }
  const std::vector<LayerTensors>& layers() const { return layers_; }
  const NormTensors& final_norm() const { return final_norm_; }  // empty when not pre-norm
  const std::optional<HeadTensors>& head() const { return head_; }
  const std::optional<MlmHeadTensors>& mlm_head() const { return mlm_head_; }
  const TensorStats& stats() const { return stats_; }

  // After a backend has copied a tensor into its own form, its pages may leave memory.
  void release(const Tensor& tensor) const { checkpoint_.release(tensor); }

 private:
  friend class TensorFinder;
  ModelConfig config_;
  EncoderDesc desc_;
  io::Checkpoint checkpoint_;
  const Tensor* word_ = nullptr;
  const Tensor* position_ = nullptr;
  const Tensor* token_type_ = nullptr;
  NormTensors embedding_norm_;
  std::optional<LinearTensors> projection_;
  const Tensor* relative_bias_ = nullptr;
  const Tensor* relative_table_ = nullptr;
  std::optional<NormTensors> relative_table_norm_;
  std::vector<LayerTensors> layers_;
  NormTensors final_norm_;
  std::optional<HeadTensors> head_;
  std::optional<MlmHeadTensors> mlm_head_;
  TensorStats stats_;
};

// The tensor's values as float32 (F32, F16, BF16 and F64 are exact or rounded to nearest):
// `out` holds t.numel() floats.
void copy_as_f32(const Tensor& t, float* out);

// DistilBERT's fixed position table [positions, dim]: even columns sin(pos / 10000^(2i/d)),
// odd columns cos of the same.
void fill_sinusoidal(float* out, std::int64_t positions, std::int64_t dim);

}  // namespace mcinfer::model
