#pragma once
// Self-attention with bf16 products. For head sizes of 32 to 128 in steps of 32, a fused kernel
// of attention_fused.h runs: on AMX tiles where the CPU has AMX-BF16, else on VDPBF16PS dot
// products where it has AVX512-BF16. Elsewhere (other head sizes, capped ISAs) the GEMM library
// runs the products: per sequence, Q, K and V of all heads are copied into dense zero-padded
// [heads, L, d] blocks (L rounded up to 16), scores = Q·Kᵀ in f32, softmax in f32 rounded to
// bf16, context = P·V written in bf16 — the input of the output projection. (The library takes
// no strided per-head views of the QKV rows: oneDNN 2.6 runs those on its slow gemm:jit path,
// not AMX.)
// Measured on a Xeon with AMX, one thread, 32 sequences × 128 tokens, 12 heads × 64: 5.6 ms per
// layer fused, 14.4 ms through the library; the library's products alone run at 590 GFLOP/s
// against 89 for the f32 path and 75 for a vdpbf16ps kernel of ours (on this CPU vdpbf16ps does
// no more multiply-adds per cycle than f32 FMA, so the dot kernel is not used where AMX is).
// On AMD Zen 4 (avx512_bf16, no AMX; one thread, 32 × 128 tokens, bench --profile) the dot
// kernel runs attention at 108.5 GFLOP/s for MiniLM (12 heads × 32) and 136.1 for bert-base
// (12 × 64), against 73.1 and 99.8 through the library: 13.3% → 9.3% of a MiniLM batch.

#include <cstdint>
#include <memory>
#include <span>

#include "backends/cpu/attention.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"

namespace mcinfer::cpu {

enum class FusedAttention { kNone, kAmx, kDot };

// Per replica: compiled products by shape and their buffers. Not thread-safe.
class Bf16Attention {
 public:
  Bf16Attention(const GemmEngine& engine, const KernelTable& kernels, int threads);
  ~Bf16Attention();
  Bf16Attention(const Bf16Attention&) = delete;
  Bf16Attention& operator=(const Bf16Attention&) = delete;

  // ctx[s, h·d:(h+1)·d] = softmax(Q_h K_hᵀ / √d) V_h for each sequence and head; qkv is
  // [tokens, 3·hidden] (Q, K, V column blocks), ctx [tokens, hidden], both bf16; with the
  // additions of `rules` (cpu::AttentionRules).
  // With a bias, each score gets bias.row(h, i)[j] before the softmax.
  // With relative terms (DeBERTa), the dot-product kernel adds them where it can run (also on
  // CPUs with AMX: the tile kernel has no relative terms). Rotary positions and windows
  // (ModernBERT) take the tiled dot-product kernel: rotated while packed, the band only, scratch
  // bounded at any length. Where the dot-product kernel cannot run, those rows are widened to f32
  // for cpu::attention and the context rounded back to bf16.
  void run(const Bf16* qkv, Bf16* ctx, std::span<const SequenceSpan> sequences, int heads,
           std::int64_t hidden, const AttentionRules& rules = {});

  // Which fused kernel (attention_fused.h) heads of this size run, or kNone for the library's
  // products.
  FusedAttention fused(std::int64_t head_size) const;
  // The same for any Bf16Attention made with `kernels`.
  static FusedAttention fused_for(const KernelTable& kernels, std::int64_t head_size);

  std::size_t workspace_bytes() const;
  // What run() allocates for `tokens` tokens in sequences of up to max_len, on whichever path
  // runs; `tiled`: layers with rotary positions or windows (the tiled kernel, or f32 rows).
  static std::uint64_t workspace_bytes_for(std::int64_t tokens, std::int64_t max_len,
                                           std::int64_t hidden, std::int64_t heads, int threads,
                                           bool tiled);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mcinfer::cpu
