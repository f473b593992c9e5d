#include "backends/cpu/gemm.h"

#include <gtest/gtest.h>

#include "backends/cpu/gemm_avx2.h"
#include "core/aligned_buffer.h"

#include "core/error.h"
#include "support/cpu_features.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>
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
  // Below AVX-512 our AVX2 GEMM runs f32 and compiles nothing.
  EXPECT_EQ(runner.compiled_kernels() > 0u, testing::cpu_features().avx512);
}

// A runner outlives the weights it has run: weights freed and new ones of another shape made
// (often at the same address) must get kernels of their own, not the old weights' kernels.
TEST(Gemm, NewWeightsNeverReuseAFreedWeightsKernels) {
  GemmEngine engine;
  GemmRunner runner(engine, 1);
  const std::int64_t rows = 4;
  const std::int64_t padded = GemmRunner::round_rows(rows);
  auto x = random_vector(static_cast<std::size_t>(padded * 96), 7);
  for (int round = 0; round < 20; ++round) {
    const std::int64_t in = round % 2 ? 96 : 32, out = round % 2 ? 40 : 72;
    auto w = random_vector(static_cast<std::size_t>(in * out), 100 + round);
    std::vector<float> y(static_cast<std::size_t>(padded * out));
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
  EXPECT_EQ(runner.compiled_kernels(), testing::cpu_features().avx512 ? 1u : 0u);
}

// bf16 layers: weights (from f32 or from bf16 bits) and inputs are rounded to bf16, products
// accumulate in f32. Against a double reference over the same rounded values, the f32 output
// differs by accumulation rounding only; the bf16 output by one more bf16 rounding (2^-8).
TEST(Gemm, Bf16LinearMatchesReferenceOnRoundedValues) {
  NEED_BF16();
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

// The emulation (our AVX2 bf16 GEMM, gemm_avx2.h) against the native kernels on a CPU that has
// both. Bit for bit they can differ only in the order of the f32 sums: a vdpbf16ps adds its two
// products in its own order, AMX's tdpbf16ps sums a tile's pairs in an order Intel leaves open,
// and the library splits the inputs into blocks; the products themselves are exact in both. So
// each f32 output is within the summation-order bound of the other's, and each side's bf16
// output is, bit for bit, its own f32 output rounded to nearest even after the activation (the
// same rounding at the same point), so the two bf16 outputs are at most one step apart.
TEST(Gemm, Bf16EmulationMatchesTheNativeKernels) {
  // The one bf16 test that needs the hardware: the emulation itself runs everywhere else.
  NEED_CPU(native_bf16(),
           "native bf16 (avx512_bf16 or AMX-BF16) to compare the AVX2 emulation against; the "
           "emulation alone is tested on every AVX2 CPU (Avx2Gemm.Bf16*)");
  GemmEngine engine;
  GemmRunner runner(engine, 2);
  const KernelTable& k = avx2_kernels();
  auto round = [&](const std::vector<float>& v) {
    std::vector<Bf16> b(v.size());
    k.to_bf16(v.data(), b.data(), static_cast<std::int64_t>(v.size()));
    return b;
  };
  auto widen = [](Bf16 b) { return double(std::bit_cast<float>(std::uint32_t{b} << 16)); };
  for (auto [in, out] : {std::pair<std::int64_t, std::int64_t>{64, 48}, {37, 100}, {384, 1536}}) {
    const std::vector<Bf16> w16 = round(random_vector(static_cast<std::size_t>(in * out), 21));
    const auto b = random_vector(static_cast<std::size_t>(out), 22);
    PackedLinear native(engine, w16.data(), DType::kBf16, b.data(), out, in, DType::kBf16);
    AlignedBuffer<Bf16> panels(static_cast<std::size_t>(avx2::packed_bf16_size(out, in)));
    avx2::pack_bf16(w16.data(), out, in, in, panels.data());
    for (std::int64_t rows : {1, 17, 100}) {
      const std::int64_t padded = GemmRunner::round_rows(rows);
      const auto x16 = round(random_vector(static_cast<std::size_t>(padded * in), 23));
      const auto n = static_cast<std::size_t>(padded * out);
      std::vector<float> y(n), ours(n),
          scratch(static_cast<std::size_t>(avx2::bf16_scratch_size(rows, in)));
      std::vector<Bf16> y16(n), ours16(n);
      runner.linear(native, x16.data(), rows, y.data(), DType::kF32, Activation::kGeluErf);
      runner.linear(native, x16.data(), rows, y16.data(), DType::kBf16, Activation::kGeluErf);
      avx2::gemm_bf16(panels.data(), x16.data(), in, rows, in, out, b.data(), Activation::kGeluErf,
                      k, {ours.data(), nullptr, out}, scratch.data(), 1);
      avx2::gemm_bf16(panels.data(), x16.data(), in, rows, in, out, b.data(), Activation::kGeluErf,
                      k, {nullptr, ours16.data(), out}, scratch.data(), 1);
      const std::vector<Bf16> y_rounded = round(y), ours_rounded = round(ours);
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t o = 0; o < out; ++o) {
          double magnitude = std::fabs(b[o]);
          for (std::int64_t i = 0; i < in; ++i)
            magnitude += std::fabs(widen(x16[r * in + i]) * widen(w16[o * in + i]));
          // Both sums within in · 2^-24 · Σ|terms| of the exact one; the library's GELU and ours
          // differ by their approximations (~1e-6).
          const std::size_t at = static_cast<std::size_t>(r * out + o);
          ASSERT_NEAR(y[at], ours[at], 2 * (in + 1) * 0x1p-24 * magnitude + 4e-6)
              << in << "x" << out << " rows " << rows << " r " << r << " o " << o;
          ASSERT_EQ(ours16[at], ours_rounded[at]) << "ours, at " << at;
          // The library may run another kernel (another blocking of the sums) for a bf16 output
          // than for an f32 one: one bf16 step apart at most, as are the two sides'.
          ASSERT_LE(std::abs(int{y16[at]} - int{y_rounded[at]}), 1) << "native, at " << at;
          ASSERT_LE(std::abs(int{y16[at]} - int{ours16[at]}), 1) << "at " << at;
        }
    }
  }
}

// Symmetric per-row quantization written from its definition, for the s8 tests: x · (127 / amax)
// computed in f32 (as the library's and our kernels do, so that ties fall the same way), nearest
// even.
void reference_quantize(const float* x, std::int64_t cols, std::int8_t* q, double* scale) {
  float amax = 0;
  for (std::int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(x[c]));
  *scale = double(amax) / 127.0;
  for (std::int64_t c = 0; c < cols; ++c)
    q[c] = amax == 0 ? 0 : static_cast<std::int8_t>(std::nearbyint(x[c] * (127.0f / amax)));
}

// int8 runs on every AVX2 CPU: natively with VNNI, else on our kernels.
TEST(Gemm, Int8RunsWhereverAvx2Does) {
  const auto& cpu = ::mcinfer::testing::cpu_features();
  if (cpu.avx2) {
    EXPECT_FALSE(int8_isa().empty());
  }
  if (cpu.native_int8()) {
    EXPECT_EQ(int8_isa(), native_int8_isa());
  } else if (cpu.avx2) {
    EXPECT_EQ(int8_isa(), "avx2");
  }
}

// The worst case for 16-bit pair sums: inputs at ±127 (255 or 1 once shifted to u8, as the
// library does) against 8-bit weights at ±127 in runs of one sign, so that many pairs of products
// reach 2·255·127 = 64,770; the s32 products must equal the exact integer sums. Through oneDNN
// 2.6 without VNNI (vpmaddubsw, saturating at 32,767) every output here is wrong (Zen 3).
TEST(Gemm, S8ProductsAreExactAtSaturatingInputs) {
  NEED_CPU(int8(), "AVX2 (int8 GEMMs)");
  GemmEngine engine;
  GemmRunner runner(engine, 1);
  for (auto [in, out] : {std::pair<std::int64_t, std::int64_t>{64, 16}, {768, 96}, {3072, 48}}) {
    std::vector<float> w(static_cast<std::size_t>(in * out));
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = (i / 5) % 3 == 0 ? -1.0f : 1.0f;
    PackedLinear linear(engine, w.data(), DType::kF32, nullptr, out, in, DType::kS8);
    const std::int64_t rows = 50, padded = GemmRunner::round_rows(rows);
    std::vector<std::int8_t> x(static_cast<std::size_t>(padded * in));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = (i / 7) % 4 == 0 ? -127 : 127;
    std::vector<std::int32_t> y(static_cast<std::size_t>(padded * out));
    runner.library_s8(linear, x.data(), rows, y.data());
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t o = 0; o < out; ++o) {
        std::int64_t dot = 0;
        for (std::int64_t i = 0; i < in; ++i)
          dot += std::int64_t{x[r * in + i]} * (w[o * in + i] < 0 ? -127 : 127);
        ASSERT_EQ(y[r * out + o], dot) << in << "x" << out << " r " << r << " o " << o;
      }
  }
}

