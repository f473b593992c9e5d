#pragma once
// Our GEMMs for CPUs without AVX-512, where oneDNN 2.6 is the limit (gemm.cc decides when):
//  - f32: oneDNN's only f32 matmul there is its sgemm, which picks a kernel by the row count, so
//    a row's sums changed with its batch, and the rounding that avoided that cost 9%; it reached
//    ~63 GFLOP/s of a Zen 3 core's 100 (bench/RESULTS.md).
//  - s8: without VNNI oneDNN sums u8·s8 pairs in saturating 16-bit lanes (vpmaddubsw), wrong for
//    8-bit weights; 7-bit weights avoid it but lost too much accuracy (19 of MiniLM's corpus
//    rows fell below the 0.99 cosine gate, to 0.987). Here s8 values are widened to s16 and
//    multiplied with vpmaddwd (s16·s16 pairs summed
//    into s32 lanes, never saturating for s8 inputs): exact 8-bit products by construction.
//  - bf16: oneDNN has no bf16 matmul below avx512_core, so without these kernels bf16 could not
//    run at all on AVX2 CPUs and its numerics went untested there. bf16 weights and inputs are
//    widened to f32 (exact) and multiplied with FMA: a product of two bf16 is exact in f32, so
//    each sum is the same f32 accumulation of the same products as a native bf16 kernel's, in
//    input order; bias and activation in f32, then one rounding to nearest even when the output
//    is bf16, as the library's epilogue does. It is a reference for the bf16 numerics (slower
//    than f32: the widening), not a fast path, and runs only when asked for (ops.cc).
// Weights are packed once into panels of 16 output channels (f32, or s8 in pairs of inputs); a
// micro-kernel keeps a tile of up to 6 rows × 16 outputs in registers over the whole input
// dimension, in input order, so each output's sum is the same whatever the row count, the tile
// a row falls in or the thread count: the results do not depend on the batch.
// Compiled with -mavx2 -mfma; call only where the CPU has both (gemm.cc checks).

#include <cstdint>

#include "backends/cpu/kernels.h"

namespace mcinfer::cpu::avx2 {

inline constexpr std::int64_t kPanel = 16;  // output channels per packed panel

// Elements of a packed [out, in] matrix: whole panels, inputs rounded up to a pair.
std::int64_t packed_f32_size(std::int64_t out, std::int64_t in);
std::int64_t packed_bf16_size(std::int64_t out, std::int64_t in);
std::int64_t packed_s8_size(std::int64_t out, std::int64_t in);

// w [out, in] (PyTorch's Linear layout) → panels: panel j holds w[16j + c, i] at i·16 + c,
// zeros past `out`.
void pack_f32(const float* w, std::int64_t out, std::int64_t in, float* panels);
// The same for bf16 weights, w[o, i] at w[o · ld + i]; and for w given transposed, w[o, i] at
// w[i · ld + o] (attention's V, whose rows are the inputs of P·V).
void pack_bf16(const Bf16* w, std::int64_t out, std::int64_t in, std::int64_t ld, Bf16* panels);
void pack_bf16_transposed(const Bf16* w, std::int64_t out, std::int64_t in, std::int64_t ld,
                          Bf16* panels);
// q [out, in] → panels of input pairs: panel j holds q[16j + c, 2p + t] at p·32 + c·2 + t, zeros
// past `out` and `in`.
void pack_s8(const std::int8_t* q, std::int64_t out, std::int64_t in, std::int8_t* panels);

// y[rows, out] = act(x[rows, in] · Wᵀ + bias) with row strides in, out. bias may be null;
// `epilogue` applies the activation (the AVX2 kernel table's bias_activation).
void gemm_f32(const float* panels, const float* x, std::int64_t rows, std::int64_t in,
              std::int64_t out, const float* bias, Activation act, const KernelTable& epilogue,
              float* y, int threads);

// Where a bf16 GEMM writes: f32 or bf16 rows (exactly one of the two), ld apart.
struct Bf16Output {
  float* f32 = nullptr;
  Bf16* bf16 = nullptr;
  std::int64_t ld = 0;
};
// y[rows, out] = act(x[rows, in] · Wᵀ + bias) on bf16 panels and bf16 rows ldx apart, summed in
// f32; a bf16 y is rounded to nearest even once, after the activation. scratch holds
// bf16_scratch_size(rows, in) floats (a block of rows widened).
std::int64_t bf16_scratch_size(std::int64_t rows, std::int64_t in);
void gemm_bf16(const Bf16* panels, const Bf16* x, std::int64_t ldx, std::int64_t rows,
               std::int64_t in, std::int64_t out, const float* bias, Activation act,
               const KernelTable& epilogue, Bf16Output y, float* scratch, int threads);

// y[rows, out] = x[rows, in] · qᵀ in s32, exact. scratch holds s8_scratch_size(rows, in) s16.
std::int64_t s8_scratch_size(std::int64_t rows, std::int64_t in);
void gemm_s8(const std::int8_t* panels, const std::int8_t* x, std::int64_t rows, std::int64_t in,
             std::int64_t out, std::int32_t* y, std::int16_t* scratch, int threads);

}  // namespace mcinfer::cpu::avx2
