#pragma once
// Multi-head self-attention over packed sequences: the batch holds only real tokens, one
// sequence after another, so no padded key is ever scored and no mask is needed.

#include <cstdint>
#include <span>

#include "core/aligned_buffer.h"
#include "cpu/kernels.h"

namespace mcinfer::cpu {

struct SequenceSpan {
  std::int64_t offset;  // first token's row in the packed batch
  std::int64_t length;  // tokens
};

// Scratch for attention scores, one [max_len, max_len] block per thread.
class AttentionScratch {
 public:
  float* block(int thread, std::int64_t max_len);

 private:
  AlignedBuffer<float> buffer_;
  std::int64_t block_floats_ = 0;
};

// For each sequence and head h: ctx[s, h·d:(h+1)·d] = softmax(Q_h K_hᵀ / √d) V_h, where Q, K, V are
// the three hidden-wide column blocks of qkv [tokens, 3·hidden] and d = hidden / heads.
// ctx is [tokens, hidden].
// Sequences up to own_kernel_max_len tokens use our fused per-head kernel; longer ones two
// GEMM-library calls around our softmax. Measured on a Xeon (AVX-512), BERT-base heads: ours is
// ahead up to ~20 tokens (29 vs 24 GFLOP/s at 16), the library from ~24 on (96 vs 50 at 128).
inline constexpr std::int64_t kOwnAttentionMaxLen = 20;
void attention(const KernelTable& kernels, const float* qkv, float* ctx,
               std::span<const SequenceSpan> sequences, int heads, std::int64_t hidden,
               AttentionScratch& scratch, int threads,
               std::int64_t own_kernel_max_len = kOwnAttentionMaxLen);

}  // namespace mcinfer::cpu
