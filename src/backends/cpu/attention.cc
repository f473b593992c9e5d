#include "backends/cpu/attention.h"

#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/error.h"

namespace mcinfer::cpu {

float* AttentionScratch::block(int thread, std::int64_t floats) {
  floats = (floats + 15) / 16 * 16;
  if (floats > block_floats_) {
    block_floats_ = floats;
    buffer_.resize(0);
  }
  const std::size_t need =
      static_cast<std::size_t>(block_floats_) * static_cast<std::size_t>(thread + 1);
  if (buffer_.size() < need) buffer_.resize(need);
  return buffer_.data() +
         static_cast<std::size_t>(block_floats_) * static_cast<std::size_t>(thread);
}

std::int64_t AttentionRules::keys_before(std::int64_t len) const {
  if (window <= 0) return len;
  return causal ? window - 1 : window / 2;
}

std::int64_t AttentionRules::keys_after(std::int64_t len) const {
  if (causal) return 0;
  return window > 0 ? window / 2 : len;
}

bool AttentionRules::plain_shape(int heads, std::int64_t hidden) const {
  return (kv_heads == 0 || kv_heads == heads) && (head_dim == 0 || head_dim * heads == hidden) &&
         scale == 0 && !causal;
}

double attention_pairs(std::int64_t len, const AttentionRules& rules) {
  const std::int64_t before = rules.keys_before(len), after = rules.keys_after(len);
  if (before >= len && after >= len) return static_cast<double>(len) * static_cast<double>(len);
  double pairs = 0;
  for (std::int64_t i = 0; i < len; ++i)
    pairs += static_cast<double>(std::min(len - 1, i + after) -
                                 std::max<std::int64_t>(0, i - before) + 1);
  return pairs;
}

bool attention_tiled(std::int64_t len, const AttentionRules& rules) {
  if (rules.rotary || rules.causal) return true;
  if (rules.window > 0) return len - 1 > rules.window / 2;
  return len > kTiledFromLen && !rules.bias && !rules.relative;
}

namespace {

// scores[i, j] += q_i · key[t] + k_j · query[t] with t = relative.index[origin + i − j]: the
// [len, reach] products of the sequence's queries (keys) of one head with the table rows it
// reaches, in `products` (2 · len · reach floats), then gathered by distance. False when a
// library call failed.
bool add_relative_terms(const RelativeTerms& relative, const float* q, const float* k,
                        std::int64_t ld, std::int64_t len, std::int64_t column, std::int64_t d,
                        float* scores, float* products) {
  const std::int64_t lo = relative.lowest(len), reach = relative.reach(len);
  const std::int64_t hidden = ld / 3;
  float* c2p = products;
  float* p2c = products + len * reach;
  bool ok = true;
  if (relative.key) {
    ok = dnnl_sgemm('N', 'T', len, reach, d, 1.0f, q, ld, relative.key + lo * hidden + column,
                    hidden, 0.0f, c2p, reach) == dnnl_success;
  }
  if (relative.query) {
    ok = ok &&
         dnnl_sgemm('N', 'T', len, reach, d, 1.0f, k, ld, relative.query + lo * hidden + column,
                    hidden, 0.0f, p2c, reach) == dnnl_success;
  }
  const std::int32_t* index = relative.index + relative.origin;
  for (std::int64_t i = 0; i < len; ++i) {
    float* row = scores + i * len;
    const float* c = c2p + i * reach;
    for (std::int64_t j = 0; j < len; ++j) {
      const std::int64_t t = index[i - j] - lo;
      float add = 0.0f;
      if (relative.key) add += c[t];
      if (relative.query) add += p2c[j * reach + t];
      row[j] += add;
    }
  }
  return ok;
}

// One thread's scratch for the tiled path: a block of queries and a chunk of keys (rotated
// copies when the layer has rotary positions), the chunk's scores, the block's running weighted
// sums of values, maxima and sums of exponentials.
struct TiledBlock {
  float *q, *k, *s, *o, *max, *sum;
  TiledBlock(float* base, std::int64_t d)
      : q(base),
        k(q + kQueryBlock * d),
        s(k + kKeyChunk * d),
        o(s + kQueryBlock * kKeyChunk),
        max(o + kQueryBlock * d),
        sum(max + kQueryBlock) {}
  static std::int64_t floats(std::int64_t d) {
    return 2 * kQueryBlock * d + kKeyChunk * d + kQueryBlock * kKeyChunk + 2 * kQueryBlock;
  }
};

// One head of one sequence: rows i < len of q, k, v at q + i·ld (likewise k, v), of out at
// out + i·ld_out; positions of its tokens when the layer rotates them.
struct HeadRows {
  const float *q, *k, *v;
  std::int64_t ld;
  float* out;
  std::int64_t ld_out, len, d;
  const std::int32_t* positions;
};

// rows rows of x (row stride ld) rotated by their positions into out [rows, d].
void rotated_rows(const float* x, std::int64_t ld, std::int64_t rows, std::int64_t d,
                  const RotaryTable& table, const std::int32_t* positions, float* out) {
  for (std::int64_t r = 0; r < rows; ++r)
    rotate_row(x + r * ld, out + r * d, table.cos(positions[r]), table.sin(positions[r]), d / 2);
}

// Rows [first, first + rows) of the head's queries or keys (`part`: head.q or head.k) as the
// library's GEMM reads them, with their stride: rotated into `scratch` [rows, d] when the layer
// has rotary positions, else where they are.
std::pair<const float*, std::int64_t> gemm_rows(const HeadRows& head, const float* part,
                                                std::int64_t first, std::int64_t rows,
                                                const RotaryTable* rotary, float* scratch) {
  const float* x = part + first * head.ld;
  if (!rotary) return {x, head.ld};
  rotated_rows(x, head.ld, rows, head.d, *rotary, head.positions + first, scratch);
  return {scratch, head.d};
}

// Queries [first, first + count) of one head, tiled (attention_tiled): each query i sees the
// keys j with i − before ≤ j ≤ i + after (≥ len: every key on that side); only chunks inside the
// band are scored. False when a library call failed.
bool tiled_queries(const KernelTable& kernels, const HeadRows& head, std::int64_t first,
                   std::int64_t count, std::int64_t before, std::int64_t after, float scale,
                   const RotaryTable* rotary, const TiledBlock& b) {
  const std::int64_t d = head.d, len = head.len;
  bool ok = true;
  for (std::int64_t q0 = first; q0 < first + count; q0 += kQueryBlock) {
    const std::int64_t rows = std::min(kQueryBlock, first + count - q0);
    const auto [queries, ld_queries] = gemm_rows(head, head.q, q0, rows, rotary, b.q);
    const std::int64_t key_lo = std::max<std::int64_t>(0, q0 - before);
    const std::int64_t key_hi = std::min(len, q0 + rows + after);  // exclusive
    std::fill(b.max, b.max + rows, -std::numeric_limits<float>::infinity());
    std::fill(b.sum, b.sum + rows, 0.0f);
    std::fill(b.o, b.o + rows * d, 0.0f);
    for (std::int64_t c0 = key_lo; c0 < key_hi; c0 += kKeyChunk) {
      const std::int64_t keys = std::min(kKeyChunk, key_hi - c0);
      const auto [key_rows, ld_keys] = gemm_rows(head, head.k, c0, keys, rotary, b.k);
      ok = ok && dnnl_sgemm('N', 'T', rows, keys, d, 1.0f, queries, ld_queries, key_rows, ld_keys,
                            0.0f, b.s, kKeyChunk) == dnnl_success;
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t i = q0 + r;
        // The keys of this chunk query i sees: [lo, hi) (empty when its band ends before it).
        const std::int64_t lo = std::clamp<std::int64_t>(i - before - c0, 0, keys);
        const std::int64_t hi = std::clamp<std::int64_t>(i + after + 1 - c0, lo, keys);
        float* row = b.s + r * kKeyChunk;
        if (hi > lo) {
          const float factor =
              kernels.online_softmax_row(row + lo, hi - lo, scale, b.max + r, b.sum + r);
          if (factor != 1.0f)
            for (std::int64_t c = 0; c < d; ++c) b.o[r * d + c] *= factor;
        }
        std::fill(row, row + lo, 0.0f);
        std::fill(row + hi, row + keys, 0.0f);
      }
      ok = ok && dnnl_sgemm('N', 'N', rows, d, keys, 1.0f, b.s, kKeyChunk, head.v + c0 * head.ld,
                            head.ld, 1.0f, b.o, d) == dnnl_success;
    }
    // Every query sees at least itself, so every sum is positive.
    for (std::int64_t r = 0; r < rows; ++r) {
      const float inverse = 1.0f / b.sum[r];
      float* dst = head.out + (q0 + r) * head.ld_out;
      for (std::int64_t c = 0; c < d; ++c) dst[c] = b.o[r * d + c] * inverse;
    }
  }
  return ok;
}

}  // namespace

