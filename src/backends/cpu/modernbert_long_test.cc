// One 8,192-token row through ModernBERT-base's layers (random weights; four of its 22: global,
// windowed, windowed, global) against transformers, and the memory the run took against what the
// plan promised for it.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "backends/cpu/encoder.h"
#include "core/json.h"
#include "support/cpu_features.h"
#include "support/paths.h"

namespace mcinfer::cpu {
namespace {

using model::ModelConfig;

constexpr int kThreads = 2;

// Cosine of a and b.
double cosine(std::span<const float> a, std::span<const float> b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

struct Agreement {
  double max_abs = 0;     // over every value compared
  double min_cosine = 1;  // over the rows and the mean
};

// The fixture's rows and mean (tools/gen_long_modernbert_reference.py) against the encoder's.
Agreement compare(const Encoder& encoder, const Json& ref, std::int64_t hidden) {
  Agreement a;
  auto take = [&](std::span<const float> got, const Json& want_json) {
    const std::vector<float> want = want_json.get<std::vector<float>>();
    EXPECT_EQ(want.size(), got.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      a.max_abs = std::max(a.max_abs, double(std::fabs(got[i] - want[i])));
    a.min_cosine = std::min(a.min_cosine, cosine(got, want));
  };
  const std::vector<std::int64_t> rows = ref["rows"].get<std::vector<std::int64_t>>();
  for (std::size_t r = 0; r < rows.size(); ++r)
    take(std::span(encoder.hidden() + rows[r] * hidden, static_cast<std::size_t>(hidden)),
         ref["hidden"][r]);
  std::vector<double> sum(static_cast<std::size_t>(hidden), 0.0);
  for (std::int64_t t = 0; t < encoder.tokens(); ++t)
    for (std::int64_t c = 0; c < hidden; ++c) sum[c] += encoder.hidden()[t * hidden + c];
  std::vector<float> mean(sum.size());
  for (std::size_t c = 0; c < sum.size(); ++c)
    mean[c] = static_cast<float>(sum[c] / double(encoder.tokens()));
  take(mean, ref["mean"]);
  return a;
}

class ModernBertLong : public ::testing::TestWithParam<ops::Precision> {};

// fp32 within 5e-6 of transformers (fp32, SDPA); bf16 by cosine, its products rounded to bf16
// through the layers. Either way the encoder's buffers stay within the plan's bound
// (Encoder::activation_bytes, which `inspect` prints and the scheduler sizes replicas by).
TEST_P(ModernBertLong, RowOf8192TokensMatchesTransformersWithinThePlannedMemory) {
  const ops::Precision precision = GetParam();
  if (precision == ops::Precision::kBf16) NEED_BF16();
  const Json ref = read_json_file(testing::fixture("long/modernbert_base_8192.json"));
  ModelConfig config = ModelConfig::shape(ref["shape"].get<std::string>(), 0);
  // The first layers of the shape: the depth adds time, not paths (22 layers took 131 s a
  // precision on a 2-core Zen 3; each kind of layer runs twice in four).
  config.num_layers = ref["layers"].get<std::int64_t>();
  config.modernbert->global.resize(static_cast<std::size_t>(config.num_layers));
  ASSERT_EQ(config.modernbert->global, (std::vector<bool>{true, false, false, true}));
  const std::int64_t length = ref["length"].get<std::int64_t>();
  ASSERT_EQ(length, config.max_position_embeddings);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(length));
  for (std::int64_t i = 0; i < length; ++i)
    ids[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(1000 + (i * 7919) % 40000);
  const model::SequenceInput row{ids, {}, {}};

  auto device = ops::Device::cpu();
  auto weights = Weights::synthetic(config, *device, ref["seed"].get<std::uint32_t>(), precision);
  Encoder encoder(weights, *device, kThreads);
  encoder.forward(std::span(&row, 1));
  ASSERT_EQ(encoder.tokens(), length);

  const Agreement a = compare(encoder, ref, config.hidden_size);
  fmt::print(
      "8192-token row, {}: max |error| {:.3g}, min cosine {:.7f}; buffers {} bytes, plan {}\n",
      ops::precision_name(precision), a.max_abs, a.min_cosine, encoder.workspace_bytes(),
      Encoder::activation_bytes(config, length, length, kThreads, precision));
  if (precision == ops::Precision::kFp32) {
    EXPECT_LE(a.max_abs, 5e-6);  // 1.7e-6 measured (AMD Zen 3, AVX2); the issue asks 1e-3
  } else {
    EXPECT_GE(a.min_cosine, 0.99998);  // 0.9999951 measured (Zen 3, bf16 emulated)
  }
  EXPECT_LE(encoder.workspace_bytes(),
            Encoder::activation_bytes(config, length, length, kThreads, precision));
}

INSTANTIATE_TEST_SUITE_P(Precisions, ModernBertLong,
                         ::testing::Values(ops::Precision::kFp32, ops::Precision::kBf16),
                         [](const auto& info) {
                           return info.param == ops::Precision::kFp32 ? "fp32" : "bf16";
                         });

// The plan grows linearly with the row: twice the tokens in one row, at most about twice the
// bytes (a [len, len] score block per thread would make it grow fourfold).
TEST(ModernBertLong, PlannedMemoryGrowsLinearlyWithTheRow) {
  const ModelConfig config = ModelConfig::shape("modernbert-base", 0);
  for (ops::Precision p : {ops::Precision::kFp32, ops::Precision::kBf16, ops::Precision::kInt8}) {
    const double one = double(Encoder::activation_bytes(config, 8192, 8192, kThreads, p));
    const double two = double(Encoder::activation_bytes(config, 16384, 16384, kThreads, p));
    EXPECT_LE(two, 2.01 * one) << ops::precision_name(p);
  }
}

}  // namespace
}  // namespace mcinfer::cpu