// s8 weights and inputs: exact integer products scaled back, against the same quantization done
// independently in double; every output type, row counts across the block size, 1 and 2 threads.
TEST(Gemm, S8LinearMatchesIntegerReference) {
  NEED_CPU(int8(), "AVX2 (int8 GEMMs)");
  GemmEngine engine;
  const KernelTable& k = kernels_for(best_isa());
  for (int threads : {1, 2}) {
    GemmRunner runner(engine, threads);
    for (auto [in, out] : {std::pair<std::int64_t, std::int64_t>{64, 48}, {384, 1536}}) {
      auto w = random_vector(static_cast<std::size_t>(in * out), 1);
      auto b = random_vector(static_cast<std::size_t>(out), 2);
      PackedLinear linear(engine, w.data(), DType::kF32, b.data(), out, in, DType::kS8);
      PackedLinear f32(engine, w.data(), b.data(), out, in);
      // A quarter of the f32 packing, plus the scales, on a model's shape. The 64 x 48 matrix is
      // for correctness only: with avx512 VNNI (not AMX) oneDNN pads its 48 output channels to
      // a 64-wide block (5,248 bytes, 32% of the f32 packing, on AMD Zen 4).
      if (out % 64 == 0) {
        EXPECT_LE(linear.packed_bytes(), f32.packed_bytes() * 30 / 100);
      }
      std::vector<std::int8_t> wq(static_cast<std::size_t>(in * out));
      std::vector<double> ws(static_cast<std::size_t>(out));
      for (std::int64_t o = 0; o < out; ++o) {
        reference_quantize(w.data() + o * in, in, wq.data() + o * in, &ws[o]);
        ASSERT_NEAR(linear.weight_scales()[o], ws[o], 1e-6 * ws[o]);
      }
      for (std::int64_t rows : {1, 17, 64 * threads + 3, 200}) {
        const std::int64_t padded = GemmRunner::round_rows(rows);
        auto x = random_vector(static_cast<std::size_t>(padded * in), 3);
        std::vector<std::int8_t> xq(x.size());
        std::vector<float> xs(static_cast<std::size_t>(padded));
        k.quantize_rows(x.data(), padded, in, nullptr, xq.data(), xs.data());
        std::vector<float> y(static_cast<std::size_t>(padded * out));
        std::vector<Bf16> y16(y.size());
        std::vector<std::int8_t> y8(y.size());
        std::vector<float> y8_scales(static_cast<std::size_t>(padded));
        Int8Output as_f32{Int8Output::kF32, y.data()};
        Int8Output as_bf16{Int8Output::kBf16, nullptr, y16.data()};
        Int8Output as_s8{Int8Output::kS8, nullptr, nullptr, y8.data(), y8_scales.data()};
        runner.linear_s8(linear, xq.data(), xs.data(), rows, as_f32, Activation::kGeluErf, k);
        runner.linear_s8(linear, xq.data(), xs.data(), rows, as_bf16, Activation::kGeluErf, k);
        runner.linear_s8(linear, xq.data(), xs.data(), rows, as_s8, Activation::kGeluErf, k);
        std::vector<std::int8_t> rq(static_cast<std::size_t>(in));
        for (std::int64_t r = 0; r < rows; ++r) {
          double rs;
          reference_quantize(x.data() + r * in, in, rq.data(), &rs);
          ASSERT_TRUE(std::equal(rq.begin(), rq.end(), xq.begin() + r * in)) << "row " << r;
          std::vector<float> want(static_cast<std::size_t>(out));
          for (std::int64_t o = 0; o < out; ++o) {
            std::int64_t dot = 0;
            for (std::int64_t i = 0; i < in; ++i) dot += std::int64_t{rq[i]} * wq[o * in + i];
            double v = double(dot) * rs * ws[o] + b[o];
            v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
            want[o] = static_cast<float>(v);
            ASSERT_NEAR(y[r * out + o], v, 1e-5 * (1 + std::fabs(v)))
                << in << "x" << out << " rows " << rows << " r " << r << " o " << o;
            ASSERT_NEAR(std::bit_cast<float>(std::uint32_t{y16[r * out + o]} << 16), v,
                        5e-3 * (1 + std::fabs(v)));
          }
          std::vector<std::int8_t> wq8(static_cast<std::size_t>(out));
          double s8_scale;
          reference_quantize(want.data(), out, wq8.data(), &s8_scale);
          ASSERT_NEAR(y8_scales[r], s8_scale, 1e-5 * s8_scale);
          for (std::int64_t o = 0; o < out; ++o)  // at most one step off where rounding ties
            ASSERT_LE(std::abs(int(y8[r * out + o]) - int(wq8[o])), 1) << "r " << r << " o " << o;
        }
        // And close to the f32 layer itself: per-channel and per-row int8 keeps ~1% error.
        std::vector<float> exact(y.size());
        runner.linear(f32, x.data(), rows, exact.data(), Activation::kGeluErf);
        double err = 0, norm = 0;
        for (std::int64_t i = 0; i < rows * out; ++i) {
          err += (double(y[i]) - exact[i]) * (double(y[i]) - exact[i]);
          norm += double(exact[i]) * exact[i];
        }
        EXPECT_LT(std::sqrt(err / norm), 0.03) << in << "x" << out << " rows " << rows;
      }
    }
  }
}

