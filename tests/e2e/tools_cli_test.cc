// `mcinfer inspect` and `mcinfer bench` as scripts use them (--json).
#include <gtest/gtest.h>

#include "core/json.h"
#include "io/safetensors.h"
#include "support/cli.h"
#include "support/cpu_features.h"
#include "support/fixture_rows.h"

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
  // The default budget of 4,096 tokens, rows up to the model's length.
  const Json& largest = j["activation_bytes_largest_batch"];
  EXPECT_EQ(largest["tokens"].get<std::int64_t>(), 4096);
  EXPECT_EQ(largest["longest"], j["max_len"]);
  EXPECT_GT(largest["bytes"].get<std::int64_t>(),
            4 * j["activation_bytes_per_1000_tokens"].get<std::int64_t>());

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
// `bench --calibrate-on FILE` times the int8 model a run over FILE would use: calibrated on its
// check rows, with the kept GEMMs the check chooses (issue 30: speed and accuracy of one model).
TEST(BenchCli, Int8CalibratedOnAnInputIsTheRunsModel) {
  NEED_CPU(int8(), "AVX2 (int8 GEMMs)");
  auto dir = testing::scratch_dir("bench_calibrate");
  const std::string model = testing::fixture("models/bert_cls_multi").string();
  const auto rows = testing::write_fixture_rows(dir, "bert_cls_multi");
  auto bench = [&](std::vector<std::string> extra, std::vector<std::string> env = {}) {
    std::vector<std::string> a = {"bench",   model, "--batch", "4",           "--seq", "16",
                                  "--iters", "1",   "--json",  "--precision", "int8"};
    a.insert(a.end(), extra.begin(), extra.end());
    return testing::run_cli(a, "", env);
  };
  auto r = bench({"--calibrate-on", rows.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string plan = Json::parse(r.out)["int8_plan"];
  EXPECT_NE(plan.find("int8: 12 of 12 GEMMs; precision check: 6 rows"), std::string::npos) << plan;
  // The same run's report says the same plan.
  auto run = testing::run_cli({"run", model, "--input", rows.string(), "--output",
                               (dir / "o.csv").string(), "--precision", "int8", "--report",
                               (dir / "r.json").string(), "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(plan.substr(0, plan.find(';')),
            read_json_file(dir / "r.json")["int8_plan"]["summary"].get<std::string>());
  // A broken int8 GEMM: the check keeps GEMMs out of int8 or refuses, as the run would.
  r = bench({"--calibrate-on", rows.string()}, {"MCINFER_FAULT=int8-gemm-wrong:1"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("int8 misses its targets"), std::string::npos) << r.err;
  // Without a file the int8 model is uncalibrated, and says so.
  r = bench({});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(Json::parse(r.out)["int8_plan"].get<std::string>().find("uncalibrated"),
            std::string::npos);
  // Only int8 has a calibration.
  r = testing::run_cli({"bench", model, "--precision", "fp32", "--calibrate-on", rows.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

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
