// Every instruction set's kernel table against a plain double-precision reference written
// from the definitions (std::erf, std::tanh, std::exp), on odd sizes that exercise the tails.
#include "backends/cpu/kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace mcinfer::cpu {
namespace {

std::vector<float> random_vector(std::size_t n, float scale, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

double reference_activation(double x, Activation act) {
  switch (act) {
    case Activation::kNone:
      return x;
    case Activation::kGeluErf:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::kGeluTanh:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case Activation::kRelu:
      return x > 0 ? x : 0;
    case Activation::kTanh:
      return std::tanh(x);
    case Activation::kSilu:
      return x / (1.0 + std::exp(-x));
  }
  return x;
}

class KernelsTest : public ::testing::TestWithParam<Isa> {
 protected:
  const KernelTable& k = kernels_for(GetParam());
};

TEST_P(KernelsTest, ReportsItsIsa) { EXPECT_EQ(k.isa, GetParam()); }

TEST_P(KernelsTest, BiasActivationMatchesDefinition) {
  for (Activation act : {Activation::kNone, Activation::kGeluErf, Activation::kGeluTanh,
                         Activation::kRelu, Activation::kTanh, Activation::kSilu}) {
    for (std::int64_t cols : {1, 7, 16, 37, 64, 100}) {
      const std::int64_t rows = 3, ld = cols + 5;
      auto y = random_vector(static_cast<std::size_t>(rows * ld), 3.0f, 1);
      y.push_back(123.0f);  // sentinel past the last row
      auto bias = random_vector(static_cast<std::size_t>(cols), 1.0f, 2);
      auto orig = y;
      k.bias_activation(y.data(), rows, cols, ld, bias.data(), act);
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t c = 0; c < ld; ++c) {
          const std::size_t i = static_cast<std::size_t>(r * ld + c);
          if (c >= cols) {
            ASSERT_EQ(y[i], orig[i]) << "wrote outside the row";
            continue;
          }
          double want = reference_activation(double(orig[i]) + bias[c], act);
          ASSERT_NEAR(y[i], want, 2e-6 * (1 + std::fabs(want)))
              << "act " << int(act) << " cols " << cols << " x " << orig[i] + bias[c];
        }
      }
      ASSERT_EQ(y.back(), 123.0f);
    }
  }
}

TEST_P(KernelsTest, ActivationsOnExtremeInputs) {
  std::vector<float> x = {-100.f, -20.f, -9.5f, -1e-6f, 0.f,    1e-6f,
                          9.5f,   20.f,  100.f, 1e-30f, -88.5f, 88.5f};
  for (Activation act :
       {Activation::kGeluErf, Activation::kGeluTanh, Activation::kTanh, Activation::kSilu}) {
    auto y = x;
    k.bias_activation(y.data(), 1, static_cast<std::int64_t>(y.size()),
                      static_cast<std::int64_t>(y.size()), nullptr, act);
    for (std::size_t i = 0; i < x.size(); ++i) {
      double want = reference_activation(x[i], act);
      ASSERT_TRUE(std::isfinite(y[i])) << x[i];
      ASSERT_NEAR(y[i], want, 2e-6 * (1 + std::fabs(want))) << "act " << int(act) << " x " << x[i];
    }
  }
}

