#include "backends/cpu/attention_bf16.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "backends/cpu/attention_fused.h"
#include "backends/cpu/gemm_avx2.h"
#include "backends/cpu/gemm_engine.h"
#include "core/error.h"
#include "core/half.h"

namespace mcinfer::cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// Sequence lengths are rounded up to this many tokens, so that a run compiles at most
// max_len / 16 pairs of products (each about 1 ms to create) and every product works on whole
// AMX tiles (16 rows).
constexpr std::int64_t kLengthQuantum = 16;

std::int64_t padded_length(std::int64_t len) {
  return (len + kLengthQuantum - 1) / kLengthQuantum * kLengthQuantum;
}

// Bytes rounded up to whole cache lines (the AVX2 kernels' panels are read with aligned loads).
std::int64_t lines(std::int64_t bytes) { return (bytes + 63) / 64 * 64; }

// Where the products run on our AVX2 kernels, one head at a time per thread: K and Vᵀ packed,
// the scores [len, len] in f32 and P in bf16, and a block of GEMM inputs widened.
struct OwnHeadScratch {
  std::int64_t k, v, s, p, wide, total;
  OwnHeadScratch(std::int64_t len, std::int64_t d)
      : k(lines(avx2::packed_bf16_size(len, d) * 2)),
        v(lines(avx2::packed_bf16_size(d, len) * 2)),
        s(lines(len * len * 4)),
        p(lines(len * len * 2)),
        wide(lines(std::max(avx2::bf16_scratch_size(len, d), avx2::bf16_scratch_size(len, len)) *
                   4)),
        total(k + v + s + p + wide) {}
};

}  // namespace

struct Bf16Attention::Impl {
  const dnnl::engine* engine;
  dnnl::stream stream;
  int threads;
  const KernelTable* kernels;
  struct Products {
    dnnl::matmul scores;   // [heads, L, d] · [heads, d, L] → f32 [heads, L, L]
    dnnl::matmul context;  // bf16 [heads, L, L] · [heads, L, d] → bf16 [heads, L, d]
    dnnl::memory::desc q, k, s, p, v, o;
  };
  std::unordered_map<std::int64_t, Products> products;  // by (heads · 1e6 + d) · 1e4 + L
  AlignedBuffer<Bf16> q, k, v, p, o;                    // [heads, L, d] / [heads, L, L]
  AlignedBuffer<float> s;                               // [heads, L, L]
  AlignedBuffer<std::uint8_t> fused_scratch;            // [threads, packed sequence + block]

  AlignedBuffer<float> wide_qkv, wide_ctx;  // the f32 fallback of relative terms
  AttentionScratch wide_scratch;

  void run_fused(FusedAttention kernel, const AttentionRules& rules, const Bf16* qkv, Bf16* ctx,
                 std::span<const SequenceSpan> sequences, int heads, std::int64_t hidden);
  void run_widened(const AttentionRules& rules, const Bf16* qkv, Bf16* ctx,
                   std::span<const SequenceSpan> sequences, int heads, std::int64_t hidden);
  void run_own(const ScoreBias& bias, float scale, const Bf16* qkv, Bf16* ctx,
               std::span<const SequenceSpan> sequences, int heads, std::int64_t hidden);
  AlignedBuffer<std::uint8_t> own_scratch;  // [threads, OwnHeadScratch]

