#include "backends/cpu/attention.h"

#include <gtest/gtest.h>

#include "backends/cpu/attention_bf16.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/kernels.h"
#include "support/cpu_features.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <vector>

namespace mcinfer::cpu {
namespace {

// What the reference adds to softmax(QKᵀ/√d)V: a window (query i sees |i − j| ≤ half) and
// rotary positions (each token's query and key rotated by the table's angles at its position in
// its sequence, in double; rounded to bf16 afterwards with round_rotated, as the bf16 kernel's
// packing does).
struct ReferenceRules {
  std::int64_t half = -1;  // -1: every key
  const RotaryTable* rotary = nullptr;
  bool round_rotated = false;
};

double rounded_to_bf16(double x) {
  Bf16 b;
  const float f = static_cast<float>(x);
  kernels_for(Isa::kGeneric).to_bf16(&f, &b, 1);
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

// Token t's query (part 0) or key (part 1) of head h, rotated when the rules say so.
std::vector<double> head_row(const std::vector<float>& qkv, std::int64_t hidden, std::int64_t d,
                             std::int64_t t, std::int64_t position, int part, int h,
                             const ReferenceRules& rules) {
  std::vector<double> x(static_cast<std::size_t>(d));
  for (std::int64_t c = 0; c < d; ++c) x[c] = qkv[t * 3 * hidden + part * hidden + h * d + c];
  if (!rules.rotary) return x;
  std::vector<double> y(x.size());
  const std::int64_t half = d / 2;
  const float* cos = rules.rotary->cos(position);
  const float* sin = rules.rotary->sin(position);
  for (std::int64_t c = 0; c < half; ++c) {
    y[c] = x[c] * cos[c] - x[c + half] * sin[c];
    y[c + half] = x[c + half] * cos[c] + x[c] * sin[c];
  }
  if (rules.round_rotated)
    for (double& v : y) v = rounded_to_bf16(v);
  return y;
}

// Reference: per sequence and head, softmax(QKᵀ/√d)V in double, with the rules' additions.
std::vector<double> reference(const std::vector<float>& qkv, const std::vector<SequenceSpan>& seqs,
                              int heads, std::int64_t hidden, std::int64_t tokens,
                              const ReferenceRules& rules = {}) {
  const std::int64_t d = hidden / heads;
  std::vector<double> ctx(static_cast<std::size_t>(tokens * hidden), 0.0);
  for (const auto& s : seqs) {
    for (int h = 0; h < heads; ++h) {
      std::vector<std::vector<double>> keys;
      for (std::int64_t j = 0; j < s.length; ++j)
        keys.push_back(head_row(qkv, hidden, d, s.offset + j, j, 1, h, rules));
      for (std::int64_t i = 0; i < s.length; ++i) {
        const std::vector<double> q = head_row(qkv, hidden, d, s.offset + i, i, 0, h, rules);
        const std::int64_t lo = rules.half < 0 ? 0 : std::max<std::int64_t>(0, i - rules.half);
        const std::int64_t hi =
            rules.half < 0 ? s.length : std::min<std::int64_t>(s.length, i + rules.half + 1);
        std::vector<double> p(static_cast<std::size_t>(s.length), 0.0);
        double mx = -1e300;
        for (std::int64_t j = lo; j < hi; ++j) {
          double dot = 0;
          for (std::int64_t c = 0; c < d; ++c) dot += q[c] * keys[j][c];
          p[j] = dot / std::sqrt(double(d));
          mx = std::max(mx, p[j]);
        }
        double total = 0;
        for (std::int64_t j = lo; j < hi; ++j) total += (p[j] = std::exp(p[j] - mx));
        for (std::int64_t c = 0; c < d; ++c) {
          double acc = 0;
          for (std::int64_t j = lo; j < hi; ++j)
            acc += p[j] / total * qkv[(s.offset + j) * 3 * hidden + 2 * hidden + h * d + c];
          ctx[(s.offset + i) * hidden + h * d + c] = acc;
        }
      }
    }
  }
  return ctx;
}

// Each token's position in its sequence (what the encoder's packing gives rotary layers).
std::vector<std::int32_t> positions_of(const std::vector<SequenceSpan>& seqs, std::int64_t tokens) {
  std::vector<std::int32_t> positions(static_cast<std::size_t>(tokens), 0);
  for (const auto& s : seqs)
    for (std::int64_t i = 0; i < s.length; ++i)
      positions[static_cast<std::size_t>(s.offset + i)] = static_cast<std::int32_t>(i);
  return positions;
}

// Rows up to the end of the last sequence, and random [tokens, 3·hidden] Q, K, V for them.
std::int64_t token_count(const std::vector<SequenceSpan>& seqs) {
  std::int64_t tokens = 0;
  for (const auto& s : seqs) tokens = std::max(tokens, s.offset + s.length);
  return tokens;
}
std::vector<float> random_qkv(std::int64_t tokens, std::int64_t hidden, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0, 1);
  std::vector<float> qkv(static_cast<std::size_t>(tokens * 3 * hidden));
  for (auto& v : qkv) v = dist(rng);
  return qkv;
}

void expect_matches_reference(int heads, std::int64_t hidden, std::vector<SequenceSpan> seqs) {
  const std::int64_t tokens = token_count(seqs);
  const std::vector<float> qkv = random_qkv(tokens, hidden, 7);
  auto want = reference(qkv, seqs, heads, hidden, tokens);
  for (Isa isa : supported_isas()) {
    for (int threads : {1, 2}) {
      for (std::int64_t own_max :
           {std::int64_t{0}, std::int64_t{5}, std::int64_t{1} << 30, std::int64_t{-1}}) {
        std::vector<float> ctx(static_cast<std::size_t>(tokens * hidden), -1.0f);
        AttentionScratch scratch;
        attention(kernels_for(isa), qkv.data(), ctx.data(), seqs, heads, hidden, scratch, threads,
                  {}, own_max);
        for (std::size_t i = 0; i < ctx.size(); ++i) {
          ASSERT_NEAR(ctx[i], want[i], 1e-5)
              << isa_name(isa) << " threads " << threads << " own<=" << own_max << " at " << i;
        }
      }
    }
  }
}

// Head size 8: every vector loop of the fused kernel runs only its tail.
TEST(Attention, PackedSequencesMatchReference) {
  expect_matches_reference(4, 32, {{0, 5}, {5, 1}, {6, 17}, {23, 2}});
}

// Head sizes 32 and 72 (two full vectors and a tail at every width), sequences around the
// register-block and vector boundaries, and one long enough for the default library path.
TEST(Attention, WideHeadsAndLongSequencesMatchReference) {
  expect_matches_reference(2, 64, {{0, 40}, {40, 3}, {43, 129}, {172, 16}, {188, 9}});
  expect_matches_reference(2, 144, {{0, 33}, {33, 8}, {41, 31}});
}

// The tiled path against the reference: rows longer than kTiledFromLen (several key chunks and
// query blocks, one item per group of queries), windows shorter and longer than the rows (bands
// starting inside a chunk, rows the window covers whole), rotary positions (rows of every kind).
void expect_tiled_matches_reference(int heads, std::int64_t hidden,
                                    const std::vector<SequenceSpan>& seqs, std::int64_t window,
                                    bool rotary) {
  const std::int64_t tokens = token_count(seqs);
  const std::vector<float> qkv = random_qkv(tokens, hidden, 5);
  const RotaryTable table = RotaryTable::build(10000.0, hidden / heads, tokens);
  const std::vector<std::int32_t> positions = positions_of(seqs, tokens);
  ReferenceRules expected;
  expected.half = window > 0 ? window / 2 : -1;
  expected.rotary = rotary ? &table : nullptr;
  const auto want = reference(qkv, seqs, heads, hidden, tokens, expected);
  AttentionRules rules;
  rules.window = window;
  if (rotary) rules.rotary = {&table, positions.data()};
  for (Isa isa : supported_isas()) {
    for (int threads : {1, 2}) {
      std::vector<float> ctx(static_cast<std::size_t>(tokens * hidden), -1.0f);
      AttentionScratch scratch;
      attention(kernels_for(isa), qkv.data(), ctx.data(), seqs, heads, hidden, scratch, threads,
                rules);
      for (std::size_t i = 0; i < ctx.size(); ++i) {
        ASSERT_NEAR(ctx[i], want[i], 2e-5) << isa_name(isa) << " threads " << threads << " window "
                                           << window << " rotary " << rotary << " at " << i;
      }
    }
  }
}

TEST(Attention, TiledRowsMatchReference) {
  ASSERT_GT(1100, kTiledFromLen);
  expect_tiled_matches_reference(2, 64, {{0, 1100}, {1100, 7}}, 0, false);
  expect_tiled_matches_reference(2, 64, {{0, 5}, {5, 9}, {14, 300}, {314, 70}}, 16, false);
  expect_tiled_matches_reference(2, 64, {{0, 3}, {3, 600}, {603, 65}}, 0, true);
  expect_tiled_matches_reference(2, 64, {{0, 700}, {700, 20}}, 300, true);
}

// The tiled path's scratch does not grow with the rows: the same for 2,000 tokens as for 200.
// Grouped-query attention (4 query heads, 2 key-value heads of 16): each query head reads the
// key-value head h / 2 in place, equal to plain attention over K and V copied per query head;
// reading head h % 2 instead (another sharing) gives other outputs.
TEST(Attention, GroupedQueryHeadsShareTheirKeyValueHead) {
  const int heads = 4, kv_heads = 2;
  const std::int64_t d = 16, hidden = heads * d, kv_width = kv_heads * d;
  const std::vector<SequenceSpan> seqs{{0, 37}, {37, 5}, {42, 1}};
  const std::int64_t tokens = token_count(seqs), ld = hidden + 2 * kv_width;
  std::vector<float> grouped = random_qkv(tokens, hidden, 11);
  grouped.resize(static_cast<std::size_t>(tokens * ld));
  auto expand = [&](auto kv_head_of) {
    std::vector<float> plain(static_cast<std::size_t>(tokens * 3 * hidden));
    for (std::int64_t t = 0; t < tokens; ++t) {
      const float* src = grouped.data() + t * ld;
      float* dst = plain.data() + t * 3 * hidden;
      std::copy(src, src + hidden, dst);
      for (int h = 0; h < heads; ++h)
        for (int part = 1; part <= 2; ++part)
          for (std::int64_t c = 0; c < d; ++c)
            dst[part * hidden + h * d + c] =
                src[hidden + (part - 1) * kv_width + kv_head_of(h) * d + c];
    }
    return plain;
  };
  AttentionRules gqa;
  gqa.kv_heads = kv_heads;
  gqa.head_dim = d;
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "bidirectional");
    gqa.causal = causal;
    AttentionRules plain_rules;
    plain_rules.causal = causal;
    auto run = [&](const std::vector<float>& qkv, const AttentionRules& rules) {
      std::vector<float> ctx(static_cast<std::size_t>(tokens * hidden), -1.0f);
      AttentionScratch scratch;
      attention(kernels_for(best_isa()), qkv.data(), ctx.data(), seqs, heads, hidden, scratch, 2,
                rules);
      return ctx;
    };
    const std::vector<float> got = run(grouped, gqa);
    const std::vector<float> want = run(expand([](int h) { return h / 2; }), plain_rules);
    const std::vector<float> other = run(expand([](int h) { return h % 2; }), plain_rules);
    double error = 0, other_error = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      error = std::max(error, std::fabs(double(got[i]) - want[i]));
      other_error = std::max(other_error, std::fabs(double(other[i]) - want[i]));
    }
    EXPECT_LE(error, 1e-6);
    EXPECT_GT(other_error, 1e-2);
  }
}

