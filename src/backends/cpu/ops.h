#pragma once
// The CPU engine's operations: what the encoder (encoder.h) calls, each dispatching to the GEMM
// library (gemm.h), the attention kernels or our own per-ISA kernels (kernels.h), with a
// per-replica Context that carries the threading and scratch it needs. Behind the backend seam
// (backend/backend.h): nothing outside backends/cpu includes this.

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "backend/profile.h"
#include "backends/cpu/attention.h"
#include "backends/cpu/attention_bf16.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/rotary.h"
#include "core/aligned_buffer.h"
#include "model/precision.h"

namespace mcinfer::ops {

using Activation = cpu::Activation;
using SequenceSpan = cpu::SequenceSpan;
using DType = cpu::DType;
using Bf16 = cpu::Bf16;

using Precision = model::Precision;
using PrecisionChoice = model::PrecisionChoice;
using model::parse_precision;
using model::precision_name;

// bf16 where the CPU (and any ONEDNN_MAX_CPU_ISA cap) has native bf16 dot products; an explicit
// bf16 or int8 request without the instructions it needs is refused (fail_usage) naming them.
PrecisionChoice resolve_precision(Precision requested);

// The precision an int8 model keeps its sensitive GEMMs in and runs attention in: bf16 where
// the CPU has native bf16 dot products, fp32 otherwise.
Precision int8_fallback_precision();

// Process-wide backend state: which device, which instruction set, the GEMM engine.
// Create one per process and pass it by reference; it holds no per-replica state.
class Device {
 public:
  // The CPU backend; `isa` forces an instruction set for our own kernels (default: the best).
  static std::unique_ptr<Device> cpu(std::optional<cpu::Isa> isa = std::nullopt);

  cpu::Isa isa() const { return kernels_->isa; }
  const cpu::KernelTable& kernels() const { return *kernels_; }
  const cpu::GemmEngine& gemm_engine() const { return *gemm_; }
  std::string description() const;

 private:
  const cpu::KernelTable* kernels_ = nullptr;
  std::unique_ptr<cpu::GemmEngine> gemm_;
};

// A Linear layer's weights prepared for a device (packed once, shared read-only).
class Linear {
 public:
  // weight: [out, in] float32 (PyTorch layout), bias: [out] or null. Both are copied.
  static Linear prepare(const Device& device, const float* weight, const float* bias,
                        std::int64_t out, std::int64_t in) {
    return prepare(device, weight, DType::kF32, bias, out, in, Precision::kFp32);
  }
  // weight: [out, in] of `weight_type`, prepared for `precision` (kFp32, kBf16 or kInt8).
  // int8 with `input_max` (the largest |x| per input channel on calibration rows, [in]): with
  // SmoothQuant's input smoothing (cpu::PackedLinear).
  static Linear prepare(const Device& device, const void* weight, DType weight_type,
                        const float* bias, std::int64_t out, std::int64_t in, Precision precision,
                        const float* input_max = nullptr);
  // The element type the layer reads its input in.
  DType input_type() const { return cpu_->compute_type(); }
  std::int64_t in_features() const { return cpu_->in_features(); }
  std::int64_t out_features() const { return cpu_->out_features(); }
  std::size_t bytes() const { return cpu_->packed_bytes(); }
  // int8 with smoothing: each input column's multiplier before quantization (else null).
  const float* input_multiplier() const { return cpu_->input_multiplier(); }
  const cpu::PackedLinear& cpu_weights() const { return *cpu_; }

 private:
  std::unique_ptr<cpu::PackedLinear> cpu_;
};

using OpKind = backend::OpKind;
using OpProfile = backend::OpProfile;
using backend::op_kind_name;

// How a Linear's bias and activation are applied: inside the GEMM's epilogue (one pass over
// the output) or by our own bias+activation kernel after a plain GEMM.
enum class EpilogueMode { kInGemm, kOwnKernel };

// Per-replica execution state. Not thread-safe: one per replica thread.
class Context {
 public:
  Context(const Device& device, int threads, EpilogueMode epilogue = EpilogueMode::kInGemm);