  const Products& for_shape(std::int64_t heads, std::int64_t d, std::int64_t len) {
    const std::int64_t key = (heads * 1000000 + d) * 10000 + len;
    auto it = products.find(key);
    if (it != products.end()) return it->second;
    Products pr;
    pr.q = dnnl::memory::desc({heads, len, d}, dt::bf16, tag::abc);
    pr.k = dnnl::memory::desc({heads, d, len}, dt::bf16, tag::acb);  // K stored [heads, L, d]
    pr.s = dnnl::memory::desc({heads, len, len}, dt::f32, tag::abc);
    pr.p = dnnl::memory::desc({heads, len, len}, dt::bf16, tag::abc);
    pr.v = dnnl::memory::desc({heads, len, d}, dt::bf16, tag::abc);
    pr.o = dnnl::memory::desc({heads, len, d}, dt::bf16, tag::abc);
    pr.scores =
        dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(pr.q, pr.k, pr.s), *engine));
    pr.context =
        dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(pr.p, pr.v, pr.o), *engine));
    return products.emplace(key, std::move(pr)).first->second;
  }
};

Bf16Attention::Bf16Attention(const GemmEngine& engine, const KernelTable& kernels, int threads)
    : impl_(std::make_unique<Impl>()) {
  impl_->engine = &engine.impl().engine;
  impl_->stream = dnnl::stream(*impl_->engine);
  impl_->threads = threads < 1 ? 1 : threads;
  impl_->kernels = &kernels;
}

// The library's ISA cap (ONEDNN_MAX_CPU_ISA) and ours (MCINFER_MAX_ISA, which picks the kernel
// table) both step back from the fused kernels: capped runs test the library path on machines
// that have them (AVX2 table: the library; ONEDNN_MAX_CPU_ISA=avx512_core_bf16 on AMX: dots).
FusedAttention Bf16Attention::fused_for(const KernelTable& kernels, std::int64_t head_size) {
  if (kernels.isa != Isa::kAvx512) return FusedAttention::kNone;
  const std::string native = native_bf16_isa();
  if (native == "amx_bf16" && amx_attention_usable(head_size)) return FusedAttention::kAmx;
  if (!native.empty() && dot_attention_usable(head_size)) return FusedAttention::kDot;
  return FusedAttention::kNone;
}

FusedAttention Bf16Attention::fused(std::int64_t head_size) const {
  return fused_for(*impl_->kernels, head_size);
}

Bf16Attention::~Bf16Attention() = default;

std::size_t Bf16Attention::workspace_bytes() const {
  return impl_->fused_scratch.capacity_bytes() + impl_->own_scratch.capacity_bytes() +
         impl_->q.capacity_bytes() + impl_->k.capacity_bytes() + impl_->v.capacity_bytes() +
         impl_->p.capacity_bytes() + impl_->o.capacity_bytes() + impl_->s.capacity_bytes();
}

std::uint64_t Bf16Attention::workspace_bytes_for(std::int64_t tokens, std::int64_t max_len,
                                                 std::int64_t hidden, std::int64_t heads,
                                                 int threads, bool tiled) {
  const auto n_threads = static_cast<std::uint64_t>(threads < 1 ? 1 : threads);
  const std::int64_t d = hidden / heads;
  const auto packed = static_cast<std::uint64_t>(fused_packed_bytes(max_len, hidden));
  const std::uint64_t packed_copies = max_len <= kTiledFromLen ? n_threads : 1;
  if (tiled) {
    // The tiled kernel: the packed copies and one bounded block per thread; or the rows widened
    // to f32 (Q, K, V and the context) and cpu::attention's tiled scratch.
    const std::uint64_t fused =
        packed * packed_copies + n_threads * static_cast<std::uint64_t>(fused_tiled_block_bytes(d));
    const std::uint64_t widened =
        static_cast<std::uint64_t>(tokens) * static_cast<std::uint64_t>(4 * hidden) * 4 +
        n_threads * static_cast<std::uint64_t>(tiled_scratch_floats(d)) * 4;
    return std::max(fused, widened);
  }
  const auto len = static_cast<std::uint64_t>(padded_length(max_len));
  const auto h = static_cast<std::uint64_t>(hidden), n = static_cast<std::uint64_t>(heads);
  const std::uint64_t library =
      bf16_gemm_is_ours() ? n_threads * static_cast<std::uint64_t>(OwnHeadScratch(max_len, d).total)
                          : 4 * len * h * 2 + n * len * len * (2 + 4);
  // The fused kernel: per thread, one packed sequence and one block's scratch.
  const std::uint64_t fused = packed * packed_copies +
                              n_threads * static_cast<std::uint64_t>(fused_block_bytes(max_len, d));
  return std::max(library, fused);
}

