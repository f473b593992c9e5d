#pragma once
// One replica's forward pass. The batch is packed: only real tokens, one sequence after the
// other, so padding costs nothing and can never change a real token's output. Each Encoder owns
// its activation buffers and shares the read-only Weights with every other replica.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cpu/weights.h"
#include "core/aligned_buffer.h"
#include "model/gemm_plan.h"
#include "model/packing.h"
#include "model/task.h"

namespace mcinfer::cpu {

using model::SequenceInput;
using model::TaskSpec;

class Encoder {
 public:
  Encoder(std::shared_ptr<const Weights> weights, const ops::Device& device, int threads,
          ops::EpilogueMode epilogue = ops::EpilogueMode::kInGemm);

  // Values per sequence that predict() writes: labels for classify; for embed the pooled width
  // (hidden size per pooling mode), or the last Dense layer's out_features.
  std::int64_t output_dim(const TaskSpec& task) const;

  // Runs the batch and writes [batch, output_dim] values, row i for sequence i.
  // Throws Error naming the sequence for ids outside the vocabulary, type ids outside the
  // token-type table, or a sequence longer than the position table.
  void predict(std::span<const SequenceInput> batch, const TaskSpec& task, std::vector<float>& out);

  // The base model alone: afterwards hidden() holds [tokens(), hidden] for the real tokens.
  void forward(std::span<const SequenceInput> batch);
  const float* hidden() const { return x_.data(); }
  std::int64_t tokens() const { return tokens_; }
  std::span<const ops::SequenceSpan> sequences() const { return spans_; }

  ops::Context& context() { return ctx_; }
  const Weights& weights() const { return *weights_; }
  std::size_t workspace_bytes() const;

  // Activation memory one replica needs for a batch of `tokens` real tokens whose longest
  // sequence has `max_len` tokens, with `threads` threads.
  static std::uint64_t activation_bytes(const model::ModelConfig& config, std::int64_t tokens,
                                        std::int64_t max_len, int threads,
                                        ops::Precision precision = ops::Precision::kFp32);
  // FLOPs of the forward pass for the batch just run (GEMMs + attention).
  double last_flops() const { return last_flops_; }

  // Sees every dense GEMM of an fp32 forward pass: its input x [rows, in] and output y
  // [rows, out] (activation applied), for measuring what int8 would change (calibration).
  using GemmObserver = std::function<void(model::GemmId id, const ops::Linear& w, const float* x,
                                          std::int64_t rows, const float* y, ops::Activation act)>;
  void observe(GemmObserver observer) { observer_ = std::move(observer); }

 private:
  void pack(std::span<const SequenceInput> batch);
  // The rows a layer's QKV GEMM and attention write (f32 or bf16, as attention runs) and its
  // projections write (bf16 in bf16 models, else f32), each grown for this batch.
  struct LayerRows {
    ops::Rows qkv, context, projected;
  };
  LayerRows layer_rows();
  // Every layer, as its description's steps say (encoder.cc), then the final norm.
  void layers(ops::ScoreBias bias);
  // x_ as `next` reads it: itself, or its bf16 copy.
  ops::ConstRows stream_rows(const ops::Linear& next);
  // `rows` as `next` reads them (f32 rounded to bf16 for a bf16 layer; int8 quantizes itself).
  ops::ConstRows as_input(ops::Rows rows, const ops::Linear& next);
  void attend(std::size_t layer, ops::Rows qkv, ops::Rows context, ops::ScoreBias bias);
  void block_norm(const Norm& n, const model::NormDesc& desc, ops::Rows projected);
  ops::ConstRows close_block(bool pre, const Norm& n, const model::NormDesc& desc,
                             ops::Rows projected, const ops::Linear* next);
  ops::ConstRows normalize_in_place(const Norm& n, const model::NormDesc& desc,
                                    const ops::Linear* next,
                                    ops::Rows residual = {nullptr, ops::DType::kF32});
  ops::Rows ffn_middle(std::size_t layer, ops::ConstRows x_in);
  // x_ normalized by `n` into normed_ (x_ kept), in the type `next` reads; x_ itself (or its
  // bf16 copy) for an absent norm.
  ops::ConstRows normalized(const Norm& n, const model::NormDesc& desc, const ops::Linear& next);
  // One GEMM, shown to the observer when its input and output are f32.
  void run_gemm(std::int64_t layer, const model::GemmDesc& g, const ops::Linear& w,
                ops::ConstRows x, ops::Rows y, ops::Activation act);
  void classify(float* logits);
  // --task sparse: [batch, vocab] SPLADE weights into `out` (see encoder.cc).
  void sparse(const model::SparseSpec& spec, float* out);

