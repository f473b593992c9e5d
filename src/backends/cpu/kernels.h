#pragma once
// The element-wise and row-wise kernels of an encoder forward pass that are not GEMMs.
// kernels_impl.h holds their single source; it is compiled once per instruction set
// (kernels_generic.cc, kernels_avx2.cc, kernels_avx512.cc) and a table is picked at run time.
// All matrices are row-major float32 with the given row stride (ld, in elements).

#include <cstdint>
#include "model/activation.h"

#include "backends/cpu/isa.h"

namespace mcinfer::cpu {

using Activation = model::Activation;

// bfloat16 values are stored as their 16 bits: the upper half of a float32.
using Bf16 = std::uint16_t;

// Where an int8 GEMM's epilogue writes its rows [rows, cols] (contiguous): f32, bf16, or s8
// quantized per row (the next int8 GEMM's input, with one scale per row, each column first
// multiplied by s8_multiplier when it is not null: that GEMM's input smoothing).
struct Int8Output {
  enum Type { kF32, kBf16, kS8 } type = kF32;
  float* f32 = nullptr;
  Bf16* bf16 = nullptr;
  std::int8_t* s8 = nullptr;
  float* s8_scales = nullptr;
  const float* s8_multiplier = nullptr;
};

struct KernelTable {
  Isa isa;
  // y[r, c] = act(y[r, c] + bias[c]); bias may be null.
  void (*bias_activation)(float* y, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                          const float* bias, Activation act);
  // x[r] = LayerNorm(x[r] + y[r] + bias) * gamma + beta, row by row; y and bias may be null.
  // When x_bf16 is not null it receives the same result rounded to bf16 (the next GEMM's input).
  void (*residual_layer_norm)(float* x, const float* y, const float* bias, std::int64_t rows,
                              std::int64_t cols, const float* gamma, const float* beta, float eps,
                              Bf16* x_bf16);
  // s[r, :cols] = softmax(s[r, :cols] * scale), row by row.
  void (*softmax)(float* s, std::int64_t rows, std::int64_t cols, std::int64_t ld, float scale);
  // out[t] = word[ids[t]] + position[positions[t]] (+ type[types[t]] when type is non-null).
  void (*embedding_sum)(float* out, std::int64_t tokens, std::int64_t cols, const float* word,
                        const std::int32_t* ids, const float* position,
                        const std::int32_t* positions, const float* type,
                        const std::int32_t* types);
  // One head of one sequence: out[i, :d] = softmax(q_i · K^T · scale) V for i < len, where row i
  // of q, k and v is at q + i·ld (likewise k, v) and of out at out + i·ld_out. scratch needs
  // attention_head_scratch(len, d) floats.
  void (*attention_head)(const float* q, const float* k, const float* v, std::int64_t ld,
                         float* out, std::int64_t ld_out, std::int64_t len, std::int64_t d,
                         float scale, float* scratch);
  // y[i] = bf16(x[i]) for i < n, rounded to nearest even (NaN stays NaN), as torch rounds.
  void (*to_bf16)(const float* x, Bf16* y, std::int64_t n);
  // One row: p[:cols] = bf16(softmax(s[:cols] * scale)) and p[cols:padded] = 0, the softmax in
  // f32 and rounded once at the end, as autocast does. s is overwritten (it is scratch).
  void (*softmax_to_bf16)(float* s, Bf16* p, std::int64_t cols, std::int64_t padded, float scale);
  // residual_layer_norm with the residual y in bf16 (a bf16 GEMM's output) and no bias: half
  // the bytes of an f32 y to write and read back, in a pass bound by memory.
  void (*residual_bf16_layer_norm)(float* x, const Bf16* y, std::int64_t rows, std::int64_t cols,
                                   const float* gamma, const float* beta, float eps, Bf16* x_bf16);
  // Per-row symmetric quantization of [rows, cols] contiguous values, each column first
  // multiplied by mul[c] (mul may be null): with v = x[r, c] · mul[c], scales[r] = max|v| / 127
  // (0 for an all-zero row), q[r, c] = v / scales[r] rounded to nearest even.
  void (*quantize_rows)(const float* x, std::int64_t rows, std::int64_t cols, const float* mul,
                        std::int8_t* q, float* scales);
  void (*quantize_bf16_rows)(const Bf16* x, std::int64_t rows, std::int64_t cols, const float* mul,
                             std::int8_t* q, float* scales);
  // The epilogue of an int8 GEMM: out[r, c] = act(acc[r, c] · row_scales[r] · col_scales[c] +
  // bias[c]) (bias may be null), [rows, cols] contiguous. acc is overwritten (scratch).
  void (*int8_epilogue)(std::int32_t* acc, std::int64_t rows, std::int64_t cols,
                        const float* row_scales, const float* col_scales, const float* bias,
                        Activation act, Int8Output out);
  // residual_layer_norm with no bias whose normalized rows are also quantized per row into q and
  // scales (the next int8 GEMM's input), each row while it is still in L1.
  void (*residual_layer_norm_s8)(float* x, const float* y, std::int64_t rows, std::int64_t cols,
                                 const float* gamma, const float* beta, float eps, const float* mul,
                                 std::int8_t* q, float* scales);
  // One chunk of keys of a softmax row accumulated chunk by chunk (tiled attention): s[:cols]
  // holds the chunk's raw scores, *max and *sum the row's running maximum (of raw scores; −inf
  // before the first chunk) and sum of exponentials. Writes s[c] = exp((s[c] − m) · scale) with m
  // the new maximum, updates *max and *sum, and returns exp((old max − m) · scale): the factor
  // the row's earlier weighted sum of values must be multiplied by (0 before the first chunk).
  float (*online_softmax_row)(float* s, std::int64_t cols, float scale, float* max, float* sum);
};

// Floats of scratch one attention_head call needs.
std::int64_t attention_head_scratch(std::int64_t len, std::int64_t d);

const KernelTable& kernels_for(Isa isa);

// The per-ISA tables, defined in their own translation units.
const KernelTable& generic_kernels();
const KernelTable& avx2_kernels();
const KernelTable& avx512_kernels();

}  // namespace mcinfer::cpu