// A causal mask: query i sees keys 0..i, so its output is the last row of plain attention over
// the prefix 0..i alone; with a window of W keys, over i − W + 1 .. i.
TEST(Attention, CausalRowsSeeTheirPrefixOrTheirWindow) {
  const int heads = 2;
  const std::int64_t hidden = 32, len = 40;
  const std::vector<float> qkv = random_qkv(len, hidden, 13);
  for (std::int64_t window : {std::int64_t{0}, std::int64_t{6}}) {
    SCOPED_TRACE(window);
    AttentionRules causal;
    causal.causal = true;
    causal.window = window;
    std::vector<float> ctx(static_cast<std::size_t>(len * hidden), -1.0f);
    AttentionScratch scratch;
    const std::vector<SequenceSpan> whole{{0, len}};
    attention(kernels_for(best_isa()), qkv.data(), ctx.data(), whole, heads, hidden, scratch, 1,
              causal);
    for (std::int64_t i = 0; i < len; ++i) {
      const std::int64_t first = window > 0 ? std::max<std::int64_t>(0, i - window + 1) : 0;
      const std::vector<SequenceSpan> keys{{first, i - first + 1}};
      const auto want = reference(qkv, keys, heads, hidden, len);
      for (std::int64_t c = 0; c < hidden; ++c)
        ASSERT_NEAR(ctx[i * hidden + c], want[i * hidden + c], 1e-5) << "row " << i << " col " << c;
    }
    EXPECT_NEAR(attention_pairs(len, causal), window > 0 ? 6 * len - 15 : len * (len + 1) / 2.0,
                0.0);
  }
}