  std::shared_ptr<const Weights> weights_;
  ops::Context ctx_;
  // Packed batch.
  model::PackedBatch packed_;             // ids, types, positions [tokens]; spans [batch]
  std::vector<ops::SequenceSpan> spans_;  // [batch]: packed_.spans for the attention kernels
  std::int64_t tokens_ = 0;
  double last_flops_ = 0;
  GemmObserver observer_;
  // Activations, each with room for ops::padded_rows(tokens) rows.
  AlignedBuffer<float> x_;        // [tokens, hidden]: the residual stream
  AlignedBuffer<float> qkv_;      // [tokens, 3·hidden]
  AlignedBuffer<float> ctx_buf_;  // [tokens, hidden]: attention output
  AlignedBuffer<float> tmp_;      // [tokens, hidden]: projection outputs before residual+norm
  AlignedBuffer<float> ffn_;      // [tokens, intermediate]
  AlignedBuffer<float> normed_;   // [tokens, hidden]: pre-norm layers' normalized x
  AlignedBuffer<float> gate_;     // [tokens, 2·intermediate]: a gated FFN's [a | g]
  AlignedBuffer<float> head_in_, head_mid_;  // [batch, hidden]: first-token rows, head dense
  std::vector<float> logits_;                // [batch, labels]
  AlignedBuffer<float> mlm_in_;              // [tokens, hidden]: the MLM head's transform output
  AlignedBuffer<float> vocab_block_;  // [kSparseBlock, vocab]: one block of tokens' MLM logits
  AlignedBuffer<float> embedded_;     // [tokens, embedding width]: before the projection (ELECTRA)
  std::vector<float> relative_bias_;  // [heads, 2·longest − 1]: MPNet's bias by distance
  // DeBERTa-v2: the table row of each distance of this batch ([2·longest − 1], origin
  // longest − 1).
  std::vector<std::int32_t> relative_index_;
  std::int64_t relative_origin_ = 0;
  // bf16 GEMM inputs and outputs (ffn_bf16_, tmp_bf16_ replace ffn_, tmp_ in bf16 models).
  AlignedBuffer<ops::Bf16> x_bf16_;     // [tokens, hidden]: x after each LayerNorm
  AlignedBuffer<ops::Bf16> ctx_bf16_;   // [tokens, hidden]: attention output
  AlignedBuffer<ops::Bf16> gate_bf16_;  // the same in bf16 models
  AlignedBuffer<ops::Bf16> ffn_bf16_;   // [tokens, intermediate]: GELU(x · W1ᵀ + b1)
  AlignedBuffer<ops::Bf16> qkv_bf16_;   // [tokens, 3·hidden]: Q, K, V
  AlignedBuffer<ops::Bf16> tmp_bf16_;   // [tokens, hidden]: projection outputs before residual+norm
  // int8 GEMMs only: the s8 inputs of int8 GEMMs and their per-row scales.
  AlignedBuffer<std::int8_t> x_s8_;    // [tokens, hidden]: x after each LayerNorm
  AlignedBuffer<float> x_scales_;      // [tokens]
  AlignedBuffer<std::int8_t> ffn_s8_;  // [tokens, intermediate]: GELU(x · W1ᵀ + b1)
  AlignedBuffer<float> ffn_scales_;    // [tokens]
};

}  // namespace mcinfer::cpu
