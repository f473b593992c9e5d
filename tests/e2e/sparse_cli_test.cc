// SPLADE sparse encoders through the CLI (tests/fixtures/sparse, tools/gen_sparse_fixtures.py):
// `run` on a SparseEncoder directory gives SparseEncoder(dir).encode(texts) as JSONL rows of its
// nonzeros, with exactly the reference's nonzero set; --sparse-top-k K gives
// encode(max_active_dims=K), a saved max_active_dims applies by default; CSV output is refused
// before any row is computed, and a malformed SpladePooling config by file and field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/json.h"
#include "support/cli.h"
#include "support/reference.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

// fp32 against encode(): ~1e-6 for max pooling. Sum pooling adds up to 24 tokens' weights (values
// up to ~20), whose float32 sums differ in their order: the bound is relative above 1.
constexpr double kTolerance = 1e-5;

fs::path sparse(const std::string& name) { return testing::fixture("sparse/" + name); }

testing::CliResult run_sparse(const fs::path& dir, const fs::path& output,
                              std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {
      "run",      dir.string(),    "--input",     (dir / "input.csv").string(),
      "--output", output.string(), "--precision", "fp32",
      "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return run_cli(a);
}

// Each JSONL row against the reference's row: the ids t00, t01, ..., exactly its nonzero indices
// (ascending), every value within the tolerance.
void expect_rows_equal(const fs::path& output, const std::vector<float>& want, std::int64_t vocab) {
  std::ifstream in(output);
  std::string line;
  std::size_t row = 0;
  double worst = 0;
  while (std::getline(in, line)) {
    const Json j = parse_json(line, output.string());
    ASSERT_EQ(j.size(), 3u) << line;
    EXPECT_EQ(j["id"].get<std::string>(), fmt::format("t{:02d}", row));
    const auto indices = j["indices"].get<std::vector<std::int64_t>>();
    const auto values = j["values"].get<std::vector<double>>();
    ASSERT_EQ(indices.size(), values.size());
    const float* ref = want.data() + row * static_cast<std::size_t>(vocab);
    std::vector<std::int64_t> nonzero;
    for (std::int64_t v = 0; v < vocab; ++v)
      if (ref[v] != 0.0f) nonzero.push_back(v);
    EXPECT_EQ(indices, nonzero) << "row " << row;
    for (std::size_t k = 0; k < indices.size() && indices == nonzero; ++k) {
      const double r = ref[indices[k]];
      worst = std::max(worst, std::abs(values[k] - r) / std::max(1.0, std::abs(r)));
    }
    ++row;
  }
  EXPECT_EQ(row * static_cast<std::size_t>(vocab), want.size());
  EXPECT_LE(worst, kTolerance);
}

class SparseCli : public ::testing::TestWithParam<std::string> {};

// Default flags: the directory's task (sparse), its pooling and activation, its max_active_dims.
TEST_P(SparseCli, DefaultFlagsGiveEncode) {
  const fs::path dir = sparse(GetParam());
  const testing::Reference ref(dir / "reference.safetensors");
  const auto out = testing::scratch_dir("sparse_cli_" + GetParam()) / "o.jsonl";
  auto r = run_sparse(dir, out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_rows_equal(out, ref.floats("dense"), ref.shape("dense")[1]);
}

// --sparse-top-k 5: encode(max_active_dims=5), over the model's own max_active_dims too.
TEST_P(SparseCli, TopKGivesMaxActiveDims) {
  const fs::path dir = sparse(GetParam());
  const testing::Reference ref(dir / "reference.safetensors");
  const auto out = testing::scratch_dir("sparse_cli_top5_" + GetParam()) / "o.jsonl";
  auto r = run_sparse(dir, out, {"--sparse-top-k", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_rows_equal(out, ref.floats("top5"), ref.shape("top5")[1]);
}

INSTANTIATE_TEST_SUITE_P(Models, SparseCli,
                         ::testing::Values("sparse6_bert_max_log1p", "sparse6_bert_sum_relu",
                                           "sparse6_bert_max_active8",
                                           // the MLM heads of the other families
                                           "sparse6_xlmr_max_log1p", "sparse6_distilbert_sum_relu",
                                           "sparse6_modernbert_max_log1p"));

TEST(SparseCliRefusals, CsvOutputRefusedBeforeAnyRow) {
  const fs::path dir = sparse("sparse6_bert_max_log1p");
  const auto out = testing::scratch_dir("sparse_cli_csv") / "o.csv";
  auto r = run_sparse(dir, out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("JSONL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Parquet"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(SparseCliRefusals, OtherTasksRefused) {
  const fs::path dir = sparse("sparse6_bert_max_log1p");
  const auto out = testing::scratch_dir("sparse_cli_embed") / "o.jsonl";
  auto r = run_sparse(dir, out, {"--task", "embed"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--task sparse"), std::string::npos) << r.err;
  r = run_sparse(testing::fixture("ce/ce6_bert_sigmoid"), out, {"--task", "sparse"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("SparseEncoder"), std::string::npos) << r.err;
}

// A copy of a fixture whose SpladePooling config.json has `field` set to `value` (JSON text).
fs::path with_splade_field(const std::string& field, const std::string& value) {
  static int copies = 0;
  const fs::path dir =
      testing::scratch_dir("sparse_cli_bad_" + field + std::to_string(copies++)) / "model";
  fs::remove_all(dir);
  fs::copy(sparse("sparse6_bert_max_log1p"), dir, fs::copy_options::recursive);
  const fs::path config = dir / "1_SpladePooling/config.json";
  Json j = read_json_file(config);
  j[field] = parse_json(value, "test");
  std::ofstream(config) << j.dump(2);
  return dir;
}

TEST(SparseCliRefusals, MalformedSpladePoolingRefusedByField) {
  const std::pair<std::string, std::string> cases[] = {{"pooling_strategy", "\"mean\""},
                                                       {"activation_function", "\"gelu\""},
                                                       {"embedding_dimension", "30522"},
                                                       {"pooling_strategy", "3"},
                                                       {"unknown_setting", "true"}};
  for (const auto& [field, value] : cases) {
    const fs::path dir = with_splade_field(field, value);
    const auto out = dir.parent_path() / "o.jsonl";
    auto r = run_sparse(dir, out);
    EXPECT_NE(r.exit_code, 0) << field;
    EXPECT_NE(r.err.find("1_SpladePooling/config.json"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(field), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
  }
}

TEST(SparseCliInspect, SaysSparse) {
  auto r = run_cli({"inspect", sparse("sparse6_bert_max_active8").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("task             sparse"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SpladePooling max of log1p(log1p(relu(x)))"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("top-k            8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MLM head"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace mcinfer
