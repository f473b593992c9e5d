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

// Reference: per sequence and head, softmax(QKᵀ/√d)V in double.
std::vector<double> reference(const std::vector<float>& qkv, const std::vector<SequenceSpan>& seqs,
                              int heads, std::int64_t hidden, std::int64_t tokens) {
  const std::int64_t d = hidden / heads;
  std::vector<double> ctx(static_cast<std::size_t>(tokens * hidden), 0.0);
  for (const auto& s : seqs) {
    for (int h = 0; h < heads; ++h) {
      for (std::int64_t i = 0; i < s.length; ++i) {
        std::vector<double> p(static_cast<std::size_t>(s.length));
        double mx = -1e300;
        for (std::int64_t j = 0; j < s.length; ++j) {
          double dot = 0;
          for (std::int64_t c = 0; c < d; ++c) {
            dot += double(qkv[(s.offset + i) * 3 * hidden + h * d + c]) *
                   qkv[(s.offset + j) * 3 * hidden + hidden + h * d + c];
          }
          p[j] = dot / std::sqrt(double(d));
          mx = std::max(mx, p[j]);
        }
        double total = 0;
        for (auto& v : p) total += (v = std::exp(v - mx));
        for (std::int64_t c = 0; c < d; ++c) {
          double acc = 0;
          for (std::int64_t j = 0; j < s.length; ++j) {
            acc += p[j] / total * qkv[(s.offset + j) * 3 * hidden + 2 * hidden + h * d + c];
          }
          ctx[(s.offset + i) * hidden + h * d + c] = acc;
        }
      }
    }
  }
  return ctx;
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
                  own_max);
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

// AVX512_BF16 from cpuid (clang 14's __builtin_cpu_supports does not know it).
// bf16: the reference is the same double computation over the bf16-rounded Q, K and V. The kernel
// also rounds the probabilities (relative 2^-9) and its output (2^-9) to bf16, so a value of
// magnitude ~1 may differ by a few thousandths; a wrong pairing, a dropped tail token or a
// missing normalisation would be off by far more.
void expect_bf16_matches_reference(int heads, std::int64_t hidden,
                                   const std::vector<SequenceSpan>& seqs) {
  const std::int64_t tokens = token_count(seqs);
  const std::vector<float> qkv = random_qkv(tokens, hidden, 11);
  std::vector<Bf16> qkv16(qkv.size());
  kernels_for(Isa::kGeneric)
      .to_bf16(qkv.data(), qkv16.data(), static_cast<std::int64_t>(qkv.size()));
  std::vector<float> rounded(qkv.size());
  for (std::size_t i = 0; i < qkv.size(); ++i)
    rounded[i] = std::bit_cast<float>(static_cast<std::uint32_t>(qkv16[i]) << 16);
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
  NEED_CPU(native_bf16(), "native bf16");
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

}  // namespace
}  // namespace mcinfer::cpu
