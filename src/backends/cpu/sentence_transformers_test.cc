// Sentence-transformers models through the library, against SentenceTransformer.encode: every
// fixture of tests/fixtures/st (tiny random models saved by tools/gen_st_fixtures.py with CLS, max,
// mean_sqrt_len and all pooling modes concatenated, Dense layers with each activation, Normalize),
// fed the token ids sentence-transformers fed its model, with the plan the directory implies and
// no flag. Every value within an absolute tolerance.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/encoder.h"
#include "core/json.h"
#include "model/model_dir.h"
#include "support/paths.h"
#include "support/reference.h"

namespace mcinfer::cpu {
using namespace model;
namespace {

namespace fs = std::filesystem;
// float32 in torch vs double accumulation here: the fixtures' worst difference is 1.2e-6.
constexpr float kTolerance = 1e-5f;

class StFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(StFixture, DefaultPlanMatchesEncode) {
  const fs::path dir = testing::fixture("st/" + GetParam());
  testing::Reference ref(dir / "reference.safetensors");
  Json meta = read_json_file(dir / "reference.json");
  auto shape = ref.shape("input_ids");
  const std::int64_t n = shape[0], len = shape[1];
  auto ids = ref.ints("input_ids"), mask = ref.ints("attention_mask"),
       types = ref.ints("token_type_ids");
  auto want = ref.floats("embeddings");
  std::vector<SequenceInput> batch;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto off = static_cast<std::size_t>(i * len), l = static_cast<std::size_t>(len);
    batch.push_back({std::span(ids).subspan(off, l), std::span(types).subspan(off, l),
                     std::span(mask).subspan(off, l)});
  }

  ModelDir model = ModelDir::open(dir);
  EXPECT_EQ(model.default_task().value, TaskKind::kEmbed);
  EmbeddingPlan plan = model.embedding_plan(std::nullopt, std::nullopt);
  const std::int64_t dim = meta["output_dim"].get<std::int64_t>();
  ASSERT_EQ(plan.output_dim, dim);
  ASSERT_EQ(static_cast<std::int64_t>(want.size()), n * dim);
  EXPECT_EQ(plan.normalize.value, meta["normalize"].get<bool>());
  EXPECT_EQ(plan.dense.size(), meta["dense"].size());

  auto device = ops::Device::cpu();
  auto weights = Weights::load(model, *device);
  TaskSpec task;
  task.kind = TaskKind::kEmbed;
  task.pooling = plan.pooling.value;
  task.normalize = plan.normalize.value;
  task.dense = model.load_dense(plan);
  for (int threads : {1, 2}) {
    Encoder encoder(weights, *device, threads);
    ASSERT_EQ(encoder.output_dim(task), dim);
    std::vector<float> got;
    encoder.predict(batch, task, got);
    ASSERT_EQ(got.size(), want.size());
    float worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], kTolerance) << "row " << i / dim << " value " << i % dim;
      worst = std::max(worst, std::fabs(got[i] - want[i]));
    }
    RecordProperty("max_abs_error_threads_" + std::to_string(threads),
                   fmt::format("{:.3g}", worst));
  }
}