void Bf16Attention::run(const Bf16* qkv, Bf16* ctx, std::span<const SequenceSpan> sequences,
                        int heads, std::int64_t hidden, const AttentionRules& rules) {
  Impl& m = *impl_;
  const std::int64_t d = hidden / heads, ld = 3 * hidden;
  const ScoreBias bias = rules.bias;
  const RelativeTerms& relative = rules.relative;
  FusedAttention kernel = fused(d);
  // Rotary positions and windows: the tiled dot-product kernel (also on CPUs with AMX: the tile
  // kernel has neither), else f32.
  if (rules.rotary || rules.window > 0) {
    if (kernel == FusedAttention::kNone)
      return m.run_widened(rules, qkv, ctx, sequences, heads, hidden);
    return m.run_fused(FusedAttention::kDot, rules, qkv, ctx, sequences, heads, hidden);
  }
  if (relative) {
    const bool pairs =
        (relative.key_pairs || !relative.key) && (relative.query_pairs || !relative.query);
    if (kernel == FusedAttention::kNone || !pairs)
      return m.run_widened(rules, qkv, ctx, sequences, heads, hidden);
    kernel = FusedAttention::kDot;
  }
  if (kernel != FusedAttention::kNone)
    return m.run_fused(kernel, rules, qkv, ctx, sequences, heads, hidden);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d * relative.scale_terms));
  if (bf16_gemm_is_ours()) return m.run_own(bias, scale, qkv, ctx, sequences, heads, hidden);
  const int threads = m.threads;
  for (const SequenceSpan& seq : sequences) {
    const std::int64_t len = seq.length, lp = padded_length(len);
    const auto head_block = static_cast<std::size_t>(lp * d);
    const auto n = static_cast<std::size_t>(heads) * head_block;
    // Zero-filled growth: the padding rows of K and V, and the padding columns of P, must be 0.
    for (AlignedBuffer<Bf16>* b : {&m.q, &m.k, &m.v, &m.o}) {
      if (b->size() < n) b->resize_zeroed(n);
    }
    const auto square = static_cast<std::size_t>(heads * lp * lp);
    if (m.p.size() < square) m.p.resize_zeroed(square);
    if (m.s.size() < square) m.s.resize_zeroed(square);
    // Split the sequence's rows of qkv into dense per-head blocks [heads, lp, d]; rows past len
    // are zero (K and V), so the padded keys score 0 and add nothing.
    const Bf16* rows = qkv + seq.offset * ld;
    for (int h = 0; h < heads; ++h) {
      for (int part = 0; part < 3; ++part) {
        Bf16* dst = (part == 0 ? m.q : part == 1 ? m.k : m.v).data() + h * head_block;
        for (std::int64_t i = 0; i < len; ++i)
          std::memcpy(dst + i * d, rows + i * ld + part * hidden + h * d, d * sizeof(Bf16));
        std::memset(dst + len * d, 0, static_cast<std::size_t>((lp - len) * d) * sizeof(Bf16));
      }
    }
    const Impl::Products& pr = m.for_shape(heads, d, lp);
    if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
    pr.scores.execute(m.stream, {{DNNL_ARG_SRC, dnnl::memory(pr.q, *m.engine, m.q.data())},
                                 {DNNL_ARG_WEIGHTS, dnnl::memory(pr.k, *m.engine, m.k.data())},
                                 {DNNL_ARG_DST, dnnl::memory(pr.s, *m.engine, m.s.data())}});
    m.stream.wait();
    // Softmax of each real row over the real keys, in f32, then rounded to bf16 (autocast's
    // order); the padded columns stay 0.
    const std::int64_t rows_total = heads * len;
    auto softmax_row = [&](std::int64_t r) {
      const std::int64_t h = r / len, i = r % len;
      const std::int64_t at = (h * lp + i) * lp;
      if (bias) add_score_bias(m.s.data() + at, bias.row(h, i), len, 1.0f / scale);
      m.kernels->softmax_to_bf16(m.s.data() + at, m.p.data() + at, len, lp, scale);
    };
    if (threads <= 1) {
      for (std::int64_t r = 0; r < rows_total; ++r) softmax_row(r);
    } else {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (std::int64_t r = 0; r < rows_total; ++r) softmax_row(r);
    }
    pr.context.execute(m.stream, {{DNNL_ARG_SRC, dnnl::memory(pr.p, *m.engine, m.p.data())},
                                  {DNNL_ARG_WEIGHTS, dnnl::memory(pr.v, *m.engine, m.v.data())},
                                  {DNNL_ARG_DST, dnnl::memory(pr.o, *m.engine, m.o.data())}});
    m.stream.wait();
    Bf16* out = ctx + seq.offset * hidden;
    for (int h = 0; h < heads; ++h) {
      const Bf16* src = m.o.data() + h * head_block;
      for (std::int64_t i = 0; i < len; ++i)
        std::memcpy(out + i * hidden + h * d, src + i * d, d * sizeof(Bf16));
    }
  }
}

