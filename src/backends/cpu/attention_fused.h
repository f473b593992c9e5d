#pragma once
// Self-attention fused per head, on AMX tiles or, on CPUs with AVX512-BF16 and no AMX, on
// VDPBF16PS dot products: Q, Kᵀ and V of a sequence are packed once, by one sequential pass over
// its rows, into the layouts both take (Kᵀ and V as bf16 pairs); then each block of queries goes
// scores → softmax → P·V inside a few KiB of scratch and its context rows are written in place.
// Replaces the path through the GEMM library (copies into dense per-head blocks, a score matrix
// per sequence, two library calls), which cost 14.7% of a bf16 bert-base batch (32 × 128, one
// thread, Xeon with AMX).
// Reading Q, K and V straight from the projection's rows with strided tile loads was tried
// first: rows 4.6 KB apart defeat the hardware prefetcher and the tile loads stalled on memory,
// slower than the library path (15.5 against 14.3 ms per layer); the sequential packing pass
// is what makes the fused kernel pay.
//
// This translation unit is compiled with AMX and AVX-512 flags: it holds no inline library code
// (only intrinsics and C calls), so that nothing built for those ISAs can be merged by the
// linker into code that runs on other CPUs. Callers check amx_attention_usable() or
// dot_attention_usable() first.

#include <cstdint>

#include "backends/cpu/kernels.h"

namespace mcinfer::cpu {

// True when this CPU has AMX-BF16, the kernel (Linux) granted the tile data permission, and a
// head of size d can use the kernel (d a multiple of 32, at most 128).
bool amx_attention_usable(std::int64_t d);

// True when this CPU has AVX512-BF16 (the OS saving AVX-512 state) and a head of size d can use
// the dot-product kernel (d a multiple of 32, at most 128).
bool dot_attention_usable(std::int64_t d);

// Bytes of the packed Q, Kᵀ and V of one sequence of up to max_len tokens.
std::int64_t fused_packed_bytes(std::int64_t max_len, std::int64_t hidden);
// Bytes of the per-thread block scratch (scores, probabilities, context of 16 queries).
std::int64_t fused_block_bytes(std::int64_t max_len, std::int64_t d);

// Rotary positions while packing (ModernBERT): row t's queries and keys are rotated by the
// angles of position positions[t], whose cos and sin are at cos + position · half (likewise sin),
// half = d / 2 values each (RotaryTable's layout). The rotation runs in f32 on the widened values,
// rounded to bf16 once.
struct PackRotation {
  const float* cos = nullptr;
  const float* sin = nullptr;
  std::int64_t half = 0;
  const std::int32_t* positions = nullptr;  // the sequence's first row's
};

// Packs rows [0, len) of qkv (row stride ld: Q, K, V column blocks of `hidden`) into `packed`
// (fused_packed_bytes(len, hidden), 64-byte aligned), rotating Q and K when `rotation` is given.
void fused_pack_sequence(const Bf16* qkv, std::int64_t ld, std::int64_t len, std::int64_t hidden,
                         std::int64_t heads, void* packed, const PackRotation* rotation = nullptr);

// Head h of a packed sequence: out[i, h·d:(h+1)·d] = softmax(q_i · Kᵀ · scale) V for i < len,
// row i of out at out + i·ld_out. `block` holds fused_block_bytes(len, d) bytes, 64-byte aligned.
// `kernels` supplies the row softmax and conversions (an AVX-512 table). bias, when not null, is
// query 0's score bias: query i adds (bias − i)[j] to its score of key j (ScoreBias::row).
void amx_attention_head(const void* packed, std::int64_t len, std::int64_t hidden,
                        std::int64_t heads, std::int64_t h, float scale, const float* bias,
                        const KernelTable& kernels, void* block, Bf16* out, std::int64_t ld_out);

// DeBERTa's c2p and p2c terms of one head of one sequence (cpu::RelativeTerms narrowed to it):
// the kernel computes k_j · query[t] for every key and table row the sequence reaches once
// (p2c, [len, reach]), q_i · key[t] per block of queries (c2p, [8, reach]), with the same
// VDPBF16PS products as the scores, and adds both, gathered by t = index[i − j] − lowest, to
// the block's scores before the softmax.
struct FusedRelative {
  const std::uint32_t* key_pairs = nullptr;    // head h's table words (RelativeTerms), or null
  const std::uint32_t* query_pairs = nullptr;  // the same for p2c, or null
  std::int64_t pair_stride = 0;
  const std::int32_t* index = nullptr;  // index[delta] for delta = i − j (origin applied)
  std::int64_t lowest = 0;              // first table row the sequence reaches
  std::int64_t reach = 0;               // rows it reaches
  const Bf16* keys = nullptr;           // the sequence's first K row of head h (bf16)
  std::int64_t ld_keys = 0;
  void* scratch = nullptr;  // fused_relative_bytes(len, reach), 64-byte aligned
};
std::int64_t fused_relative_bytes(std::int64_t max_len, std::int64_t reach);

// The same as amx_attention_head with VDPBF16PS (8 queries × 32 keys or 32 context columns in
// registers at a time) instead of tiles; needs dot_attention_usable(d). With `relative`, adds
// DeBERTa's terms (FusedRelative).
void dot_attention_head(const void* packed, std::int64_t len, std::int64_t hidden,
                        std::int64_t heads, std::int64_t h, float scale, const float* bias,
                        void* block, Bf16* out, std::int64_t ld_out,
                        const FusedRelative* relative = nullptr);

// The same as dot_attention_head, tiled (flash-style): each block of 8 queries meets the keys
// it may see, j with |i − j| ≤ half (half ≥ len: every key), in chunks of kDotKeyChunk, the
// softmax accumulated chunk by chunk in f32 (running maxima and sums, the block's context rescaled
// when a maximum grows), so scratch stays fused_tiled_block_bytes(d) at any length and a
// sliding-window layer costs len · window. No bias or relative terms. Runs the queries
// [first, first + count) (first a multiple of 8), so that threads can share a long row's head.
inline constexpr std::int64_t kDotKeyChunk = 512;
std::int64_t fused_tiled_block_bytes(std::int64_t d);
void dot_attention_head_tiled(const void* packed, std::int64_t len, std::int64_t hidden,
                              std::int64_t heads, std::int64_t h, float scale, std::int64_t half,
                              std::int64_t first, std::int64_t count, void* block, Bf16* out,
                              std::int64_t ld_out);

// Tiles are per thread; call once a thread is done with amx_attention_head calls.
void amx_release_tiles();

}  // namespace mcinfer::cpu