  const Device& device() const { return device_; }
  int threads() const { return threads_; }
  cpu::GemmRunner& gemm() { return gemm_; }
  cpu::AttentionScratch& attention_scratch() { return attention_scratch_; }
  cpu::Bf16Attention& bf16_attention();  // made on first use
  std::size_t workspace_bytes() const;
  // Rows quantized for an s8 layer whose input came in f32 or bf16.
  AlignedBuffer<std::int8_t>& s8_scratch() { return s8_scratch_; }
  AlignedBuffer<float>& s8_scratch_scales() { return s8_scratch_scales_; }
  EpilogueMode epilogue() const { return epilogue_; }

  // Profiling is off unless a profile is attached.
  void attach_profile(OpProfile* profile) { profile_ = profile; }
  OpProfile* profile() { return profile_; }

 private:
  const Device& device_;
  int threads_;
  EpilogueMode epilogue_;
  cpu::GemmRunner gemm_;
  cpu::AttentionScratch attention_scratch_;
  std::unique_ptr<cpu::Bf16Attention> bf16_attention_;
  AlignedBuffer<std::int8_t> s8_scratch_;
  AlignedBuffer<float> s8_scratch_scales_;
  OpProfile* profile_ = nullptr;
};

// Rows a buffer needs so that a batch of `rows` rows can go through linear().
std::int64_t padded_rows(std::int64_t rows);

// Rows of activations of one element type: f32; bf16 (the input of a bf16 layer); s8 quantized
// per row, with one scale per row (the input of an int8 layer).
struct ConstRows {
  const void* data;
  DType type;
  const float* scales = nullptr;  // s8 only
};
struct Rows {
  void* data;
  DType type;
  float* scales = nullptr;            // s8 only
  const float* multiplier = nullptr;  // s8 only: the reading layer's input_multiplier()
};

// y[rows, out] = act(x[rows, in] · Wᵀ + b). x and y need padded_rows(rows) rows. x must be of
// w.input_type(), except that an int8 layer quantizes f32 or bf16 rows itself; a bf16 layer may
// write f32 or bf16, an int8 layer f32, bf16 or s8 (quantized per row, for the next int8 layer).
void linear(Context& ctx, const Linear& w, ConstRows x, std::int64_t rows, Rows y,
            Activation act = Activation::kNone);
inline void linear(Context& ctx, const Linear& w, const float* x, std::int64_t rows, float* y,
                   Activation act = Activation::kNone) {
  linear(ctx, w, ConstRows{x, DType::kF32}, rows, Rows{y, DType::kF32}, act);
}

// y[rows, cols] = bf16(x[rows, cols]), both contiguous (round to nearest even).
void to_bf16(Context& ctx, const float* x, Bf16* y, std::int64_t rows, std::int64_t cols);

// x = LayerNorm(x + y) (y may be null: plain LayerNorm), row by row, [rows, cols].
// x_bf16, when given, receives x rounded to bf16 in the same pass.
void residual_layer_norm(Context& ctx, float* x, const float* y, std::int64_t rows,
                         std::int64_t cols, const float* gamma, const float* beta, float eps,
                         Bf16* x_bf16 = nullptr);
// The same with the normalized rows also quantized per row into x_s8 and x_scales for the next
// int8 layer, after multiplying each column by `multiplier` (its input_multiplier(), may be null).
void residual_layer_norm_s8(Context& ctx, float* x, const float* y, std::int64_t rows,
                            std::int64_t cols, const float* gamma, const float* beta, float eps,
                            const float* multiplier, std::int8_t* x_s8, float* x_scales);
// The same with the residual y in bf16 (the output of a bf16 GEMM).
void residual_layer_norm(Context& ctx, float* x, const Bf16* y, std::int64_t rows,
                         std::int64_t cols, const float* gamma, const float* beta, float eps,
                         Bf16* x_bf16);

using ScoreBias = cpu::ScoreBias;
using RelativeTerms = cpu::RelativeTerms;
using AttentionRules = cpu::AttentionRules;

// Self-attention over packed sequences; qkv [tokens, 3·hidden] → out [tokens, hidden], with the
// additions of `rules`: MPNet's score bias (cpu::ScoreBias), DeBERTa's disentangled terms
// (cpu::RelativeTerms, which also set the scores' scale), ModernBERT's sliding window and rotary
// positions (cpu::AttentionRules).
void attention(Context& ctx, const float* qkv, float* out, std::span<const SequenceSpan> sequences,
               int heads, std::int64_t hidden, const AttentionRules& rules = {});

// The same with bf16 products (the GEMM library's AMX or avx512_bf16 kernels): qkv
// [tokens, 3·hidden] and out [tokens, hidden] in bf16, scores and softmax in f32.
void attention(Context& ctx, const Bf16* qkv, Bf16* out, std::span<const SequenceSpan> sequences,
               int heads, std::int64_t hidden, const AttentionRules& rules = {});
// Either of the two, by the rows' type (f32 or bf16, the same for both).
void attention(Context& ctx, ConstRows qkv, Rows out, std::span<const SequenceSpan> sequences,
               int heads, std::int64_t hidden, const AttentionRules& rules = {});

// ModernBERT's gated FFN: with the rows of y [rows, 2·cols] as [a | g] (f32 or bf16), out =
// act(a) · g in f32, as f32 or bf16 rows [rows, cols] (by out.type; a following int8 layer
// quantizes f32 rows itself). f32 rows of y are overwritten (their first half takes act(a)).
void gated_activation(Context& ctx, Rows y, std::int64_t rows, std::int64_t cols, Activation act,
                      Rows out);

// x += y (f32 or bf16 rows), [rows, cols] contiguous: the residual add of a pre-norm layer.
void residual_add(Context& ctx, float* x, ConstRows y, std::int64_t rows, std::int64_t cols);

// RMSNorm (rms_norm.cc): out[r] = x[r] / √(mean(x[r]²) + eps) · gamma for the rows of x
// [rows, cols] (row stride ld_x) into out (row stride ld_out; out may be x), in float32 as
// transformers' RMSNorm computes it. Gemma's (1 + w) is in gamma already (Weights adds it).
void rms_norm(Context& ctx, const float* x, std::int64_t ld_x, float* out, std::int64_t ld_out,
              std::int64_t rows, std::int64_t cols, const float* gamma, float eps);
// The same over each of `heads` heads of `head_dim` values from column `first` of the rows of
// qkv [rows, ld], in place: Qwen3's q_norm / k_norm.
void head_rms_norm(Context& ctx, float* qkv, std::int64_t ld, std::int64_t rows, std::int64_t first,
                   std::int64_t heads, std::int64_t head_dim, const float* gamma, float eps);

// out[t] = word[ids[t]] (+ position[positions[t]] when position is not null) (+ type[types[t]]).
void embedding_sum(Context& ctx, float* out, std::int64_t tokens, std::int64_t cols,
                   const float* word, const std::int32_t* ids, const float* position,
                   const std::int32_t* positions, const float* type, const std::int32_t* types);

// RAII timer that adds to the context's profile when one is attached.
class ScopedOpTimer {
 public:
  ScopedOpTimer(Context& ctx, OpKind kind, double flops = 0);
  ~ScopedOpTimer();
  ScopedOpTimer(const ScopedOpTimer&) = delete;
  ScopedOpTimer& operator=(const ScopedOpTimer&) = delete;

 private:
  OpProfile* profile_;
  OpKind kind_;
  double flops_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace mcinfer::ops