TEST_P(KernelsTest, ResidualLayerNormMatchesDefinition) {
  for (std::int64_t cols : {1, 5, 16, 33, 384, 770}) {
    const std::int64_t rows = 4;
    auto x = random_vector(static_cast<std::size_t>(rows * cols), 2.0f, 3);
    for (auto& v : x) v += 50.0f;  // a large mean: the variance must not cancel
    auto y = random_vector(static_cast<std::size_t>(rows * cols), 1.0f, 4);
    auto bias = random_vector(static_cast<std::size_t>(cols), 0.5f, 5);
    auto gamma = random_vector(static_cast<std::size_t>(cols), 1.0f, 6);
    auto beta = random_vector(static_cast<std::size_t>(cols), 1.0f, 7);
    for (bool with_y : {true, false}) {
      auto out = x;
      // With a residual, the bf16 copy is asked for too: it must be the f32 result rounded.
      std::vector<Bf16> out16(static_cast<std::size_t>(rows * cols), 0xABCD);
      k.residual_layer_norm(out.data(), with_y ? y.data() : nullptr, with_y ? bias.data() : nullptr,
                            rows, cols, gamma.data(), beta.data(), 1e-12f,
                            with_y ? out16.data() : nullptr);
      if (with_y) {
        std::vector<Bf16> rounded(out16.size());
        k.to_bf16(out.data(), rounded.data(), static_cast<std::int64_t>(out.size()));
        ASSERT_EQ(out16, rounded) << "cols " << cols;
      } else {
        ASSERT_TRUE(std::all_of(out16.begin(), out16.end(), [](Bf16 b) { return b == 0xABCD; }));
      }
      for (std::int64_t r = 0; r < rows; ++r) {
        std::vector<double> t(static_cast<std::size_t>(cols));
        double mean = 0;
        for (std::int64_t c = 0; c < cols; ++c) {
          std::size_t i = static_cast<std::size_t>(r * cols + c);
          t[c] = double(x[i]) + (with_y ? double(y[i]) + bias[c] : 0.0);
          mean += t[c];
        }
        mean /= double(cols);
        double var = 0;
        for (double v : t) var += (v - mean) * (v - mean);
        var /= double(cols);
        for (std::int64_t c = 0; c < cols; ++c) {
          double want = (t[c] - mean) / std::sqrt(var + 1e-12) * gamma[c] + beta[c];
          if (cols == 1) want = beta[c];
          ASSERT_NEAR(out[static_cast<std::size_t>(r * cols + c)], want,
                      2e-5 * (1 + std::fabs(want)))
              << "cols " << cols << " r " << r << " c " << c;
        }
      }
    }
  }
}

// With the residual in bf16, the kernel must compute exactly what the f32 kernel computes on
// the same residual widened back to f32 (checked above against the definition).
TEST_P(KernelsTest, Bf16ResidualLayerNormIsTheF32OneOnWidenedValues) {
  for (std::int64_t cols : {1, 7, 16, 33, 384, 768}) {
    const std::int64_t rows = 3;
    const auto x = random_vector(static_cast<std::size_t>(rows * cols), 2.0f, 11);
    const auto y = random_vector(static_cast<std::size_t>(rows * cols), 3.0f, 12);
    const auto gamma = random_vector(static_cast<std::size_t>(cols), 1.0f, 13);
    const auto beta = random_vector(static_cast<std::size_t>(cols), 1.0f, 14);
    std::vector<Bf16> y16(y.size());
    k.to_bf16(y.data(), y16.data(), static_cast<std::int64_t>(y.size()));
    std::vector<float> widened(y.size());
    for (std::size_t i = 0; i < y.size(); ++i)
      widened[i] = std::bit_cast<float>(static_cast<std::uint32_t>(y16[i]) << 16);
    auto want = x, got = x;
    std::vector<Bf16> want16(x.size()), got16(x.size());
    k.residual_layer_norm(want.data(), widened.data(), nullptr, rows, cols, gamma.data(),
                          beta.data(), 1e-12f, want16.data());
    k.residual_bf16_layer_norm(got.data(), y16.data(), rows, cols, gamma.data(), beta.data(),
                               1e-12f, got16.data());
    ASSERT_EQ(got, want) << "cols " << cols;
    ASSERT_EQ(got16, want16) << "cols " << cols;
  }
}

TEST_P(KernelsTest, SoftmaxMatchesDefinition) {
  for (std::int64_t cols : {1, 3, 16, 31, 128, 300}) {
    const std::int64_t rows = 5, ld = cols + 3;
    auto s = random_vector(static_cast<std::size_t>(rows * ld), 4.0f, 8);
    auto orig = s;
    const float scale = 0.125f;
    k.softmax(s.data(), rows, cols, ld, scale);
    for (std::int64_t r = 0; r < rows; ++r) {
      double mx = -1e300, total = 0;
      for (std::int64_t c = 0; c < cols; ++c) mx = std::max(mx, double(orig[r * ld + c]) * scale);
      for (std::int64_t c = 0; c < cols; ++c)
        total += std::exp(double(orig[r * ld + c]) * scale - mx);
      for (std::int64_t c = 0; c < cols; ++c) {
        double want = std::exp(double(orig[r * ld + c]) * scale - mx) / total;
        ASSERT_NEAR(s[r * ld + c], want, 1e-6 * (1 + want)) << "cols " << cols;
      }
    }
  }
}

