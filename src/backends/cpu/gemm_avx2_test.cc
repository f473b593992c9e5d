// Our AVX2 GEMMs alone (gemm_avx2.h), on every CPU with AVX2 and FMA, whatever the GEMM library
// would pick there: ragged shapes (rows not a multiple of the tile, outputs not of the panel,
// odd input counts), against double (f32, bf16) and exact integer (s8) references; a row's
// outputs the same bytes in any tile and on any thread count.
#include "backends/cpu/gemm_avx2.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "backends/cpu/kernels.h"
#include "core/aligned_buffer.h"
#include "support/cpu_features.h"

namespace mcinfer::cpu {
namespace {

std::vector<float> uniform(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<std::int8_t> int8s(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-127, 127);
  std::vector<std::int8_t> v(n);
  for (auto& x : v) x = static_cast<std::int8_t>(dist(rng));
  return v;
}

struct Shape {
  std::int64_t rows, in, out;
};
const Shape kShapes[] = {{1, 1, 1},    {5, 3, 17},    {6, 64, 16},   {7, 37, 33},
                         {13, 96, 40}, {97, 385, 47}, {200, 768, 64}};

TEST(Avx2Gemm, F32MatchesADoubleReferenceOnRaggedShapes) {
  NEED_CPU(avx2, "AVX2");
  const KernelTable& epilogue = avx2_kernels();
  for (const Shape& s : kShapes) {
    auto w = uniform(static_cast<std::size_t>(s.out * s.in), 1);
    auto x = uniform(static_cast<std::size_t>(s.rows * s.in), 2);
    auto bias = uniform(static_cast<std::size_t>(s.out), 3);
    AlignedBuffer<float> panels(static_cast<std::size_t>(avx2::packed_f32_size(s.out, s.in)));
    avx2::pack_f32(w.data(), s.out, s.in, panels.data());
    for (Activation act : {Activation::kNone, Activation::kGeluErf}) {
      for (int threads : {1, 2}) {
        std::vector<float> y(static_cast<std::size_t>(s.rows * s.out), NAN);
        avx2::gemm_f32(panels.data(), x.data(), s.rows, s.in, s.out, bias.data(), act, epilogue,
                       y.data(), threads);
        for (std::int64_t r = 0; r < s.rows; ++r)
          for (std::int64_t o = 0; o < s.out; ++o) {
            double acc = bias[o];
            for (std::int64_t i = 0; i < s.in; ++i)
              acc += double(x[r * s.in + i]) * w[o * s.in + i];
            if (act == Activation::kGeluErf) acc = 0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0)));
            ASSERT_NEAR(y[r * s.out + o], acc, 2e-6 * (1 + std::sqrt(double(s.in))))
                << s.rows << "x" << s.in << "x" << s.out << " r " << r << " o " << o;
          }
      }
    }
  }
}

// Each output is one FMA chain in input order whatever the tile height: the same bytes for a
// row computed alone, in any batch, on any thread count.
TEST(Avx2Gemm, F32RowsAreTheSameBytesInAnyBatch) {
  NEED_CPU(avx2, "AVX2");
  const std::int64_t in = 384, out = 72, most = 301;
  auto w = uniform(static_cast<std::size_t>(out * in), 4);
  auto x = uniform(static_cast<std::size_t>(most * in), 5);
  AlignedBuffer<float> panels(static_cast<std::size_t>(avx2::packed_f32_size(out, in)));
  avx2::pack_f32(w.data(), out, in, panels.data());
  std::vector<float> alone(static_cast<std::size_t>(most * out)), y(alone.size());
  for (std::int64_t r = 0; r < most; ++r)
    avx2::gemm_f32(panels.data(), x.data() + r * in, 1, in, out, nullptr, Activation::kNone,
                   avx2_kernels(), alone.data() + r * out, 1);
  for (std::int64_t rows : {2, 6, 7, 95, 96, 97, 301})
    for (int threads : {1, 2}) {
      avx2::gemm_f32(panels.data(), x.data(), rows, in, out, nullptr, Activation::kNone,
                     avx2_kernels(), y.data(), threads);
      for (std::int64_t i = 0; i < rows * out; ++i)
        ASSERT_EQ(y[i], alone[i]) << rows << " rows, " << threads << " threads, value " << i;
    }
}

