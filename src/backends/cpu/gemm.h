#pragma once
// Our one interface to the GEMM library (oneDNN). Weights of a Linear layer are packed once
// into the library's blocked layout and shared read-only by every replica; each replica owns a
// GemmRunner (stream, scratchpad, cache of compiled kernels per row count).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "backends/cpu/kernels.h"
#include "core/aligned_buffer.h"

namespace mcinfer::cpu {

// Element types the GEMM reads and writes. bf16 GEMMs accumulate in f32; s8 GEMMs (int8
// weights quantized per output channel, s8 inputs quantized per row) accumulate in s32.
enum class DType { kF32, kBf16, kS8 };

// Which native bf16 dot-product instructions the GEMM library will run on this CPU, after any
// cap set with ONEDNN_MAX_CPU_ISA: "amx_bf16", "avx512_bf16", or empty when there are none
// (then a bf16 GEMM would be emulated, slower than f32).
std::string native_bf16_isa();
// Where bf16 GEMMs run without native instructions, converting to f32 inside the kernels (slower
// than f32): "avx512_core" (the library's), "avx2 (ours)" (gemm_avx2.h: the library has no bf16
// GEMM below avx512_core), or empty where neither can (no AVX2).
std::string emulated_bf16_isa();
// Whether bf16 GEMMs (and the bf16 attention's products) run on our AVX2 kernels.
bool bf16_gemm_is_ours();
// Which native int8 dot-product instructions the GEMM library will run on this CPU (after any
// ONEDNN_MAX_CPU_ISA cap): "amx_int8", "avx512_vnni", "avx2_vnni", or empty when there are none.
std::string native_int8_isa();
// The instructions an int8 GEMM runs on here: native_int8_isa(), else "avx2" (our kernels: s8
// widened to s16 for vpmaddwd, exact; without VNNI the library sums u8·s8 pairs in saturating
// 16-bit lanes, vpmaddubsw), or empty where neither runs (int8 is refused).
std::string int8_isa();
// What the GEMM library dispatches to at most on this CPU (its effective ISA), for reports.
std::string gemm_isa_name();
// Who runs the model's GEMMs here, for reports: "oneDNN GEMM up to avx512_core_amx", or with our
// AVX2 kernels where they run "GEMMs: f32, bf16, s8 ours (avx2), others oneDNN up to avx2".
std::string gemm_description();

// Process-wide GEMM state (the library's CPU engine). Create once, pass by reference.
class GemmEngine {
 public:
  GemmEngine();
  ~GemmEngine();
  GemmEngine(const GemmEngine&) = delete;
  GemmEngine& operator=(const GemmEngine&) = delete;

  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// W of shape [out, in] (PyTorch's nn.Linear layout) packed for y = x · Wᵀ + bias.
// Immutable after construction; safe to use from many threads at once.
class PackedLinear {
 public:
  // `bias` may be null. The weight is copied (packed); the caller's buffer may go away.
  PackedLinear(const GemmEngine& engine, const float* weight, const float* bias, std::int64_t out,
               std::int64_t in)
      : PackedLinear(engine, weight, DType::kF32, bias, out, in, DType::kF32) {}
  // `weight` holds [out, in] values of `weight_type`; they are packed as `compute` (f32 or bf16:
  // a bf16 checkpoint packed for bf16 is never widened; s8: quantized symmetrically per output
  // channel, scale = max|W[o, :]| / 127). The bias stays f32.
  PackedLinear(const GemmEngine& engine, const void* weight, DType weight_type, const float* bias,
               std::int64_t out, std::int64_t in, DType compute);
  // s8 with input smoothing (SmoothQuant): given the largest |x[:, i]| seen per input channel on
  // calibration rows, s[i] = sqrt(input_max[i] / max_o |W[o, i]|) moves half of each channel's
  // range from the activations into the weights: W[:, i] · s[i] is quantized, and inputs are
  // multiplied by input_multiplier()[i] = 1 / s[i] before their per-row quantization. A few
  // channels of a LayerNorm's output are 10-100x the others (BERT's outlier dimensions); without
  // this they set every token's scale and the other channels keep a few levels each.
  PackedLinear(const GemmEngine& engine, const void* weight, DType weight_type, const float* bias,
               std::int64_t out, std::int64_t in, const float* input_max);
  ~PackedLinear();
  PackedLinear(PackedLinear&&) noexcept;
  PackedLinear(const PackedLinear&) = delete;
  PackedLinear& operator=(const PackedLinear&) = delete;

  std::int64_t in_features() const { return in_; }
  std::int64_t out_features() const { return out_; }
  std::size_t packed_bytes() const;
  DType compute_type() const { return compute_; }
  const float* bias() const;  // null when the layer has none
  // s8 weights: W[o, :] ≈ scales[o] · q[o, :] (· 1 / s with smoothing); null for other types.
  const float* weight_scales() const;
  // s8 weights with input smoothing: what each input column is multiplied by before it is
  // quantized; null otherwise.
  const float* input_multiplier() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::int64_t in_ = 0, out_ = 0;
  DType compute_ = DType::kF32;
  std::unique_ptr<Impl> impl_;

  PackedLinear(const GemmEngine& engine, const void* weight, DType weight_type, const float* bias,
               std::int64_t out, std::int64_t in, DType compute, const float* input_max);
};

// Per-replica GEMM execution. Not thread-safe: one per replica thread.
class GemmRunner {
 public:
  GemmRunner(const GemmEngine& engine, int threads);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // Row counts are rounded up (to 16s past 16 rows; to 48s where the library's f32 kernel
  // depends on the row count, see gemm.cc) so that few kernels are compiled over a run and a
  // row's outputs do not depend on the other rows of its batch; x and y must have room for
  // round_rows(rows) rows (the extra rows are scratch).
  static std::int64_t round_rows(std::int64_t rows);

  // y[rows, out] = act(x[rows, in] · Wᵀ + bias), bias and activation fused in the GEMM's
  // epilogue; with with_bias == false the bias is left for the caller to apply.
  void linear(const PackedLinear& w, const float* x, std::int64_t rows, float* y, Activation act,
              bool with_bias = true) {
    linear(w, x, rows, y, DType::kF32, act, with_bias);
  }
  // The same for any weights: x holds rows of the weights' compute type (f32 or bf16), y of
  // `y_type` (a bf16 GEMM may write f32 or bf16; an f32 GEMM writes f32).
  void linear(const PackedLinear& w, const void* x, std::int64_t rows, void* y, DType y_type,
              Activation act, bool with_bias = true);

  // The same for s8 weights: x holds s8 rows quantized per row with scales x_scales[rows] (the
  // kernel table's quantize_rows); the s32 products are scaled, biased, activated and written
  // as `out` says by our epilogue kernel, a block of rows at a time while the block is in cache.
  void linear_s8(const PackedLinear& w, const std::int8_t* x, const float* x_scales,
                 std::int64_t rows, Int8Output out, Activation act, const KernelTable& kernels);

  // The library alone on s8 weights: y[rows, out] = x · Wᵀ in s32, one call, no scales, no
  // epilogue (what `mcinfer bench` compares the model's int8 GEMM rate against).
  void library_s8(const PackedLinear& w, const std::int8_t* x, std::int64_t rows, std::int32_t* y);

  int threads() const { return threads_; }
  std::size_t compiled_kernels() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int threads_;
};

}  // namespace mcinfer::cpu