TEST_P(KernelsTest, EmbeddingSumGathersRows) {
  const std::int64_t cols = 21, vocab = 10, positions = 6;
  auto word = random_vector(vocab * cols, 1.0f, 9);
  auto pos = random_vector(positions * cols, 1.0f, 10);
  auto type = random_vector(2 * cols, 1.0f, 11);
  std::vector<std::int32_t> ids = {3, 9, 0, 3}, pids = {0, 1, 2, 5}, tids = {0, 0, 1, 1};
  std::vector<float> out(ids.size() * cols);
  for (bool with_type : {true, false}) {
    k.embedding_sum(out.data(), 4, cols, word.data(), ids.data(), pos.data(), pids.data(),
                    with_type ? type.data() : nullptr, tids.data());
    for (std::size_t t = 0; t < ids.size(); ++t) {
      for (std::int64_t c = 0; c < cols; ++c) {
        float want = word[ids[t] * cols + c] + pos[pids[t] * cols + c] +
                     (with_type ? type[tids[t] * cols + c] : 0.f);
        ASSERT_FLOAT_EQ(out[t * cols + c], want);
      }
    }
  }
}

// The nearest bf16 by distance (ties to the even pattern), found without the kernel's bit trick:
// truncation and the next value up in magnitude are the two candidates.
std::uint16_t reference_bf16(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if (std::isnan(x)) return 0;  // compared separately: any NaN pattern
  const std::uint16_t low = static_cast<std::uint16_t>(bits >> 16);
  const std::uint16_t high = static_cast<std::uint16_t>(low + 1);  // next in magnitude
  auto value = [](std::uint16_t b) {
    // Past the largest finite value, infinity stands for 2^128 (IEEE rounding's overflow rule).
    if ((b & 0x7FFF) == 0x7F80) return (b & 0x8000 ? -1.0 : 1.0) * std::ldexp(1.0, 128);
    const std::uint32_t wide = static_cast<std::uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &wide, 4);
    return static_cast<double>(f);
  };
  if (std::isinf(x) || value(low) == static_cast<double>(x)) return low;
  const double d_low = std::fabs(value(low) - x), d_high = std::fabs(value(high) - x);
  if (d_low != d_high) return d_low < d_high ? low : high;
  return (low & 1) == 0 ? low : high;
}

TEST_P(KernelsTest, ToBf16RoundsToNearestEven) {
  std::vector<float> x = random_vector(1000, 3.0f, 9);
  for (std::uint32_t bits : {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7F7FFFFFu,
                             0x00000001u, 0x3F808000u, 0x3F818000u, 0x3F80FFFFu, 0xBF808001u,
                             0x7F7F8000u, 0x7FC00001u, 0xFF800001u, 0x7F800001u}) {
    float f;
    std::memcpy(&f, &bits, 4);
    x.push_back(f);
  }
  for (std::size_t n :
       {std::size_t{1}, std::size_t{5}, std::size_t{16}, std::size_t{17}, x.size()}) {
    std::vector<Bf16> y(n + 1, 0xABCD);
    k.to_bf16(x.data() + (x.size() - n), y.data(), static_cast<std::int64_t>(n));
    for (std::size_t i = 0; i < n; ++i) {
      const float v = x[x.size() - n + i];
      if (std::isnan(v)) {
        EXPECT_EQ(y[i] & 0x7F80, 0x7F80) << i;  // still a NaN: exponent all ones...
        EXPECT_NE(y[i] & 0x7F, 0) << i;         // ...and a non-zero mantissa
        EXPECT_EQ(y[i] & 0x8000, (std::bit_cast<std::uint32_t>(v) >> 16) & 0x8000) << i;
        continue;
      }
      EXPECT_EQ(y[i], reference_bf16(v)) << "value " << v << " n " << n;
    }
    EXPECT_EQ(y[n], 0xABCD) << "wrote past n = " << n;
  }
}

// The fused row kernel is the f32 softmax rounded once: the same bits as softmax then to_bf16,
// zeros in the padding, nothing written past it.
TEST_P(KernelsTest, SoftmaxToBf16IsSoftmaxThenRounding) {
  for (std::int64_t cols : {1, 3, 16, 31, 128, 300}) {
    for (std::int64_t pad : {0, 1, 13}) {
      const std::int64_t padded = cols + pad;
      auto s = random_vector(static_cast<std::size_t>(cols), 6.0f, 10);
      auto want_f32 = s;
      k.softmax(want_f32.data(), 1, cols, cols, 0.125f);
      std::vector<Bf16> want(static_cast<std::size_t>(padded), 0);
      k.to_bf16(want_f32.data(), want.data(), cols);
      std::vector<Bf16> got(static_cast<std::size_t>(padded + 1), 0xABCD);
      k.softmax_to_bf16(s.data(), got.data(), cols, padded, 0.125f);
      EXPECT_EQ(got[static_cast<std::size_t>(padded)], 0xABCD) << "wrote past the padding";
      got.pop_back();
      ASSERT_EQ(got, want) << "cols " << cols << " padded " << padded;
    }
  }
}

