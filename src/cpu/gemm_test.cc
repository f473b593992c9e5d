#include "cpu/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace mcinfer::cpu {
namespace {

std::vector<float> random_vector(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// y = act(x Wᵀ + b) in double, W in PyTorch's [out, in] layout.
TEST(Gemm, PackedLinearMatchesReferenceForEveryRowCount) {
  GemmEngine engine;
  GemmRunner runner(engine, 1);
  for (auto [in, out] : {std::pair<std::int64_t, std::int64_t>{64, 48}, {37, 100}, {384, 1536}}) {
    auto w = random_vector(static_cast<std::size_t>(in * out), 1);
    auto b = random_vector(static_cast<std::size_t>(out), 2);
    PackedLinear linear(engine, w.data(), b.data(), out, in);
    PackedLinear no_bias(engine, w.data(), nullptr, out, in);
    for (std::int64_t rows : {1, 2, 15, 16, 17, 100}) {
      const std::int64_t padded = GemmRunner::round_rows(rows);
      ASSERT_GE(padded, rows);
      auto x = random_vector(static_cast<std::size_t>(padded * in), 3);
      std::vector<float> y(static_cast<std::size_t>(padded * out));
      for (bool bias : {true, false}) {
        for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kGeluErf}) {
          runner.linear(bias ? linear : no_bias, x.data(), rows, y.data(), act);
          for (std::int64_t r = 0; r < rows; ++r) {
            for (std::int64_t o = 0; o < out; ++o) {
              double acc = bias ? b[o] : 0.0;
              for (std::int64_t i = 0; i < in; ++i) acc += double(x[r * in + i]) * w[o * in + i];
              if (act == Activation::kRelu) acc = acc > 0 ? acc : 0;
              if (act == Activation::kGeluErf)
                acc = 0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0)));
              ASSERT_NEAR(y[r * out + o], acc, 1e-4 * (1 + std::fabs(acc)))
                  << in << "x" << out << " rows " << rows << " r " << r << " o " << o;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(runner.compiled_kernels(), 0u);
}

// A runner outlives the weights it has run: weights freed and new ones of another shape made
// (often at the same address) must get kernels of their own, not the old weights' kernels.
TEST(Gemm, NewWeightsNeverReuseAFreedWeightsKernels) {
  GemmEngine engine;
  GemmRunner runner(engine, 1);
  const std::int64_t rows = 4;
  auto x = random_vector(static_cast<std::size_t>(rows * 96), 7);
  for (int round = 0; round < 20; ++round) {
    const std::int64_t in = round % 2 ? 96 : 32, out = round % 2 ? 40 : 72;
    auto w = random_vector(static_cast<std::size_t>(in * out), 100 + round);
    std::vector<float> y(static_cast<std::size_t>(rows * out));
    {
      PackedLinear linear(engine, w.data(), nullptr, out, in);
      runner.linear(linear, x.data(), rows, y.data(), Activation::kNone);
    }
    for (std::int64_t o = 0; o < out; ++o) {
      double acc = 0;
      for (std::int64_t i = 0; i < in; ++i) acc += double(x[i]) * w[o * in + i];
      ASSERT_NEAR(y[o], acc, 1e-4 * (1 + std::fabs(acc))) << "round " << round << " o " << o;
    }
  }
}

TEST(Gemm, RowCountsAreRoundedToFewKernels) {
  EXPECT_EQ(GemmRunner::round_rows(3), 3);
  EXPECT_EQ(GemmRunner::round_rows(17), 32);
  EXPECT_EQ(GemmRunner::round_rows(32), 32);
}

}  // namespace
}  // namespace mcinfer::cpu
