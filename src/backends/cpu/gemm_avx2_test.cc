// Our AVX2 GEMMs alone (gemm_avx2.h), on every CPU with AVX2 and FMA, whatever the GEMM library
// would pick there: ragged shapes (rows not a multiple of the tile, outputs not of the panel,
// odd input counts), against double (f32) and exact integer (s8) references; a row's outputs
// the same bytes in any tile and on any thread count.
#include "backends/cpu/gemm_avx2.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace mcinfer::cpu