// Symmetric per-row quantization from its definition: scale = max|x| / 127, nearest even.
TEST_P(KernelsTest, QuantizeRowsMatchesDefinition) {
  for (std::int64_t cols : {1, 5, 16, 33, 384, 770}) {
    const std::int64_t rows = 4;
    auto x = random_vector(static_cast<std::size_t>(rows * cols), 3.0f, 21);
    std::fill(x.begin() + 2 * cols, x.begin() + 3 * cols, 0.0f);  // an all-zero row
    x[static_cast<std::size_t>(3 * cols)] = 0.5f * 127.0f;  // exact ties (x / scale = k + 0.5)
    x[static_cast<std::size_t>(3 * cols + cols / 2)] = -2.5f;
    std::vector<Bf16> x16(x.size());
    k.to_bf16(x.data(), x16.data(), static_cast<std::int64_t>(x.size()));
    std::vector<float> widened(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      widened[i] = std::bit_cast<float>(static_cast<std::uint32_t>(x16[i]) << 16);
    std::vector<std::int8_t> q(x.size()), q16(x.size()), want_q(x.size());
    std::vector<float> scales(rows), scales16(rows);
    k.quantize_rows(x.data(), rows, cols, nullptr, q.data(), scales.data());
    k.quantize_bf16_rows(x16.data(), rows, cols, nullptr, q16.data(), scales16.data());
    std::vector<float> want_scales(rows);
    k.quantize_rows(widened.data(), rows, cols, nullptr, want_q.data(), want_scales.data());
    ASSERT_EQ(q16, want_q) << "bf16 rows are the f32 ones on widened values";
    ASSERT_EQ(scales16, want_scales);
    // A column multiplier is the same as multiplying the columns first.
    auto mul = random_vector(static_cast<std::size_t>(cols), 2.0f, 22);
    auto premultiplied = x;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) premultiplied[r * cols + c] *= mul[c];
    std::vector<std::int8_t> qm(x.size()), want_qm(x.size());
    std::vector<float> sm(rows), want_sm(rows);
    k.quantize_rows(x.data(), rows, cols, mul.data(), qm.data(), sm.data());
    k.quantize_rows(premultiplied.data(), rows, cols, nullptr, want_qm.data(), want_sm.data());
    ASSERT_EQ(qm, want_qm);
    ASSERT_EQ(sm, want_sm);
    for (std::int64_t r = 0; r < rows; ++r) {
      double amax = 0;
      for (std::int64_t c = 0; c < cols; ++c)
        amax = std::max(amax, std::fabs(double(x[r * cols + c])));
      ASSERT_NEAR(scales[r], amax / 127.0, 1e-7 * amax) << "cols " << cols << " r " << r;
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::size_t i = static_cast<std::size_t>(r * cols + c);
        // x · (127 / amax) in f32, as the kernel computes it, then nearest even.
        const float t = amax == 0 ? 0.0f : x[i] * (127.0f / static_cast<float>(amax));
        ASSERT_EQ(int(q[i]), int(std::nearbyint(t))) << "cols " << cols << " r " << r << " c " << c;
      }
    }
  }
}

