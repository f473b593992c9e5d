#include "cpu/gemm.h"

#include <gtest/gtest.h>

#include "core/error.h"

#include <bit>
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

// Kernels are compiled per shape: layers of the same shape share them, each still computing
// with its own weights and bias, and the cache holds one kernel per shape and row count.
TEST(Gemm, SameShapeLayersShareKernelsAndKeepTheirOwnWeights) {
  GemmEngine engine;
  GemmRunner runner(engine, 1);
  const std::int64_t in = 48, out = 40, rows = 5, layers = 6;
  auto x = random_vector(static_cast<std::size_t>(GemmRunner::round_rows(rows) * in), 9);
  std::vector<std::vector<float>> ws, bs;
  std::vector<PackedLinear> linears;
  for (int l = 0; l < layers; ++l) {
    ws.push_back(random_vector(static_cast<std::size_t>(in * out), 200 + l));
    bs.push_back(random_vector(static_cast<std::size_t>(out), 300 + l));
    linears.emplace_back(engine, ws.back().data(), bs.back().data(), out, in);
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (int l = 0; l < layers; ++l) {
      std::vector<float> y(static_cast<std::size_t>(GemmRunner::round_rows(rows) * out));
      runner.linear(linears[l], x.data(), rows, y.data(), Activation::kNone);
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t o = 0; o < out; ++o) {
          double acc = bs[l][o];
          for (std::int64_t i = 0; i < in; ++i) acc += double(x[r * in + i]) * ws[l][o * in + i];
          ASSERT_NEAR(y[r * out + o], acc, 1e-4 * (1 + std::fabs(acc))) << "layer " << l;
        }
      }
    }
  }
  EXPECT_EQ(runner.compiled_kernels(), 1u);
}

// bf16 layers: weights (from f32 or from bf16 bits) and inputs are rounded to bf16, products
// accumulate in f32. Against a double reference over the same rounded values, the f32 output
// differs by accumulation rounding only; the bf16 output by one more bf16 rounding (2^-8).
TEST(Gemm, Bf16LinearMatchesReferenceOnRoundedValues) {
  if (native_bf16_isa().empty()) GTEST_SKIP() << "no native bf16 on this CPU";
  GemmEngine engine;
  GemmRunner runner(engine, 1);
  const KernelTable& k = kernels_for(best_isa());
  auto round = [&](const std::vector<float>& v) {
    std::vector<Bf16> b(v.size());
    k.to_bf16(v.data(), b.data(), static_cast<std::int64_t>(v.size()));
    return b;
  };
  auto widen = [](Bf16 b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); };
  for (auto [in, out] : {std::pair<std::int64_t, std::int64_t>{64, 48}, {384, 1536}}) {
    auto w = random_vector(static_cast<std::size_t>(in * out), 1);
    auto b = random_vector(static_cast<std::size_t>(out), 2);
    const std::vector<Bf16> w16 = round(w);
    PackedLinear from_f32(engine, w.data(), DType::kF32, b.data(), out, in, DType::kBf16);
    PackedLinear from_bf16(engine, w16.data(), DType::kBf16, b.data(), out, in, DType::kBf16);
    PackedLinear f32(engine, w.data(), b.data(), out, in);
    EXPECT_EQ(from_f32.compute_type(), DType::kBf16);
    // Half the bytes of the f32 packing (the bias stays f32).
    EXPECT_LE(from_f32.packed_bytes(), f32.packed_bytes() * 55 / 100);
    for (std::int64_t rows : {1, 17, 100}) {
      const std::int64_t padded = GemmRunner::round_rows(rows);
      const std::vector<Bf16> x16 = round(random_vector(static_cast<std::size_t>(padded * in), 3));
      std::vector<float> y(static_cast<std::size_t>(padded * out));
      std::vector<Bf16> y16(static_cast<std::size_t>(padded * out));
      for (const PackedLinear* linear : {&from_f32, &from_bf16}) {
        runner.linear(*linear, x16.data(), rows, y.data(), DType::kF32, Activation::kGeluErf);
        runner.linear(*linear, x16.data(), rows, y16.data(), DType::kBf16, Activation::kGeluErf);
        for (std::int64_t r = 0; r < rows; ++r) {
          for (std::int64_t o = 0; o < out; ++o) {
            double acc = b[o];
            for (std::int64_t i = 0; i < in; ++i)
              acc += double(widen(x16[r * in + i])) * widen(w16[o * in + i]);
            acc = 0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0)));
            ASSERT_NEAR(y[r * out + o], acc, 2e-4 * (1 + std::fabs(acc)))
                << in << "x" << out << " rows " << rows << " r " << r << " o " << o;
            ASSERT_NEAR(widen(y16[r * out + o]), acc, 5e-3 * (1 + std::fabs(acc)))
                << in << "x" << out << " rows " << rows << " r " << r << " o " << o;
          }
        }
      }
    }
  }
}

// An f32 layer has no bf16 output: a wrong call is an internal error, not wrong numbers.
TEST(Gemm, F32LayerRefusesABf16Output) {
  GemmEngine engine;
  GemmRunner runner(engine, 1);
  auto w = random_vector(16 * 8, 1);
  PackedLinear linear(engine, w.data(), nullptr, 8, 16);
  std::vector<float> x(16, 1.0f);
  std::vector<Bf16> y(8);
  EXPECT_THROW(runner.linear(linear, x.data(), 1, y.data(), DType::kBf16, Activation::kNone),
               Error);
}

TEST(Gemm, RowCountsAreRoundedToFewKernels) {
  EXPECT_EQ(GemmRunner::round_rows(3), 3);
  EXPECT_EQ(GemmRunner::round_rows(17), 32);
  EXPECT_EQ(GemmRunner::round_rows(32), 32);
}

}  // namespace
}  // namespace mcinfer::cpu
