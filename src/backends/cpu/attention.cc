#include "backends/cpu/attention.h"

#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace mcinfer::cpu {

float* AttentionScratch::block(int thread, std::int64_t max_len) {
  const std::int64_t floats = (max_len * max_len + 15) / 16 * 16;
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

// One head of a sequence under a sliding window of ±half around each query: per block of
// kWindowBlock queries, the scores against the keys the block's band reaches, a softmax over
// each query's own band (the rest of its row zeroed), then the product with those keys' values.
// scores needs kWindowBlock · (kWindowBlock + 2 · half) floats. False when a library call failed.
bool windowed_head(const KernelTable& kernels, const float* q, const float* k, const float* v,
                   std::int64_t ld, float* out, std::int64_t ld_out, std::int64_t len,
                   std::int64_t d, std::int64_t half, float scale, float* scores) {
  bool ok = true;
  for (std::int64_t first = 0; first < len; first += kWindowBlock) {
    const std::int64_t rows = std::min(kWindowBlock, len - first);
    const std::int64_t key_lo = std::max<std::int64_t>(0, first - half);
    const std::int64_t key_hi = std::min(len, first + rows + half);  // exclusive
    const std::int64_t keys = key_hi - key_lo;
    ok = ok && dnnl_sgemm('N', 'T', rows, keys, d, 1.0f, q + first * ld, ld, k + key_lo * ld, ld,
                          0.0f, scores, keys) == dnnl_success;
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t i = first + r;
      const std::int64_t lo = std::max<std::int64_t>(0, i - half) - key_lo;
      const std::int64_t hi = std::min(len, i + half + 1) - key_lo;
      float* row = scores + r * keys;
      kernels.softmax(row + lo, 1, hi - lo, hi - lo, scale);
      std::fill(row, row + lo, 0.0f);
      std::fill(row + hi, row + keys, 0.0f);
    }
    ok = ok && dnnl_sgemm('N', 'N', rows, d, keys, 1.0f, scores, keys, v + key_lo * ld, ld, 0.0f,
                          out + first * ld_out, ld_out) == dnnl_success;
  }
  return ok;
}

}  // namespace

void attention(const KernelTable& kernels, const float* qkv, float* ctx,
               std::span<const SequenceSpan> sequences, int heads, std::int64_t hidden,
               AttentionScratch& scratch, int threads, std::int64_t own_kernel_max_len,
               ScoreBias bias, const RelativeTerms& relative, std::int64_t window) {
  const std::int64_t head_dim = hidden / heads;
  const std::int64_t ld_qkv = 3 * hidden;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim * relative.scale_terms));
  std::int64_t max_len = 0;
  for (const auto& s : sequences) max_len = std::max(max_len, s.length);
  if (max_len == 0) return;
  // Reserve every thread's block up front: growing inside the parallel loop would race. DeBERTa
  // also keeps its [len, reach] c2p and p2c products there.
  std::int64_t block_floats =
      std::max(attention_head_scratch(max_len, head_dim), max_len * max_len);
  if (relative) block_floats = max_len * max_len + 2 * max_len * relative.reach(max_len);
  // A window that reaches past every sequence's ends is no window at all.
  const std::int64_t half = window / 2;
  const bool banded = window > 0 && max_len - 1 > half;
  if (banded) block_floats = std::max(block_floats, kWindowBlock * (kWindowBlock + 2 * half));
  const std::int64_t block_side =
      static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(block_floats))));
  for (int t = threads - 1; t >= 0; --t) scratch.block(t, std::max(max_len, block_side));
  const std::int64_t pairs = static_cast<std::int64_t>(sequences.size()) * heads;

  // Exceptions must not cross the OpenMP region: failures are collected and raised after it.
  int failures = 0;
  auto one = [&](std::int64_t pair, int thread) {
    const SequenceSpan& seq = sequences[static_cast<std::size_t>(pair / heads)];
    const std::int64_t h = pair % heads;
    const std::int64_t len = seq.length;
    const float* q = qkv + seq.offset * ld_qkv + h * head_dim;
    const float* k = q + hidden;
    const float* v = q + 2 * hidden;
    float* scores = scratch.block(thread, std::max(max_len, block_side));
    if (banded && len - 1 > half) {
      if (!windowed_head(kernels, q, k, v, ld_qkv, ctx + seq.offset * hidden + h * head_dim, hidden,
                         len, head_dim, half, scale, scores)) {
#pragma omp atomic
        ++failures;
      }
      return;
    }
    // Our fused kernel adds no bias: biased scores take the library's path at every length.
    if (len <= own_kernel_max_len && !bias && !relative) {
      kernels.attention_head(q, k, v, ld_qkv, ctx + seq.offset * hidden + h * head_dim, hidden, len,
                             head_dim, scale, scores);
      return;
    }
    // Long sequences: the GEMM library's blocking wins. scores is [len, len], row stride len.
    // scores = Q Kᵀ (row-major sgemm; the 1/√d scale is applied inside the softmax).
    dnnl_status_t st =
        dnnl_sgemm('N', 'T', len, len, head_dim, 1.0f, q, ld_qkv, k, ld_qkv, 0.0f, scores, len);
    if (bias) {
      for (std::int64_t i = 0; i < len; ++i)
        add_score_bias(scores + i * len, bias.row(h, i), len, 1.0f / scale);
    }
    if (relative && !add_relative_terms(relative, q, k, ld_qkv, len, h * head_dim, head_dim, scores,
                                        scores + len * len)) {
#pragma omp atomic
      ++failures;
    }
    kernels.softmax(scores, len, len, len, scale);
    float* out = ctx + seq.offset * hidden + h * head_dim;
    dnnl_status_t st2 =
        dnnl_sgemm('N', 'N', len, head_dim, len, 1.0f, scores, len, v, ld_qkv, 0.0f, out, hidden);
    if (st != dnnl_success || st2 != dnnl_success) {
#pragma omp atomic
      ++failures;
    }
  };

  if (threads <= 1) {
    for (std::int64_t p = 0; p < pairs; ++p) one(p, 0);
  } else {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (std::int64_t p = 0; p < pairs; ++p) one(p, omp_get_thread_num());
  }
  if (failures != 0) fail("internal: {} attention GEMMs failed", failures);
}

}  // namespace mcinfer::cpu