// The epilogue of an int8 GEMM from its definition, into each output type.
// Widths cover every step of the row's activation pass: blocks of four vectors, single vectors
// and a partial one, at every vector width.
TEST_P(KernelsTest, Int8EpilogueMatchesDefinition) {
  for (std::int64_t cols : {1, 7, 16, 37, 100, 200}) {
    const std::int64_t rows = 3;
    std::vector<std::int32_t> acc(static_cast<std::size_t>(rows * cols));
    std::mt19937 rng(5);
    for (auto& a : acc) a = static_cast<std::int32_t>(rng() % 200001) - 100000;
    auto rs = random_vector(static_cast<std::size_t>(rows), 1e-4f, 6);
    auto cs = random_vector(static_cast<std::size_t>(cols), 1e-2f, 7);
    auto bias = random_vector(static_cast<std::size_t>(cols), 1.0f, 8);
    for (Activation act : {Activation::kNone, Activation::kGeluErf, Activation::kGeluTanh,
                           Activation::kRelu, Activation::kTanh, Activation::kSilu}) {
      std::vector<float> want(acc.size());
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
          want[r * cols + c] = static_cast<float>(
              reference_activation(double(acc[r * cols + c]) * rs[r] * cs[c] + bias[c], act));
      std::vector<float> y(acc.size());
      std::vector<Bf16> y16(acc.size());
      std::vector<std::int8_t> y8(acc.size());
      std::vector<float> y8s(rows);
      auto scratch = acc;
      k.int8_epilogue(scratch.data(), rows, cols, rs.data(), cs.data(), bias.data(), act,
                      Int8Output{Int8Output::kF32, y.data()});
      scratch = acc;
      k.int8_epilogue(scratch.data(), rows, cols, rs.data(), cs.data(), bias.data(), act,
                      Int8Output{Int8Output::kBf16, nullptr, y16.data()});
      scratch = acc;
      k.int8_epilogue(scratch.data(), rows, cols, rs.data(), cs.data(), bias.data(), act,
                      Int8Output{Int8Output::kS8, nullptr, nullptr, y8.data(), y8s.data()});
      std::vector<Bf16> want16(acc.size());
      k.to_bf16(y.data(), want16.data(), static_cast<std::int64_t>(y.size()));
      std::vector<std::int8_t> want8(acc.size());
      std::vector<float> want8s(rows);
      k.quantize_rows(y.data(), rows, cols, nullptr, want8.data(), want8s.data());
      for (std::size_t i = 0; i < y.size(); ++i)
        ASSERT_NEAR(y[i], want[i], 2e-6 * (1 + std::fabs(want[i])))
            << "cols " << cols << " i " << i;
      ASSERT_EQ(y16, want16);
      ASSERT_EQ(y8, want8);
      ASSERT_EQ(y8s, want8s);
      // s8 for a smoothed next GEMM: each column multiplied before the row is quantized.
      const auto mul = random_vector(static_cast<std::size_t>(cols), 1.0f, 9);
      scratch = acc;
      k.int8_epilogue(
          scratch.data(), rows, cols, rs.data(), cs.data(), bias.data(), act,
          Int8Output{Int8Output::kS8, nullptr, nullptr, y8.data(), y8s.data(), mul.data()});
      k.quantize_rows(y.data(), rows, cols, mul.data(), want8.data(), want8s.data());
      ASSERT_EQ(y8, want8) << "smoothed, cols " << cols;
      ASSERT_EQ(y8s, want8s) << "smoothed, cols " << cols;
    }
  }
}

TEST_P(KernelsTest, LayerNormS8IsLayerNormThenQuantize) {
  for (std::int64_t cols : {1, 7, 33, 768}) {
    const std::int64_t rows = 3;
    const auto x = random_vector(static_cast<std::size_t>(rows * cols), 2.0f, 31);
    const auto y = random_vector(static_cast<std::size_t>(rows * cols), 3.0f, 32);
    const auto gamma = random_vector(static_cast<std::size_t>(cols), 1.0f, 33);
    const auto beta = random_vector(static_cast<std::size_t>(cols), 1.0f, 34);
    auto want = x, got = x;
    k.residual_layer_norm(want.data(), y.data(), nullptr, rows, cols, gamma.data(), beta.data(),
                          1e-12f, nullptr);
    std::vector<std::int8_t> want_q(x.size()), got_q(x.size());
    std::vector<float> want_s(rows), got_s(rows);
    const auto mul = random_vector(static_cast<std::size_t>(cols), 1.0f, 35);
    k.quantize_rows(want.data(), rows, cols, mul.data(), want_q.data(), want_s.data());
    k.residual_layer_norm_s8(got.data(), y.data(), rows, cols, gamma.data(), beta.data(), 1e-12f,
                             mul.data(), got_q.data(), got_s.data());
    ASSERT_EQ(got, want);
    ASSERT_EQ(got_q, want_q);
    ASSERT_EQ(got_s, want_s);
  }
}

INSTANTIATE_TEST_SUITE_P(AllSupportedIsas, KernelsTest, ::testing::ValuesIn(supported_isas()),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace mcinfer::cpu
