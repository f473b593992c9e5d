// `mcinfer run --backend pjrt` end to end on XLA's CPU plugin with several devices: the static
// schedule writes the seed's shards (DistributedSampler over the devices) with the CPU backend's
// values, a run killed mid-way resumes to the uninterrupted output, and a plugin that cannot be
// used stops the run with its reason before anything is written.
#include <gtest/gtest.h>

#include "core/json.h"
#include "support/cli.h"
#include "support/pjrt.h"
#include "support/predictions.h"
#include "support/rows.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

std::vector<std::string> run_args(const std::string& model, const fs::path& input,
                                  const fs::path& output, std::vector<std::string> extra) {
  std::vector<std::string> a = {"run",      testing::fixture("models/" + model).string(),
                                "--input",  input.string(),
                                "--output", output.string(),
                                "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::vector<std::string> pjrt(std::vector<std::string> extra) {
  std::vector<std::string> a = {"--backend", "pjrt", "--plugin", testing::pjrt_cpu_plugin()};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

fs::path rows(const fs::path& dir, const std::string& model, int count) {
  return testing::write_varied_rows(dir / "rows.jsonl", model, count, 5,
                                    [](int i) { return fmt::format("row{}", i); });
}

// The seed's layout: one process per device, each with DistributedSampler's share (the CPU
// backend's static shards are checked against the sampler in run_cli_test).
TEST(PjrtCli, StaticShardsAreTheCpuBackendsShardsOnePerDevice) {
  MCINFER_NEED_PJRT_CPU();
  auto dir = testing::scratch_dir("pjrt_static");
  const auto input = rows(dir, "bert_cls_single", 12);
  const std::vector<std::string> static_flags = {"--schedule", "static",      "--batch-size",
                                                 "2",          "--precision", "fp32"};
  auto with = [&](std::vector<std::string> a, const fs::path& shards) {
    a.insert(a.end(), static_flags.begin(), static_flags.end());
    a.insert(a.end(), {"--shards-dir", shards.string()});
    return a;
  };
  // --replicas auto: one per device.
  auto r = run_cli(run_args("bert_cls_single", input, dir / "pjrt.csv",
                            with(pjrt({"--devices", "5"}), dir / "pjrt")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto c = run_cli(
      run_args("bert_cls_single", input, dir / "cpu.csv", with({"--replicas", "5"}, dir / "cpu")));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  for (int rank = 0; rank < 5; ++rank) {
    const auto name = fmt::format("shard_{}.csv", rank);
    const auto got = testing::read_table(dir / "pjrt" / name);
    const auto want = testing::read_table(dir / "cpu" / name);
    EXPECT_EQ(got.ids, want.ids) << name;
    EXPECT_LE(testing::max_abs_difference(got, want), 1e-5) << name;
  }
  // 12 rows over 5 replicas: padded to 15 with rows 0, 1, 2; replica 2 ends with row 0 again.
  EXPECT_EQ(testing::read_table(dir / "pjrt" / "shard_2.csv").ids,
            (std::vector<std::string>{"row2", "row7", "row0"}));
  const auto got = testing::read_table(dir / "pjrt.csv");
  const auto cpu = testing::read_table(dir / "cpu.csv");
  EXPECT_EQ(got.ids, cpu.ids);
  EXPECT_LE(testing::max_abs_difference(got, cpu), 1e-5);
}

TEST(PjrtCli, KilledThenResumedEqualsUninterrupted) {
  MCINFER_NEED_PJRT_CPU();
  auto dir = testing::scratch_dir("pjrt_resume");
  const auto input = rows(dir, "bert_cls_multi", 40);
  const auto shards = dir / "shards";
  const auto extra = pjrt({"--devices", "2", "--batch-tokens", "24", "--precision", "fp32",
                           "--shards-dir", shards.string()});
  auto whole = run_cli(run_args("bert_cls_multi", input, dir / "whole.csv",
                                pjrt({"--devices", "2", "--precision", "fp32"})));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  // Killed (SIGKILL) at its third shard write.
  auto crashed = run_cli(run_args("bert_cls_multi", input, dir / "out.csv", extra), "",
                         {"MCINFER_FAULT=shard-write:3"});
  ASSERT_NE(crashed.exit_code, 0);
  ASSERT_FALSE(fs::exists(dir / "out.csv"));
  auto resume_args = run_args("bert_cls_multi", input, dir / "out.csv", extra);
  resume_args.push_back("--resume");
  auto resumed = run_cli(resume_args);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto got = testing::read_table(dir / "out.csv");
  const auto want = testing::read_table(dir / "whole.csv");
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_LE(testing::max_abs_difference(got, want), 1e-6);
}

TEST(PjrtCli, InspectListsThePlatformApiAndDevices) {
  MCINFER_NEED_PJRT_CPU();
  auto r = run_cli({"inspect", testing::fixture("models/bert_cls_single").string(), "--json",
                    "--backend", "pjrt", "--plugin", testing::pjrt_cpu_plugin(), "--devices", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json report = Json::parse(r.out);
  const Json& backend = report["backend"];
  EXPECT_EQ(backend["name"], "pjrt");
  EXPECT_EQ(backend["replica_slots"], 3);
  ASSERT_EQ(backend["devices"].size(), 3u);
  EXPECT_EQ(backend["devices"][2].get<std::string>().rfind("device 2: cpu", 0), 0u)
      << backend["devices"].dump();
  const std::string description = backend["description"];
  EXPECT_NE(description.find("PJRT cpu"), std::string::npos) << description;
  EXPECT_NE(description.find("(API 0."), std::string::npos) << description;
}

TEST(PjrtCli, UnusablePluginsStopTheRunWithTheirReason) {
  auto dir = testing::scratch_dir("pjrt_bad_plugin");
  const auto input = rows(dir, "bert_cls_single", 3);
  const std::pair<fs::path, std::string> cases[] = {
      {dir / "none.so", "PJRT plugin " + (dir / "none.so").string() + ": no such file"},
      {input, "PJRT plugin " + input.string() + ": not a shared library (no ELF header)"},
  };
  for (const auto& [plugin, reason] : cases) {
    auto r = run_cli(run_args("bert_cls_single", input, dir / "out.csv",
                              {"--backend", "pjrt", "--plugin", plugin.string()}));
    EXPECT_EQ(r.exit_code, 1) << plugin;
    EXPECT_NE(r.err.find(reason), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir / "out.csv"));
}

TEST(PjrtCli, Int8IsRefusedAsAUsageError) {
  MCINFER_NEED_PJRT_CPU();
  auto dir = testing::scratch_dir("pjrt_int8");
  const auto input = rows(dir, "bert_cls_single", 3);
  auto r =
      run_cli(run_args("bert_cls_single", input, dir / "out.csv", pjrt({"--precision", "int8"})));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--backend pjrt runs fp32 or bf16"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mcinfer