// The library's products where it has none in bf16 (no AVX-512: no bf16 matmul at all), on our
// AVX2 GEMM with the library path's roundings: the scores summed in f32 from exact products,
// softmax in f32 rounded to bf16 (the same kernel), P·V summed in f32 and rounded to bf16 once.
// The heads are shared among the threads, each GEMM on one thread: its sums are the same
// whoever runs it.
void Bf16Attention::Impl::run_own(const ScoreBias& bias, float scale, const Bf16* qkv, Bf16* ctx,
                                  std::span<const SequenceSpan> sequences, int heads,
                                  std::int64_t hidden) {
  const std::int64_t d = hidden / heads, ld = 3 * hidden;
  std::int64_t max_len = 1;
  for (const SequenceSpan& seq : sequences) max_len = std::max(max_len, seq.length);
  const OwnHeadScratch size(max_len, d);
  const auto need = static_cast<std::size_t>(size.total * threads);
  if (own_scratch.size() < need) own_scratch.resize(need);
  const KernelTable& k = *kernels;
  auto head = [&](const SequenceSpan& seq, int h, int thread) {
    const std::int64_t len = seq.length;
    std::uint8_t* mine = own_scratch.data() + size.total * thread;
    auto* k_panels = reinterpret_cast<Bf16*>(mine);
    auto* v_panels = reinterpret_cast<Bf16*>(mine + size.k);
    auto* s = reinterpret_cast<float*>(mine + size.k + size.v);
    auto* p = reinterpret_cast<Bf16*>(mine + size.k + size.v + size.s);
    auto* wide = reinterpret_cast<float*>(mine + size.k + size.v + size.s + size.p);
    const Bf16* rows = qkv + seq.offset * ld + h * d;
    avx2::pack_bf16(rows + hidden, len, d, ld, k_panels);
    avx2::gemm_bf16(k_panels, rows, ld, len, d, len, nullptr, Activation::kNone, k,
                    {s, nullptr, len}, wide, 1);
    for (std::int64_t i = 0; i < len; ++i) {
      if (bias) add_score_bias(s + i * len, bias.row(h, i), len, 1.0f / scale);
      k.softmax_to_bf16(s + i * len, p + i * len, len, len, scale);
    }
    avx2::pack_bf16_transposed(rows + 2 * hidden, d, len, ld, v_panels);
    avx2::gemm_bf16(v_panels, p, len, len, len, d, nullptr, Activation::kNone, k,
                    {nullptr, ctx + seq.offset * hidden + h * d, hidden}, wide, 1);
  };
  for (const SequenceSpan& seq : sequences) {
    if (threads <= 1) {
      for (int h = 0; h < heads; ++h) head(seq, h, 0);
      continue;
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int h = 0; h < heads; ++h) head(seq, h, omp_get_thread_num());
  }
}