TEST(Attention, TiledScratchIsBoundedIndependentlyOfLength) {
  AttentionRules rotary_rules;
  RotaryTable table = RotaryTable::build(10000.0, 64, 4);
  rotary_rules.rotary = {&table, nullptr};
  EXPECT_EQ(attention_scratch_floats(200, 64, rotary_rules),
            attention_scratch_floats(200000, 64, rotary_rules));
  EXPECT_EQ(attention_scratch_floats(200000, 64, rotary_rules), tiled_scratch_floats(64));
  // Plain rows beyond kTiledFromLen: nothing beyond what the longest one-block row needs.
  EXPECT_EQ(attention_scratch_floats(50000, 64, {}),
            std::max(tiled_scratch_floats(64), attention_scratch_floats(kTiledFromLen, 64, {})));
}

// Q, K, V rounded to bf16: the bits the kernels read, and their values for the reference.
struct Bf16Rows {
  std::vector<Bf16> bits;
  std::vector<float> values;
};
Bf16Rows bf16_rows(const std::vector<float>& qkv) {
  Bf16Rows rows{std::vector<Bf16>(qkv.size()), std::vector<float>(qkv.size())};
  kernels_for(Isa::kGeneric)
      .to_bf16(qkv.data(), rows.bits.data(), static_cast<std::int64_t>(qkv.size()));
  for (std::size_t i = 0; i < qkv.size(); ++i)
    rows.values[i] = std::bit_cast<float>(static_cast<std::uint32_t>(rows.bits[i]) << 16);
  return rows;
}