std::int64_t tiled_scratch_floats(std::int64_t d) { return TiledBlock::floats(d); }

std::int64_t attention_scratch_floats(std::int64_t max_len, std::int64_t d,
                                      const AttentionRules& rules) {
  // The longest row the one-block path may take (attention_tiled).
  std::int64_t square_len = max_len;
  if (rules.rotary || rules.causal) {
    square_len = 0;
  } else if (rules.window > 0) {
    square_len = std::min(max_len, rules.window / 2 + 1);
  } else if (!rules.bias && !rules.relative) {
    square_len = std::min(max_len, kTiledFromLen);
  }
  std::int64_t floats = max_len > square_len ? TiledBlock::floats(d) : 0;
  if (square_len > 0) {
    // DeBERTa also keeps its [len, reach] c2p and p2c products there.
    const std::int64_t square =
        rules.relative ? square_len * square_len + 2 * square_len * rules.relative.reach(square_len)
                       : std::max(attention_head_scratch(square_len, d), square_len * square_len);
    floats = std::max(floats, square);
  }
  return floats;
}

void attention(const KernelTable& kernels, const float* qkv, float* ctx,
               std::span<const SequenceSpan> sequences, int heads, std::int64_t hidden,
               AttentionScratch& scratch, int threads, const AttentionRules& rules,
               std::int64_t own_kernel_max_len) {
  const ScoreBias bias = rules.bias;
  const RelativeTerms& relative = rules.relative;
  if ((rules.rotary || rules.window > 0 || rules.causal) && (bias || relative))
    fail(
        "internal: rotary positions, a window or a causal mask with a score bias or relative "
        "terms");
  const std::int64_t head_dim = rules.head_dim > 0 ? rules.head_dim : hidden / heads;
  const std::int64_t kv_heads = rules.kv_heads > 0 ? rules.kv_heads : heads;
  if (head_dim * heads != hidden || heads % kv_heads != 0)
    fail("internal: attention of {} heads × {} over {} columns, {} key-value heads", heads,
         head_dim, hidden, kv_heads);
  if (!rules.plain_shape(heads, hidden) && (bias || relative))
    fail("internal: grouped-query or causal attention with a score bias or relative terms");
  // Rows of qkv: [queries (hidden) | keys (kv_heads·d) | values (kv_heads·d)].
  const std::int64_t kv_width = kv_heads * head_dim, group = heads / kv_heads;
  const std::int64_t ld_qkv = hidden + 2 * kv_width;
  const float scale = rules.scale > 0
                          ? rules.scale
                          : 1.0f / std::sqrt(static_cast<float>(head_dim * relative.scale_terms));
  std::int64_t max_len = 0;
  for (const auto& s : sequences) max_len = std::max(max_len, s.length);
  if (max_len == 0) return;
  // Reserve every thread's block up front: growing inside the parallel loop would race.
  const std::int64_t block_floats = attention_scratch_floats(max_len, head_dim, rules);
  for (int t = threads - 1; t >= 0; --t) scratch.block(t, block_floats);

  // Work items: a head of a sequence, or for tiled rows a head's queries in groups, so that a few
  // long rows still keep every thread busy.
  struct Item {
    std::int64_t sequence, head, first, count;
  };
  constexpr std::int64_t kQueriesPerItem = 8 * kQueryBlock;
  std::vector<Item> items;
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    const std::int64_t len = sequences[i].length;
    const std::int64_t step =
        attention_tiled(len, rules) ? kQueriesPerItem : std::max<std::int64_t>(len, 1);
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t first = 0; first < len; first += step)
        items.push_back({static_cast<std::int64_t>(i), h, first, std::min(step, len - first)});
  }

  // Exceptions must not cross the OpenMP region: failures are collected and raised after it.
  int failures = 0;
  auto one = [&](const Item& item, int thread) {
    const SequenceSpan& seq = sequences[static_cast<std::size_t>(item.sequence)];
    const std::int64_t h = item.head;
    const std::int64_t len = seq.length;
    const float* row = qkv + seq.offset * ld_qkv;
    const float* q = row + h * head_dim;
    const float* k = row + hidden + (h / group) * head_dim;
    const float* v = k + kv_width;
    float* out = ctx + seq.offset * hidden + h * head_dim;
    float* scores = scratch.block(thread, block_floats);
    bool ok = true;
    if (attention_tiled(len, rules)) {
      const HeadRows rows{
          q,      k,        v,
          ld_qkv, out,      hidden,
          len,    head_dim, rules.rotary ? rules.rotary.positions + seq.offset : nullptr};
      ok = tiled_queries(kernels, rows, item.first, item.count, rules.keys_before(len),
                         rules.keys_after(len), scale, rules.rotary.table,
                         TiledBlock(scores, head_dim));
    } else if (len <= own_kernel_max_len && !bias && !relative) {
      // Our fused kernel adds no bias: biased scores take the library's path at every length.
      kernels.attention_head(q, k, v, ld_qkv, out, hidden, len, head_dim, scale, scores);
    } else {
      // The GEMM library's blocking wins. scores is [len, len], row stride len.
      // scores = Q Kᵀ (row-major sgemm; the 1/√d scale is applied inside the softmax).
      ok = dnnl_sgemm('N', 'T', len, len, head_dim, 1.0f, q, ld_qkv, k, ld_qkv, 0.0f, scores,
                      len) == dnnl_success;
      if (bias) {
        for (std::int64_t i = 0; i < len; ++i)
          add_score_bias(scores + i * len, bias.row(h, i), len, 1.0f / scale);
      }
      if (relative)
        ok = add_relative_terms(relative, q, k, ld_qkv, len, h * head_dim, head_dim, scores,
                                scores + len * len) &&
             ok;
      kernels.softmax(scores, len, len, len, scale);
      ok = dnnl_sgemm('N', 'N', len, head_dim, len, 1.0f, scores, len, v, ld_qkv, 0.0f, out,
                      hidden) == dnnl_success &&
           ok;
    }
    if (!ok) {
#pragma omp atomic
      ++failures;
    }
  };

  const auto count = static_cast<std::int64_t>(items.size());
  if (threads <= 1) {
    for (const Item& item : items) one(item, 0);
  } else {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (std::int64_t i = 0; i < count; ++i)
      one(items[static_cast<std::size_t>(i)], omp_get_thread_num());
  }
  if (failures != 0) fail("internal: {} attention GEMMs failed", failures);
}

}  // namespace mcinfer::cpu