// s8 products in s32 equal the exact integer sums, at random inputs and at the extremes that
// saturate 16-bit pair sums (every product ±127·127, or (−128)·(−128) through the widening).
TEST(Avx2Gemm, S8IsExactOnRaggedShapesAndSaturatingInputs) {
  NEED_CPU(avx2, "AVX2");
  for (const Shape& s : kShapes) {
    for (int pattern = 0; pattern < 3; ++pattern) {
      auto q = int8s(static_cast<std::size_t>(s.out * s.in), 6);
      auto x = int8s(static_cast<std::size_t>(s.rows * s.in), 7);
      if (pattern == 1) {  // all products +127·127 or −127·127 in long runs
        for (std::size_t i = 0; i < q.size(); ++i) q[i] = (i / 9) % 2 ? 127 : -127;
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = (i / 5) % 3 ? 127 : -127;
      } else if (pattern == 2) {  // the one value s8 has that −x does not
        std::fill(q.begin(), q.end(), std::int8_t{-128});
        std::fill(x.begin(), x.end(), std::int8_t{-128});
      }
      AlignedBuffer<std::int8_t> panels(
          static_cast<std::size_t>(avx2::packed_s8_size(s.out, s.in)));
      avx2::pack_s8(q.data(), s.out, s.in, panels.data());
      std::vector<std::int16_t> scratch(
          static_cast<std::size_t>(avx2::s8_scratch_size(s.rows, s.in)));
      for (int threads : {1, 2}) {
        std::vector<std::int32_t> y(static_cast<std::size_t>(s.rows * s.out));
        avx2::gemm_s8(panels.data(), x.data(), s.rows, s.in, s.out, y.data(), scratch.data(),
                      threads);
        for (std::int64_t r = 0; r < s.rows; ++r)
          for (std::int64_t o = 0; o < s.out; ++o) {
            std::int64_t dot = 0;
            for (std::int64_t i = 0; i < s.in; ++i)
              dot += std::int64_t{x[r * s.in + i]} * q[o * s.in + i];
            ASSERT_EQ(y[r * s.out + o], dot) << s.rows << "x" << s.in << "x" << s.out << " pattern "
                                             << pattern << " r " << r << " o " << o;
          }
      }
    }
  }
}

std::vector<Bf16> to_bf16(const std::vector<float>& v) {
  std::vector<Bf16> b(v.size());
  avx2_kernels().to_bf16(v.data(), b.data(), static_cast<std::int64_t>(v.size()));
  return b;
}

double widen(Bf16 b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

// bf16 weights and inputs, sums in f32: each product of two bf16 is exact in f32, so against a
// double reference over the same rounded values the f32 output differs by the rounding of the
// running sum alone, at most in · 2^-24 · Σ|terms| (the recursive-summation bound): a tolerance
// thousands of times tighter than bf16's own step. A bf16 output is that f32 value rounded to
// nearest even, once, after the activation: the same bits as rounding the f32 output.
TEST(Avx2Gemm, Bf16MatchesADoubleReferenceOnRaggedShapes) {
  NEED_CPU(avx2, "AVX2");
  const KernelTable& epilogue = avx2_kernels();
  for (const Shape& s : kShapes) {
    const auto w = to_bf16(uniform(static_cast<std::size_t>(s.out * s.in), 8));
    const auto x = to_bf16(uniform(static_cast<std::size_t>(s.rows * s.in), 9));
    const auto bias = uniform(static_cast<std::size_t>(s.out), 10);
    AlignedBuffer<Bf16> panels(static_cast<std::size_t>(avx2::packed_bf16_size(s.out, s.in)));
    avx2::pack_bf16(w.data(), s.out, s.in, s.in, panels.data());
    std::vector<float> scratch(static_cast<std::size_t>(avx2::bf16_scratch_size(s.rows, s.in)));
    for (Activation act : {Activation::kNone, Activation::kGeluErf}) {
      for (int threads : {1, 2}) {
        std::vector<float> y(static_cast<std::size_t>(s.rows * s.out), NAN);
        std::vector<Bf16> y16(y.size(), 0xFFFF);
        avx2::gemm_bf16(panels.data(), x.data(), s.in, s.rows, s.in, s.out, bias.data(), act,
                        epilogue, {y.data(), nullptr, s.out}, scratch.data(), threads);
        avx2::gemm_bf16(panels.data(), x.data(), s.in, s.rows, s.in, s.out, bias.data(), act,
                        epilogue, {nullptr, y16.data(), s.out}, scratch.data(), threads);
        const std::vector<Bf16> rounded = to_bf16(y);
        for (std::int64_t r = 0; r < s.rows; ++r)
          for (std::int64_t o = 0; o < s.out; ++o) {
            double acc = bias[o], magnitude = std::fabs(bias[o]);
            for (std::int64_t i = 0; i < s.in; ++i) {
              const double term = widen(x[r * s.in + i]) * widen(w[o * s.in + i]);
              acc += term;
              magnitude += std::fabs(term);
            }
            double tolerance = (s.in + 1) * 0x1p-24 * magnitude + 1e-30;
            if (act == Activation::kGeluErf) {
              acc = 0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0)));
              tolerance += 2e-6 * (1 + std::fabs(acc));  // the kernel's erf approximation
            }
            const std::int64_t at = r * s.out + o;
            ASSERT_NEAR(y[at], acc, tolerance)
                << s.rows << "x" << s.in << "x" << s.out << " r " << r << " o " << o;
            ASSERT_EQ(y16[at], rounded[at])
                << s.rows << "x" << s.in << "x" << s.out << " at " << at;
          }
      }
    }
  }
}

