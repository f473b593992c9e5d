#pragma once
// Multi-head self-attention over packed sequences: the batch holds only real tokens, one
// sequence after another, so no padded key is ever scored and no mask is needed.

#include <cstdint>
#include <span>

#include "backends/cpu/kernels.h"
#include "backends/cpu/rotary.h"
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

// DeBERTa-v2's disentangled attention for one layer (model::DisentangledDesc): with
// t = index[origin + i − j], query i and key j of head h add q_i · key[t] (c2p) and
// k_j · query[t] (p2c) to their score; every score is then scaled by 1/√(d · scale_terms).
// The tables are the layer's projections of the relative-position table, computed once at load
// (backends/cpu/relative_tables.h). An empty RelativeTerms (index null) adds nothing; its
// scale_terms still sets the scale.
struct RelativeTerms {
  const float* key = nullptr;    // [rows, hidden] (head h at columns h·d …), null without c2p
  const float* query = nullptr;  // [rows, hidden], null without p2c
  // The same as bf16 pairs for the dot-product kernel: head h's [d/2][pair_stride] words, word
  // (c, t) = (table[t, h·d + 2c], table[t, h·d + 2c + 1]); null when not prepared.
  const std::uint32_t* key_pairs = nullptr;
  const std::uint32_t* query_pairs = nullptr;
  std::int64_t pair_stride = 0;  // ≥ rows + 32: a 32-column read from any used row stays inside
  std::int64_t rows = 0;
  const std::int32_t* index = nullptr;  // index[origin + delta], |delta| ≤ origin
  std::int64_t origin = 0;
  std::int64_t scale_terms = 1;
  explicit operator bool() const { return index != nullptr; }
  // The table rows a sequence of len tokens reaches: index over delta = −(len − 1) … len − 1
  // (non-decreasing in delta), as [lowest(len), lowest(len) + reach(len)).
  std::int64_t lowest(std::int64_t len) const { return index[origin - (len - 1)]; }
  std::int64_t reach(std::int64_t len) const { return index[origin + (len - 1)] - lowest(len) + 1; }
};

// s[j] += bias[j] · inv_scale for j < len: for a softmax that scales s by 1/inv_scale itself.
// Adding before the scaling instead of after changes the sum by at most an ulp of the bias.
inline void add_score_bias(float* s, const float* bias, std::int64_t len, float inv_scale) {
  for (std::int64_t j = 0; j < len; ++j) s[j] += bias[j] * inv_scale;
}

// ModernBERT's rotary positions, applied where the attention packs its queries and keys: the
// query and key of head h of packed token t are rotated by table's angles at positions[t].
struct Rotation {
  const RotaryTable* table = nullptr;
  const std::int32_t* positions = nullptr;  // per packed token
  explicit operator bool() const { return table != nullptr; }
};

// What a layer's attention adds to softmax(Q Kᵀ / √d) V: a score bias (MPNet) or relative terms
// (DeBERTa), a causal mask (decoders: query i sees keys j ≤ i), a window (bidirectional:
// |i − j| ≤ window / 2, ModernBERT's local layers; causal: i − j < window, transformers'
// sliding_window), rotary positions (ModernBERT, Qwen3); its shape when it is not
// `heads` heads of hidden / heads: grouped-query attention (kv_heads < heads, query head h reads
// key-value head h / (heads / kv_heads)) and a head size of its own; a score scale other than
// 1 / √head_dim.
struct AttentionRules {
  ScoreBias bias;
  RelativeTerms relative;
  bool causal = false;
  std::int64_t window = 0;
  Rotation rotary;
  std::int64_t kv_heads = 0;  // 0: heads
  std::int64_t head_dim = 0;  // 0: hidden / heads
  float scale = 0;            // 0: 1 / √(head_dim · relative.scale_terms)
  // Keys before and after query i in its band (len or more: every key on that side).
  std::int64_t keys_before(std::int64_t len) const;
  std::int64_t keys_after(std::int64_t len) const;
  // Whether the layer's shape is the plain one (heads of hidden / heads, scaled by 1 / √d).
  bool plain_shape(int heads, std::int64_t hidden) const;
};

// (query, key) pairs a sequence of len tokens scores under `rules`' band.
double attention_pairs(std::int64_t len, const AttentionRules& rules);

// Tiled attention (flash-style): blocks of kQueryBlock queries meet the keys they may see in
// chunks of kKeyChunk, the softmax accumulated chunk by chunk (KernelTable::online_softmax_row),
// so no [len, len] score block exists and each thread's scratch is a few hundred KiB whatever
// the length. It runs every row with rotary positions (they are applied while a block is packed),
// every row a window is shorter than (only the band is scored: cost ∝ len · window), and rows
// longer than kTiledFromLen; shorter rows keep the one-block path below, faster there.
inline constexpr std::int64_t kQueryBlock = 64;
inline constexpr std::int64_t kKeyChunk = 256;
inline constexpr std::int64_t kTiledFromLen = 1024;
bool attention_tiled(std::int64_t len, const AttentionRules& rules);
// Floats of one thread's scratch for the tiled path (head size d).
std::int64_t tiled_scratch_floats(std::int64_t d);
// Floats of one thread's scratch for rows up to max_len under `rules` (whichever path they take).
std::int64_t attention_scratch_floats(std::int64_t max_len, std::int64_t d,
                                      const AttentionRules& rules);

// Scratch for attention, one block of `floats` per thread.
class AttentionScratch {
 public:
  float* block(int thread, std::int64_t floats);
  std::size_t bytes() const { return buffer_.capacity_bytes(); }

 private:
  AlignedBuffer<float> buffer_;
  std::int64_t block_floats_ = 0;
};

// For each sequence and head h: ctx[s, h·d:(h+1)·d] = softmax(Q_h K_hᵀ / √d) V_h, where Q, K, V are
// the three hidden-wide column blocks of qkv [tokens, 3·hidden] and d = hidden / heads, and ctx
// is [tokens, hidden]; under grouped-query attention (rules.kv_heads, rules.head_dim) qkv is
// [tokens, (heads + 2·kv_heads)·d], hidden = heads·d the queries' width and ctx's. With a bias,
// each score gets bias.row(h, i)[j] (before the softmax); with relative terms, DeBERTa's c2p and
// p2c (RelativeTerms), from [len, reach] products of the sequence's queries and keys with the
// tables, gathered by distance into the scores; with a window and rotary positions, AttentionRules.
// Short sequences (up to own_kernel_max_len tokens) use our fused per-head kernel; longer ones two
// GEMM-library calls around our softmax, or the tiled path (attention_tiled). Crossover measured
// on a Xeon (AVX-512), 12 heads, 32 sequences, one thread (GFLOP/s, ours vs the library): head
// size 64: 35 vs 31 at 16 tokens, 53 vs 60 at 32, 78 vs 99 at 128; head size 32: 44 vs 41 at 32,
// 79 vs 72 at 128, 79 vs 88 at 192. Inside the model (packed qkv rows far apart, 32 × 128 tokens)
// the library keeps its lead at 128 tokens for head size 32 as well (MiniLM: attention 70 vs 65
// GFLOP/s).
inline constexpr std::int64_t kOwnAttentionMaxLen = 24;
void attention(const KernelTable& kernels, const float* qkv, float* ctx,
               std::span<const SequenceSpan> sequences, int heads, std::int64_t hidden,
               AttentionScratch& scratch, int threads, const AttentionRules& rules = {},
               std::int64_t own_kernel_max_len = kOwnAttentionMaxLen);

}  // namespace mcinfer::cpu