// Each sequence alone gives what it gives in the batch (pooling never mixes sequences).
TEST_P(StFixture, SequencesAreIndependent) {
  const fs::path dir = testing::fixture("st/" + GetParam());
  testing::Reference ref(dir / "reference.safetensors");
  auto shape = ref.shape("input_ids");
  const std::int64_t n = shape[0], len = shape[1];
  auto ids = ref.ints("input_ids"), mask = ref.ints("attention_mask");
  ModelDir model = ModelDir::open(dir);
  EmbeddingPlan plan = model.embedding_plan(std::nullopt, std::nullopt);
  auto device = ops::Device::cpu();
  Encoder encoder(Weights::load(model, *device), *device, 1);
  TaskSpec task{TaskKind::kEmbed, plan.pooling.value, plan.normalize.value};
  task.dense = model.load_dense(plan);
  std::vector<SequenceInput> all;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto off = static_cast<std::size_t>(i * len), l = static_cast<std::size_t>(len);
    all.push_back({std::span(ids).subspan(off, l), {}, std::span(mask).subspan(off, l)});
  }
  std::vector<float> batched, one;
  encoder.predict(all, task, batched);
  const std::int64_t dim = plan.output_dim;
  for (std::int64_t i = 0; i < n; ++i) {
    encoder.predict(std::span(all).subspan(static_cast<std::size_t>(i), 1), task, one);
    for (std::int64_t j = 0; j < dim; ++j)
      EXPECT_NEAR(one[j], batched[i * dim + j], 1e-5f) << "row " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(SentenceTransformers, StFixture,
                         ::testing::Values("bert_cls_dense", "bert_max", "roberta_meansqrt_dense2",
                                           "bert_all_modes"));

// The pooling math on hand-made rows, against values worked out from sentence-transformers'
// Pooling.forward: masked tokens are absent, so max ignores them and the means divide by the
// number of kept tokens; weighted mean weighs by position + 1 in the row as given.
TEST(PoolSequence, EveryModeOnKnownRows) {
  // Three kept tokens of hidden size 2, at positions 0, 2 and 3 of the row (position 1 masked).
  const float rows[] = {1, -4, 3, 2, -2, 6};
  const std::int32_t index[] = {0, 2, 3};
  PoolingModes all({Pooling::kLastToken, Pooling::kCls, Pooling::kMax, Pooling::kMean,
                    Pooling::kMeanSqrtLen, Pooling::kWeightedMean});
  EXPECT_EQ(all.name(), "cls+max+mean+mean_sqrt_len+weightedmean+lasttoken");
  std::vector<float> out(static_cast<std::size_t>(all.width(2)));
  pool_sequence(all, rows, 3, 2, index, out.data());
  const float sqrt3 = std::sqrt(3.0f);
  const std::vector<float> want = {1,
                                   -4,
                                   3,
                                   6,
                                   2.0f / 3,
                                   4.0f / 3,
                                   2 / sqrt3,
                                   4 / sqrt3,
                                   (1 * 1 + 3 * 3 - 2 * 4) / 8.0f,
                                   (-4 * 1 + 2 * 3 + 6 * 4) / 8.0f,
                                   -2,
                                   6};
  ASSERT_EQ(out.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out[i], want[i], 1e-6f) << i;
}

TEST(Dense, ActivationsAndBias) {
  DenseLayer layer;
  layer.in_features = 2;
  layer.out_features = 2;
  layer.weight = {1, 2, -1, 0.5f};
  layer.bias = {0.5f, -1};
  const float in[] = {1, -2};
  float out[2];
  const double z0 = 1 - 4 + 0.5, z1 = -1 - 1 - 1;  // -2.5, -3
  struct Case {
    DenseActivation act;
    double a, b;
  } cases[] = {{DenseActivation::kIdentity, z0, z1},
               {DenseActivation::kTanh, std::tanh(z0), std::tanh(z1)},
               {DenseActivation::kRelu, 0, 0},
               {DenseActivation::kSigmoid, 1 / (1 + std::exp(-z0)), 1 / (1 + std::exp(-z1))},
               {DenseActivation::kGelu, 0.5 * z0 * (1 + std::erf(z0 / std::sqrt(2.0))),
                0.5 * z1 * (1 + std::erf(z1 / std::sqrt(2.0)))}};
  for (const auto& c : cases) {
    layer.activation = c.act;
    apply_dense(layer, in, out);
    EXPECT_NEAR(out[0], c.a, 1e-6) << dense_activation_name(c.act);
    EXPECT_NEAR(out[1], c.b, 1e-6) << dense_activation_name(c.act);
  }
  layer.bias.clear();
  layer.activation = DenseActivation::kIdentity;
  apply_dense(layer, in, out);
  EXPECT_FLOAT_EQ(out[0], -3);
  EXPECT_FLOAT_EQ(out[1], -2);
}

}  // namespace
}  // namespace mcinfer::cpu