// Input smoothing: the weights' columns are multiplied by s = sqrt(input_max / column max) before
// they are quantized, inputs by 1 / s; the products equal an integer reference built that way,
// and on inputs with a few outlier channels (as a LayerNorm's output has) the error drops.
TEST(Gemm, S8SmoothingMatchesItsDefinitionAndHelpsOutlierChannels) {
  NEED_CPU(int8(), "AVX2 (int8 GEMMs)");
  GemmEngine engine;
  GemmRunner runner(engine, 1);
  const KernelTable& k = kernels_for(best_isa());
  const std::int64_t in = 96, out = 64, rows = 40;
  auto w = random_vector(static_cast<std::size_t>(in * out), 11);
  auto x = random_vector(static_cast<std::size_t>(rows * in), 12);
  for (std::int64_t r = 0; r < rows; ++r) {  // channels 5 and 70: 60x the others
    x[r * in + 5] *= 60.0f;
    x[r * in + 70] *= -60.0f;
  }
  std::vector<float> input_max(static_cast<std::size_t>(in), 0.0f);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < in; ++i)
      input_max[i] = std::max(input_max[i], std::fabs(x[r * in + i]));
  PackedLinear smoothed(engine, w.data(), DType::kF32, nullptr, out, in, input_max.data());
  PackedLinear plain(engine, w.data(), DType::kF32, nullptr, out, in, DType::kS8);
  PackedLinear exact(engine, w.data(), nullptr, out, in);
  ASSERT_NE(smoothed.input_multiplier(), nullptr);
  EXPECT_EQ(plain.input_multiplier(), nullptr);
  // The reference: s from its definition, weights and inputs smoothed, then quantized.
  std::vector<float> s(static_cast<std::size_t>(in));
  std::vector<float> ws(w.size());
  for (std::int64_t i = 0; i < in; ++i) {
    float column = 0;
    for (std::int64_t o = 0; o < out; ++o) column = std::max(column, std::fabs(w[o * in + i]));
    s[i] = std::max(1.0f, std::sqrt(input_max[i] / column));
    ASSERT_NEAR(smoothed.input_multiplier()[i], 1.0 / s[i], 1e-6 / s[i]);
    for (std::int64_t o = 0; o < out; ++o) ws[o * in + i] = w[o * in + i] * s[i];
  }
  std::vector<std::int8_t> wq(ws.size()), xq(x.size());
  std::vector<double> w_scale(static_cast<std::size_t>(out)),
      x_scale(static_cast<std::size_t>(rows));
  for (std::int64_t o = 0; o < out; ++o)
    reference_quantize(ws.data() + o * in, in, wq.data() + o * in, &w_scale[o]);
  std::vector<float> xs(x.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < in; ++i)
      xs[r * in + i] = x[r * in + i] * smoothed.input_multiplier()[i];
  for (std::int64_t r = 0; r < rows; ++r)
    reference_quantize(xs.data() + r * in, in, xq.data() + r * in, &x_scale[r]);

  auto run = [&](const PackedLinear& l) {
    const std::int64_t padded = GemmRunner::round_rows(rows);
    std::vector<std::int8_t> q(static_cast<std::size_t>(padded * in));
    std::vector<float> scales(static_cast<std::size_t>(padded));
    std::vector<float> padded_x(static_cast<std::size_t>(padded * in), 0.0f);
    std::copy(x.begin(), x.end(), padded_x.begin());
    k.quantize_rows(padded_x.data(), padded, in, l.input_multiplier(), q.data(), scales.data());
    std::vector<float> y(static_cast<std::size_t>(padded * out));
    runner.linear_s8(l, q.data(), scales.data(), rows, Int8Output{Int8Output::kF32, y.data()},
                     Activation::kNone, k);
    return y;
  };
  const auto y = run(smoothed);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t o = 0; o < out; ++o) {
      std::int64_t dot = 0;
      for (std::int64_t i = 0; i < in; ++i) dot += std::int64_t{xq[r * in + i]} * wq[o * in + i];
      const double want = double(dot) * x_scale[r] * w_scale[o];
      ASSERT_NEAR(y[r * out + o], want, 1e-4 * (1 + std::fabs(want))) << "r " << r << " o " << o;
    }
  }
  std::vector<float> exact_y(static_cast<std::size_t>(GemmRunner::round_rows(rows) * out));
  std::vector<float> padded_x(static_cast<std::size_t>(GemmRunner::round_rows(rows) * in), 0.0f);
  std::copy(x.begin(), x.end(), padded_x.begin());
  runner.linear(exact, padded_x.data(), rows, exact_y.data(), Activation::kNone);
  auto error = [&](const std::vector<float>& got) {
    double e = 0, n = 0;
    for (std::int64_t i = 0; i < rows * out; ++i) {
      e += (double(got[i]) - exact_y[i]) * (double(got[i]) - exact_y[i]);
      n += double(exact_y[i]) * exact_y[i];
    }
    return std::sqrt(e / n);
  };
  EXPECT_LT(error(y), 0.6 * error(run(plain))) << error(y) << " vs " << error(run(plain));
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
  // Below AVX-512 and AVX2 (cpuid, not the library) the f32 kernel is the sgemm: rounded to 48s.
  const bool sgemm = !testing::cpu_features().avx512 && !testing::cpu_features().avx2;
  EXPECT_EQ(GemmRunner::round_rows(3), sgemm ? 48 : 3);
  EXPECT_EQ(GemmRunner::round_rows(17), sgemm ? 48 : 32);
  EXPECT_EQ(GemmRunner::round_rows(32), sgemm ? 48 : 32);
  EXPECT_EQ(GemmRunner::round_rows(49), sgemm ? 96 : 64);
}