// AVX512_BF16 from cpuid (clang 14's __builtin_cpu_supports does not know it).
// bf16: the reference is the same double computation over the bf16-rounded Q, K and V. The kernel
// also rounds the probabilities (relative 2^-9) and its output (2^-9) to bf16, so a value of
// magnitude ~1 may differ by a few thousandths; a wrong pairing, a dropped tail token or a
// missing normalisation would be off by far more.
void expect_bf16_matches_reference(int heads, std::int64_t hidden,
                                   const std::vector<SequenceSpan>& seqs) {
  const std::int64_t tokens = token_count(seqs);
  const auto [qkv16, rounded] = bf16_rows(random_qkv(tokens, hidden, 11));
  auto want = reference(rounded, seqs, heads, hidden, tokens);
  GemmEngine engine;
  // The best table takes a fused kernel where the CPU has one; the AVX2 table keeps the library's
  // products (as MCINFER_MAX_ISA=avx2 does), so both paths are checked on such CPUs.
  std::vector<Isa> isas = {best_isa()};
  if (best_isa() == Isa::kAvx512) isas.push_back(Isa::kAvx2);
  for (Isa isa : isas) {
    for (int threads : {1, 2}) {
      std::vector<Bf16> ctx(static_cast<std::size_t>(tokens * hidden), 0xFFFF);
      // One object for all calls, sequences of changing lengths: stale padding must never leak.
      Bf16Attention attention(engine, kernels_for(isa), threads);
      const std::int64_t d = hidden / heads;
      // What this CPU should run, from its flags (cpuid).
      const bool fusable = isa == Isa::kAvx512 && d % 32 == 0;
      const testing::CpuFeatures& cpu = testing::cpu_features();
      const FusedAttention expected = !fusable          ? FusedAttention::kNone
                                      : cpu.amx_bf16    ? FusedAttention::kAmx
                                      : cpu.avx512_bf16 ? FusedAttention::kDot
                                                        : FusedAttention::kNone;
      EXPECT_EQ(attention.fused(d), expected) << "head size " << d;
      EXPECT_EQ(Bf16Attention::fused_for(kernels_for(isa), d), expected) << "head size " << d;
      const char* path = expected == FusedAttention::kAmx   ? " (AMX kernel)"
                         : expected == FusedAttention::kDot ? " (dot-product kernel)"
                         : bf16_gemm_is_ours()              ? " (our AVX2 products)"
                                                            : " (library)";
      attention.run(qkv16.data(), ctx.data(), seqs, heads, hidden);
      for (std::size_t i = 0; i < ctx.size(); ++i) {
        const float got = std::bit_cast<float>(static_cast<std::uint32_t>(ctx[i]) << 16);
        ASSERT_NEAR(got, want[i], 4e-3 * (1 + std::fabs(want[i])))
            << "hidden " << hidden << " threads " << threads << " isa " << isa_name(isa) << path
            << " at " << i;
      }
    }
  }
}

