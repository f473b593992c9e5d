// mcinfer::Model's two inputs on one batching path: texts and the token ids the model's tokenizer
// gives for them produce the same bytes, whatever the batch limits and the replica count.
#include "mcinfer/model.h"

#include <gtest/gtest.h>

#include <cstring>

#include "data/rows.h"
#include "support/paths.h"
#include "tokenizer/tokenizer.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> fixture_texts(const fs::path& csv) {
  auto reader = data::RowReader::open(csv, data::InputFormat::kCsv, data::ColumnSpec{});
  data::Row row;
  data::BadRow bad;
  std::vector<std::string> texts;
  while (reader->next(row, bad) == data::RowReader::Result::kRow) texts.push_back(row.text);
  return texts;
}

bool same_bytes(const Matrix& a, const Matrix& b) {
  return a.rows == b.rows && a.cols == b.cols && a.values.size() == b.values.size() &&
         std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(float)) == 0;
}

TEST(ModelInputs, TextsAndTheirTokenIdsGiveTheSameBytesUnderAnyBatchingAndReplicas) {
  // Rows of 2 to 600+ tokens, truncated at 32: batches of many sizes and a long tail.
  const fs::path dir = testing::fixture("text/bert_cls");
  const std::vector<std::string> texts = fixture_texts(dir / "input.csv");
  ASSERT_GE(texts.size(), 8u);
  const std::vector<std::string_view> views(texts.begin(), texts.end());
  for (int replicas : {1, 2}) {
    ModelOptions options;
    options.precision = "fp32";
    options.replicas = replicas;
    options.max_len = 32;
    options.pin_threads = false;
    const Model model = Model::load(dir, options);
    const auto tokenizer = tokenizer::Tokenizer::load(dir);
    std::vector<std::vector<std::int32_t>> ids;
    for (const std::string& text : texts)
      ids.push_back(tokenizer->encode(text, std::nullopt, model.max_len()).ids);
    for (std::int64_t batch_tokens : {1, 40, 97, 4096}) {
      for (std::size_t batch_rows : {0, 1, 3}) {
        PredictOptions limits;
        limits.batch_tokens = batch_tokens;
        limits.batch_rows = batch_rows;
        const Matrix from_texts = model.predict(views, {}, limits);
        const Matrix from_ids = model.predict_ids(ids, limits);
        ASSERT_EQ(from_texts.rows, texts.size());
        EXPECT_TRUE(same_bytes(from_texts, from_ids))
            << "replicas " << replicas << ", batch_tokens " << batch_tokens << ", batch_rows "
            << batch_rows;
      }
    }
  }
}

}  // namespace
}  // namespace mcinfer
