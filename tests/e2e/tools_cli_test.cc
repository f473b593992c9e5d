// `mcinfer inspect` and `mcinfer bench` as scripts use them (--json).
#include <gtest/gtest.h>

#include "core/json.h"
#include "io/safetensors.h"
#include "support/cli.h"

namespace mcinfer {
namespace {

TEST(InspectCli, DescribesTheCheckpoint) {
  const auto dir = testing::fixture("models/bert_cls_multi");
  auto r = testing::run_cli({"inspect", dir.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = parse_json(r.out, "inspect output");
  Json config = read_json_file(dir / "config.json");
  EXPECT_EQ(j["architecture"], "BertForSequenceClassification");
  EXPECT_EQ(j["layers"], config["num_hidden_layers"]);
  EXPECT_EQ(j["hidden_size"], config["hidden_size"]);
  EXPECT_EQ(j["attention_heads"], config["num_attention_heads"]);
  EXPECT_EQ(j["problem_type"], "multi_label_classification");
  EXPECT_EQ(j["labels"].size(), config["id2label"].size());
  // Every tensor of this checkpoint is used: the parameter count is the file's element count.
  auto file = io::SafetensorsFile::open(dir / "model.safetensors");
  std::int64_t elements = 0;
  for (const auto& t : file->tensors()) elements += t.numel();
  EXPECT_EQ(j["parameters"].get<std::int64_t>(), elements);
  EXPECT_GT(j["activation_bytes_per_1000_tokens"].get<std::int64_t>(),
            1000 * 4 * config["hidden_size"].get<std::int64_t>());

  r = testing::run_cli({"inspect", dir.string()});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("multi_label_classification"), std::string::npos) << r.out;

  r = testing::run_cli({"inspect", testing::fixture("models").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no config.json"), std::string::npos) << r.err;
}

TEST(BenchCli, ReportsThroughputGemmSpeedAndOpShares) {
  auto r = testing::run_cli({"bench", testing::fixture("models/roberta_cls").string(), "--batch",
                             "4", "--seq", "16", "--iters", "2", "--profile", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = parse_json(r.out, "bench output");
  EXPECT_GT(j["seq_per_s"].get<double>(), 0);
  EXPECT_GT(j["gflops"].get<double>(), 0);
  EXPECT_GT(j["gemm_gflops"].get<double>(), 0);
  double total = 0;
  for (const auto& [op, share] : j["op_share"].items()) total += share.get<double>();
  EXPECT_NEAR(total, 1.0, 1e-6);
  EXPECT_GT(j["op_share"]["gemm"].get<double>(), 0);
  EXPECT_GT(j["op_share"]["attention"].get<double>(), 0);

  r = testing::run_cli({"bench", "--shape", "minilm-l6", "--batch", "2", "--seq", "8", "--iters",
                        "1", "--replicas", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(parse_json(r.out, "bench output")["replicas"], 2);

  EXPECT_EQ(testing::run_cli({"bench"}).exit_code, 2);  // neither a model nor a shape
  EXPECT_EQ(testing::run_cli({"bench", "--shape", "gpt-9"}).exit_code, 2);
}

// A failure the code does not wrap in its own error type (here std::filesystem::filesystem_error
// from stat on a symlink loop, or on a name longer than the filesystem allows) must still end as
// "mcinfer: error: ..." and status 1, never std::terminate (an abort, status 134).
TEST(ToolsCli, FilesystemErrorsAreReportedNotAborted) {
  auto dir = testing::scratch_dir("tools_fs_error");
  const auto loop = dir / "loop";
  std::filesystem::create_symlink(loop, loop);
  const auto too_long = dir / std::string(300, 'a');  // NAME_MAX is 255
  for (const auto& path : {loop, too_long}) {
    auto r = testing::run_cli({"merge", path.string(), "--output", (dir / "out.csv").string()});
    EXPECT_EQ(r.exit_code, 1) << path << ": " << r.err;
    EXPECT_EQ(r.err.rfind("mcinfer: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(path.string()), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "out.csv"));
  }
}

}  // namespace
}  // namespace mcinfer