// Where no dot-product kernel runs (CPUs without avx512_bf16, head sizes it does not take),
// DeBERTa's and ModernBERT's attention widen the rows to f32 and run cpu::attention, then round
// the context to bf16: the products in f32 instead of bf16, on a path that only capped or older
// CPUs take.
void Bf16Attention::Impl::run_widened(const AttentionRules& rules, const Bf16* qkv, Bf16* ctx,
                                      std::span<const SequenceSpan> sequences, int heads,
                                      std::int64_t hidden) {
  std::int64_t tokens = 0;
  for (const SequenceSpan& seq : sequences) tokens = std::max(tokens, seq.offset + seq.length);
  const auto n = static_cast<std::size_t>(tokens * 3 * hidden);
  if (wide_qkv.size() < n) wide_qkv.resize(n);
  if (wide_ctx.size() < static_cast<std::size_t>(tokens * hidden))
    wide_ctx.resize(static_cast<std::size_t>(tokens * hidden));
  for (std::size_t i = 0; i < n; ++i) wide_qkv.data()[i] = bf16_to_float(qkv[i]);
  attention(*kernels, wide_qkv.data(), wide_ctx.data(), sequences, heads, hidden, wide_scratch,
            threads, rules);
  kernels->to_bf16(wide_ctx.data(), ctx, tokens * hidden);
}