// fp32 promises the same bytes whatever the batch composition (schedules, replica counts,
// resumes): a row's outputs must not depend on how many rows share its call. The shapes are
// MiniLM's four (the sgemm switches kernels at a few hundred rows for these). Every f32 path of
// this CPU: the best (the library's brgemm with AVX-512, else our AVX2 GEMM on 1 and 2 threads),
// and with our kernels capped to generic (the library alone: its sgemm below AVX-512).
class F32RowOutputs : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(F32RowOutputs, DoNotDependOnTheRowCount) {
  const auto [cap, threads] = GetParam();
  if (*cap != '\0') setenv("MCINFER_MAX_ISA", cap, 1);
  GemmEngine engine;
  GemmRunner runner(engine, threads);
  for (auto [in, out] :
       {std::pair<std::int64_t, std::int64_t>{384, 1152}, {384, 384}, {384, 1536}, {1536, 384}}) {
    auto w = random_vector(static_cast<std::size_t>(in * out), 4);
    auto b = random_vector(static_cast<std::size_t>(out), 5);
    PackedLinear linear(engine, w.data(), b.data(), out, in);
    const std::int64_t most = 1000;
    auto x = random_vector(static_cast<std::size_t>(GemmRunner::round_rows(most) * in), 6);
    std::vector<float> alone(static_cast<std::size_t>(GemmRunner::round_rows(most) * out));
    std::vector<float> y(alone.size());
    // Each of the first 5 rows on its own, then the rows in calls of many sizes.
    for (std::int64_t r = 0; r < 5; ++r) {
      runner.linear(linear, x.data() + r * in, 1, y.data(), Activation::kGeluErf);
      std::copy_n(y.begin(), out, alone.begin() + r * out);
    }
    for (std::int64_t rows : {5, 16, 17, 48, 100, 241, 300, 500, 1000}) {
      runner.linear(linear, x.data(), rows, y.data(), Activation::kGeluErf);
      for (std::int64_t i = 0; i < 5 * out; ++i)
        ASSERT_EQ(y[i], alone[i]) << in << "x" << out << ", " << rows << " rows, value " << i;
    }
  }
  unsetenv("MCINFER_MAX_ISA");
}

INSTANTIATE_TEST_SUITE_P(Gemm, F32RowOutputs,
                         ::testing::Values(std::make_tuple("", 1), std::make_tuple("", 2),
                                           std::make_tuple("generic", 1)),
                         [](const auto& info) {
                           return std::string(*std::get<0>(info.param) ? "generic" : "best") + "_" +
                                  std::to_string(std::get<1>(info.param)) + "_threads";
                         });

}  // namespace
}  // namespace mcinfer::cpu
