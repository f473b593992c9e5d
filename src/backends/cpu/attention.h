#pragma once
// Multi-head self-attention over packed sequences: the batch holds only real tokens, one
// sequence after another, so no padded key is ever scored and no mask is needed.

#include <cstdint>
#include <span>

#include "backends/cpu/kernels.h"
#include "core/aligned_buffer.h"

namespace mcinfer::cpu {

struct SequenceSpan {
  std::int64_t offset;  // first token's row in the packed batch
  std::int64_t length;  // tokens
};

// A bias on the attention scores that depends on the head and on the distance j − i only
// (MPNet's relative position bias): query i and key j of head h get
// data[h · stride + origin + j − i] added after the 1/√d scaling, before the softmax.
struct ScoreBias {
  const float* data = nullptr;
  std::int64_t stride = 0;  // values per head
  std::int64_t origin = 0;  // index of distance 0
  explicit operator bool() const { return data != nullptr; }
  // Query i of head h: its bias for key j is row(h, i)[j].
  const float* row(std::int64_t h, std::int64_t i) const { return data + h * stride + origin - i; }
};

// s[j] += bias[j] · inv_scale for j < len: for a softmax that scales s by 1/inv_scale itself.
// Adding before the scaling instead of after changes the sum by at most an ulp of the bias.
inline void add_score_bias(float* s, const float* bias, std::int64_t len, float inv_scale) {
  for (std::int64_t j = 0; j < len; ++j) s[j] += bias[j] * inv_scale;
}

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
// ctx is [tokens, hidden]. With a bias, each score gets bias.row(h, i)[j] (before the softmax).
// Sequences up to own_kernel_max_len tokens use our fused per-head kernel; longer ones two
// GEMM-library calls around our softmax. Crossover measured on a Xeon (AVX-512), 12 heads,
// 32 sequences, one thread (GFLOP/s, ours vs the library): head size 64: 35 vs 31 at 16 tokens,
// 53 vs 60 at 32, 78 vs 99 at 128; head size 32: 44 vs 41 at 32, 79 vs 72 at 128, 79 vs 88 at 192.
// Inside the model (packed qkv rows far apart, 32 × 128 tokens) the library keeps its lead at
// 128 tokens for head size 32 as well (MiniLM: attention 70 vs 65 GFLOP/s).
inline constexpr std::int64_t kOwnAttentionMaxLen = 24;
void attention(const KernelTable& kernels, const float* qkv, float* ctx,
               std::span<const SequenceSpan> sequences, int heads, std::int64_t hidden,
               AttentionScratch& scratch, int threads,
               std::int64_t own_kernel_max_len = kOwnAttentionMaxLen, ScoreBias bias = {});

}  // namespace mcinfer::cpu