// As for f32: a row's outputs (f32 and bf16) are the same bytes alone, in any batch, on any
// thread count, from inputs at any row stride.
TEST(Avx2Gemm, Bf16RowsAreTheSameBytesInAnyBatch) {
  NEED_CPU(avx2, "AVX2");
  const std::int64_t in = 384, out = 72, most = 301, ldx = in + 5;
  const auto w = to_bf16(uniform(static_cast<std::size_t>(out * in), 11));
  const auto x = to_bf16(uniform(static_cast<std::size_t>(most * ldx), 12));
  const auto bias = uniform(static_cast<std::size_t>(out), 13);
  AlignedBuffer<Bf16> panels(static_cast<std::size_t>(avx2::packed_bf16_size(out, in)));
  avx2::pack_bf16(w.data(), out, in, in, panels.data());
  std::vector<float> scratch(static_cast<std::size_t>(avx2::bf16_scratch_size(most, in)));
  const std::size_t n = static_cast<std::size_t>(most * out);
  std::vector<float> alone(n), y(n);
  std::vector<Bf16> alone16(n), y16(n);
  auto run = [&](const Bf16* rows, std::int64_t count, float* f32, Bf16* bf16, int threads) {
    avx2::gemm_bf16(panels.data(), rows, ldx, count, in, out, bias.data(), Activation::kGeluTanh,
                    avx2_kernels(), {f32, bf16, out}, scratch.data(), threads);
  };
  for (std::int64_t r = 0; r < most; ++r) {
    run(x.data() + r * ldx, 1, alone.data() + r * out, nullptr, 1);
    run(x.data() + r * ldx, 1, nullptr, alone16.data() + r * out, 1);
  }
  for (std::int64_t rows : {2, 6, 7, 47, 48, 49, 301})
    for (int threads : {1, 2}) {
      run(x.data(), rows, y.data(), nullptr, threads);
      run(x.data(), rows, nullptr, y16.data(), threads);
      for (std::int64_t i = 0; i < rows * out; ++i) {
        ASSERT_EQ(y[i], alone[i]) << rows << " rows, " << threads << " threads, value " << i;
        ASSERT_EQ(y16[i], alone16[i]) << rows << " rows, " << threads << " threads, value " << i;
      }
    }
}

// Attention packs K from strided rows and V transposed: the same panels as from the plain matrix.
TEST(Avx2Gemm, Bf16PackingFromStridedAndTransposedRows) {
  const std::int64_t out = 37, in = 21, ld = 50;
  const auto m = to_bf16(uniform(static_cast<std::size_t>(out * ld), 14));
  std::vector<Bf16> plain(static_cast<std::size_t>(out * in)), plain_t(plain.size());
  for (std::int64_t o = 0; o < out; ++o)
    for (std::int64_t i = 0; i < in; ++i) {
      plain[o * in + i] = m[o * ld + i];
      plain_t[o * in + i] = m[i * ld + o];
    }
  const auto size = static_cast<std::size_t>(avx2::packed_bf16_size(out, in));
  std::vector<Bf16> want(size), got(size, 0xFFFF), want_t(size), got_t(size, 0xFFFF);
  avx2::pack_bf16(plain.data(), out, in, in, want.data());
  avx2::pack_bf16(m.data(), out, in, ld, got.data());
  avx2::pack_bf16(plain_t.data(), out, in, in, want_t.data());
  avx2::pack_bf16_transposed(m.data(), out, in, ld, got_t.data());
  EXPECT_EQ(got, want);
  EXPECT_EQ(got_t, want_t);
}

}  // namespace
}  // namespace mcinfer::cpu