// Many short sequences: each thread takes whole sequences (packs one, runs its heads) with its own
// scratch. Fewer sequences than threads, or rows longer than kTiledFromLen: the sequences go one
// at a time, packed by one thread into the only packed copy, their heads (tiled: heads × groups of
// queries) shared among all.
void Bf16Attention::Impl::run_fused(FusedAttention kernel, const AttentionRules& rules,
                                    const Bf16* qkv, Bf16* ctx,
                                    std::span<const SequenceSpan> sequences, int heads,
                                    std::int64_t hidden) {
  const ScoreBias bias = rules.bias;
  const RelativeTerms& relative = rules.relative;
  const std::int64_t d = hidden / heads, ld = 3 * hidden;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d * relative.scale_terms));
  const bool tiled = rules.rotary || rules.window > 0;
  std::int64_t max_len = 1;
  for (const SequenceSpan& seq : sequences) max_len = std::max(max_len, seq.length);
  const auto count = static_cast<std::int64_t>(sequences.size());
  const bool per_thread_packing = threads > 1 && count >= threads && max_len <= kTiledFromLen;
  const auto packed_bytes = static_cast<std::size_t>(fused_packed_bytes(max_len, hidden));
  const auto block_bytes =
      static_cast<std::size_t>(tiled ? fused_tiled_block_bytes(d) : fused_block_bytes(max_len, d));
  const auto relative_bytes = static_cast<std::size_t>(
      relative ? fused_relative_bytes(max_len, relative.reach(max_len)) : 0);
  const std::size_t per_thread = block_bytes + relative_bytes;
  const std::size_t packed_copies = per_thread_packing ? static_cast<std::size_t>(threads) : 1;
  const std::size_t total =
      packed_bytes * packed_copies + per_thread * static_cast<std::size_t>(threads);
  if (fused_scratch.size() < total) fused_scratch.resize_zeroed(total);
  std::uint8_t* const packed_base = fused_scratch.data();
  std::uint8_t* const thread_base = packed_base + packed_bytes * packed_copies;
  const bool amx = kernel == FusedAttention::kAmx;
  PackRotation rotation;
  if (rules.rotary) {
    rotation.cos = rules.rotary.table->cos(0);
    rotation.sin = rules.rotary.table->sin(0);
    rotation.half = rules.rotary.table->half();
  }
  auto pack = [&](const SequenceSpan& seq, int slot) {
    PackRotation rotated = rotation;
    if (rules.rotary) rotated.positions = rules.rotary.positions + seq.offset;
    fused_pack_sequence(qkv + seq.offset * ld, ld, seq.length, hidden, heads,
                        packed_base + packed_bytes * static_cast<std::size_t>(slot),
                        rules.rotary ? &rotated : nullptr);
  };
  // Head h of a packed sequence, its queries [first, first + queries) when tiled (all otherwise).
  auto head = [&](const SequenceSpan& seq, int h, int slot, int thread, std::int64_t first = 0,
                  std::int64_t queries = 0) {
    std::uint8_t* mine = thread_base + per_thread * static_cast<std::size_t>(thread);
    const std::uint8_t* packed = packed_base + packed_bytes * static_cast<std::size_t>(slot);
    Bf16* out = ctx + seq.offset * hidden;
    const float* row0 = bias ? bias.row(h, 0) : nullptr;
    if (tiled) {
      const std::int64_t half = rules.window > 0 ? rules.window / 2 : seq.length;
      dot_attention_head_tiled(packed, seq.length, hidden, heads, h, scale, half, first,
                               queries > 0 ? queries : seq.length, mine, out, hidden);
    } else if (amx) {
      amx_attention_head(packed, seq.length, hidden, heads, h, scale, row0, *kernels, mine, out,
                         hidden);
    } else if (relative) {
      const std::int64_t head_words = (d / 2) * relative.pair_stride;
      FusedRelative r;
      r.key_pairs = relative.key_pairs ? relative.key_pairs + h * head_words : nullptr;
      r.query_pairs = relative.query_pairs ? relative.query_pairs + h * head_words : nullptr;
      r.pair_stride = relative.pair_stride;
      r.index = relative.index + relative.origin;
      r.lowest = relative.lowest(seq.length);
      r.reach = relative.reach(seq.length);
      r.keys = qkv + seq.offset * ld + hidden + h * d;
      r.ld_keys = ld;
      r.scratch = mine + block_bytes;
      dot_attention_head(packed, seq.length, hidden, heads, h, scale, row0, mine, out, hidden, &r);
    } else {
      dot_attention_head(packed, seq.length, hidden, heads, h, scale, row0, mine, out, hidden);
    }
  };
  auto release = [amx] {
    if (amx) amx_release_tiles();
  };
  if (threads <= 1) {
    for (const SequenceSpan& seq : sequences) {
      pack(seq, 0);
      for (int h = 0; h < heads; ++h) head(seq, h, 0, 0);
    }
    release();
    return;
  }
  if (per_thread_packing) {
#pragma omp parallel num_threads(threads)
    {
      const int thread = omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
      for (std::int64_t i = 0; i < count; ++i) {
        const SequenceSpan& seq = sequences[static_cast<std::size_t>(i)];
        pack(seq, thread);
        for (int h = 0; h < heads; ++h) head(seq, h, thread, thread);
      }
      release();
    }
    return;
  }
  constexpr std::int64_t kQueriesPerItem = 512;
  for (const SequenceSpan& seq : sequences) {
    pack(seq, 0);
    const std::int64_t groups = tiled ? (seq.length + kQueriesPerItem - 1) / kQueriesPerItem : 1;
    const std::int64_t items = heads * groups;
#pragma omp parallel num_threads(threads)
    {
      const int thread = omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
      for (std::int64_t item = 0; item < items; ++item)
        head(seq, static_cast<int>(item / groups), 0, thread, (item % groups) * kQueriesPerItem,
             tiled ? kQueriesPerItem : 0);
      release();
    }
  }
}

}  // namespace mcinfer::cpu