TEST(AttentionBf16, PackedSequencesMatchReference) {
  NEED_BF16();
  // Head sizes 64 (BERT), 32 (MiniLM) and 24; lengths around the 16-token padding (a long one
  // after short ones, short ones after it), one sequence of one token.
  expect_bf16_matches_reference(
      2, 128, {{0, 5}, {5, 1}, {6, 17}, {23, 2}, {25, 33}, {58, 129}, {187, 16}, {203, 3}});
  expect_bf16_matches_reference(3, 96, {{0, 4}, {4, 31}, {35, 16}, {51, 7}});
  expect_bf16_matches_reference(2, 48, {{0, 40}, {40, 9}});
  // Head sizes 96 (six 16-wide blocks: a group of four and one of two) and 128 (two groups),
  // a length past 64 keys, one exactly 32 and one of 16.
  expect_bf16_matches_reference(2, 192, {{0, 70}, {70, 32}, {102, 16}, {118, 1}});
  expect_bf16_matches_reference(2, 256, {{0, 33}, {33, 64}});
}

// The tiled bf16 paths (rotary positions, windows): the dot-product kernel where the CPU has
// avx512_bf16 (queries and keys rotated while packed, rounded to bf16 once: so is the reference),
// the rows widened to f32 on the AVX2 table.
void expect_bf16_tiled_matches_reference(int heads, std::int64_t hidden,
                                         const std::vector<SequenceSpan>& seqs, std::int64_t window,
                                         bool rotary) {
  const std::int64_t tokens = token_count(seqs);
  const auto [qkv16, rounded] = bf16_rows(random_qkv(tokens, hidden, 13));
  const RotaryTable table = RotaryTable::build(160000.0, hidden / heads, tokens);
  const std::vector<std::int32_t> positions = positions_of(seqs, tokens);
  AttentionRules rules;
  rules.window = window;
  if (rotary) rules.rotary = {&table, positions.data()};
  GemmEngine engine;
  std::vector<Isa> isas = {best_isa()};
  if (best_isa() == Isa::kAvx512) isas.push_back(Isa::kAvx2);
  for (Isa isa : isas) {
    const bool fused =
        Bf16Attention::fused_for(kernels_for(isa), hidden / heads) != FusedAttention::kNone;
    ReferenceRules expected;
    expected.half = window > 0 ? window / 2 : -1;
    expected.rotary = rotary ? &table : nullptr;
    expected.round_rotated = fused;
    const auto want = reference(rounded, seqs, heads, hidden, tokens, expected);
    for (int threads : {1, 2}) {
      std::vector<Bf16> ctx(static_cast<std::size_t>(tokens * hidden), 0xFFFF);
      Bf16Attention attention(engine, kernels_for(isa), threads);
      attention.run(qkv16.data(), ctx.data(), seqs, heads, hidden, rules);
      for (std::size_t i = 0; i < ctx.size(); ++i) {
        const float got = std::bit_cast<float>(static_cast<std::uint32_t>(ctx[i]) << 16);
        ASSERT_NEAR(got, want[i], 4e-3 * (1 + std::fabs(want[i])))
            << "isa " << isa_name(isa) << (fused ? " (tiled kernel)" : " (widened)") << " threads "
            << threads << " window " << window << " rotary " << rotary << " at " << i;
      }
    }
  }
}

TEST(AttentionBf16, TiledRowsMatchReference) {
  NEED_BF16();
  // Rows over several 512-key chunks, bands starting inside a chunk and off the 32-key grid,
  // short rows a window covers whole, head sizes 64 and 32.
  expect_bf16_tiled_matches_reference(2, 128, {{0, 1100}, {1100, 9}}, 0, true);
  expect_bf16_tiled_matches_reference(2, 128, {{0, 3}, {3, 700}, {703, 41}}, 20, true);
  expect_bf16_tiled_matches_reference(3, 96, {{0, 600}, {600, 17}}, 128, false);
}

}  // namespace
}  // namespace mcinfer::cpu
