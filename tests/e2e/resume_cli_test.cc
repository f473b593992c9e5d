// Crash safety: runs killed with SIGKILL at random moments and at injected points (mid-shard,
// mid-manifest, during the final merge), stopped by SIGINT/SIGTERM, or failing on a full disk,
// then resumed with --resume, must give the output of an uninterrupted run: the same ids in the
// same order, values within 1e-6, no row lost or duplicated, and never a partial output.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <random>

#include "core/json.h"
#include "support/cli.h"
#include "support/predictions.h"
#include "support/reference.h"
#include "support/rows.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;
using testing::CliOptions;
using testing::run_cli;

const char* kModel = "models/bert_cls_multi";

fs::path write_rows(const fs::path& dir, int count) {
  // Every seventh id repeats the one two rows back.
  return testing::write_varied_rows(dir / "rows.jsonl", "bert_cls_multi", count, 11, [](int i) {
    return fmt::format("q{}", i % 7 == 6 ? i - 2 : i);
  });
}

std::vector<std::string> args(const fs::path& input, const fs::path& output, const fs::path& shards,
                              const std::string& schedule, bool resume) {
  std::vector<std::string> a = {"run", testing::fixture(kModel).string(), "--input", input.string(),
                                "--output", output.string(), "--shards-dir", shards.string(),
                                "--schedule", schedule, "--replicas", "3", "--batch-size", "3",
                                "--batch-tokens", "24",
                                // fp32: a resumed dynamic run forms other batches, and bf16
                                // outputs may differ in their last bit between compositions.
                                "--precision", "fp32", "--quiet"};
  if (resume) a.push_back("--resume");
  return a;
}

void expect_same(const fs::path& got_path, const testing::Table& want, const std::string& what) {
  ASSERT_TRUE(fs::exists(got_path)) << what;
  auto got = testing::read_table(got_path);
  EXPECT_EQ(got.ids, want.ids) << what;
  EXPECT_LE(testing::max_abs_difference(got, want), 1e-6) << what;
}

// A dynamic run into `shards` killed (SIGKILL) at the batch write `fault` names.
int crashed_run(const fs::path& input, const fs::path& output, const fs::path& shards,
                const std::string& fault) {
  CliOptions crash;
  crash.env = {"MCINFER_FAULT=" + fault};
  return run_cli(args(input, output, shards, "dynamic", false), crash).exit_code;
}

class Resume : public ::testing::TestWithParam<std::string> {};

TEST_P(Resume, KilledAnywhereThenResumedEqualsUninterrupted) {
  const std::string schedule = GetParam();
  auto dir = testing::scratch_dir("resume_kill_" + schedule);
  auto input = write_rows(dir, 600);
  auto reference_out = dir / "reference.csv";
  const auto started = std::chrono::steady_clock::now();
  ASSERT_EQ(run_cli(args(input, reference_out, dir / "ref_shards", schedule, false)).exit_code, 0);
  const auto reference_ms = std::max<unsigned>(
      2, static_cast<unsigned>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now() - started)
                                   .count()));
  auto want = testing::read_table(reference_out);
  ASSERT_GT(want.ids.size(), 400u);

  // Crashes the first run as `crash` says, then resumes it (sometimes crashing the resume too).
  // `proven` when the crash provably interrupted the run: the process died of SIGKILL with no
  // output written, and the resume, which must give the uninterrupted output, had rows left to
  // compute (or, for an injected crash, the point was reached: it kills only a run in progress).
  struct Outcome {
    bool proven = false;
    unsigned finished_in_ms = 0;  // > 0: the run ended before the kill, this fast
    bool past_compute = false;    // killed after every row was computed (merge, exit)
  };
  auto interrupt_and_resume = [&](const CliOptions& crash, const std::string& how, int trial,
                                  const fs::path& shards) {
    auto output = dir / "out.csv";
    fs::remove(output);
    fs::remove_all(shards);
    const auto t0 = std::chrono::steady_clock::now();
    auto first = run_cli(args(input, output, shards, schedule, false), crash);
    if (first.exit_code == 0) {
      expect_same(output, want, how + ": finished before the kill");
      return Outcome{false,
                     static_cast<unsigned>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::steady_clock::now() - t0)
                                               .count())};
    }
    EXPECT_EQ(first.exit_code, 128 + 9) << how << ": " << first.err;
    if (fs::exists(output)) {  // killed after the output was renamed into place: it is whole
      expect_same(output, want, how + ": output before the kill");
      return Outcome{false, 0, true};
    }
    if (trial % 5 == 1) {
      CliOptions again;
      again.env = {"MCINFER_FAULT=shard-write:2"};
      run_cli(args(input, output, shards, schedule, true), again);
    }
    auto report = dir / "resume_report.json";
    auto resume = args(input, output, shards, schedule, true);
    resume.insert(resume.end(), {"--report", report.string()});
    auto resumed = run_cli(resume);
    EXPECT_EQ(resumed.exit_code, 0) << how << ": " << resumed.err;
    if (resumed.exit_code != 0) return Outcome{};
    expect_same(output, want, how);
    if (crash.signal_after_ms == 0) return Outcome{first.exit_code == 128 + 9};
    const bool rows_left = read_json_file(report)["rows_computed"].get<std::uint64_t>() > 0;
    return Outcome{first.signalled && rows_left, 0, first.signalled && !rows_left};
  };

  // 24 seeded trials: a SIGKILL at a random moment of the run, or a crash injected at a chosen
  // point. Every one must interrupt a run in progress; a random moment that falls after the end
  // (or in the final merge) is drawn again, among the moments before the quickest end seen (the
  // first, cold, run is the slowest: 700 ms against 300 ms for the later ones, measured).
  unsigned run_ms = reference_ms;
  const char* points[] = {"shard-write", "manifest-write", "atomic-commit"};
  std::mt19937 rng(2026);
  int interrupted = 0;
  for (int trial = 0; trial < 24; ++trial) {
    SCOPED_TRACE(fmt::format("{} trial {}", schedule, trial));
    auto shards = dir / fmt::format("shards_{}", trial);
    CliOptions crash;
    std::string how;
    bool proven = false;
    if (trial % 4 == 3) {
      for (int draw = 0; draw < 20 && !proven; ++draw) {
        crash.signal_after_ms = 1 + static_cast<int>(rng() % run_ms);
        how = fmt::format("SIGKILL after {} ms (draw {}, a run takes {} ms)", crash.signal_after_ms,
                          draw, run_ms);
        const Outcome outcome = interrupt_and_resume(crash, how, trial, shards);
        proven = outcome.proven;
        if (outcome.finished_in_ms > 1) run_ms = std::min(run_ms, outcome.finished_in_ms);
        // Every row was done by then: later moments are drawn before it. Under ThreadSanitizer
        // the process's exit takes a large share of a run, and 20 draws over the whole run once
        // all fell after the last row (CI, 2026-12-01).
        if (outcome.past_compute && crash.signal_after_ms > 1)
          run_ms = std::min(run_ms, static_cast<unsigned>(crash.signal_after_ms));
      }
    } else {
      const char* point = points[trial % 3];
      // The run's first atomic commit records run.json; the second writes the merged output.
      const int at = point == std::string("atomic-commit") ? 1 + static_cast<int>(trial % 2)
                                                           : 1 + static_cast<int>(rng() % 60);
      crash.env = {fmt::format("MCINFER_FAULT={}:{}", point, at)};
      how = fmt::format("crash at {}:{}", point, at);
      proven = interrupt_and_resume(crash, how, trial, shards).proven;
    }
    EXPECT_TRUE(proven) << how << ": did not interrupt a run in progress";
    interrupted += proven;
  }
  EXPECT_EQ(interrupted, 24);
}

INSTANTIATE_TEST_SUITE_P(Schedules, Resume, ::testing::Values("dynamic", "static"));

TEST(ResumeSafety, RefusesDifferentFlagsModelOrInput) {
  auto dir = testing::scratch_dir("resume_refuse");
  auto input = write_rows(dir, 200);
  auto shards = dir / "shards";
  ASSERT_EQ(crashed_run(input, dir / "out.csv", shards, "shard-write:3"), 137);

  auto a = args(input, dir / "out.csv", shards, "dynamic", true);
  a.push_back("--task");
  a.push_back("embed");
  auto r = run_cli(a);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot resume"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("flags.task: was \"classify\", now \"embed\""), std::string::npos) << r.err;

  std::ofstream(input, std::ios::app) << R"({"id": "extra", "input_ids": [1, 2]})"
                                      << "\n";
  r = run_cli(args(input, dir / "out.csv", shards, "dynamic", true));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("input.size"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.csv"));

  // A fresh run into a directory that holds a run is refused too.
  r = run_cli(args(input, dir / "out.csv", shards, "dynamic", false));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("add --resume"), std::string::npos) << r.err;
}

// A shards directory written by an earlier mcinfer (run.json without the record format this
// build writes, or with another) is refused with a clear message, never misread; the record a
// run writes names every value by name.
TEST(ResumeSafety, RefusesTheRecordOfAnotherFormat) {
  auto dir = testing::scratch_dir("resume_format");
  auto input = write_rows(dir, 60);
  auto shards = dir / "shards";
  ASSERT_EQ(crashed_run(input, dir / "out.csv", shards, "shard-write:2"), 137);
  Json record = read_json_file(shards / "run.json");
  EXPECT_EQ(record["record_format"], 2);
  const Json& flags = record["fingerprint"]["flags"];
  EXPECT_EQ(flags["precision"], "fp32");
  EXPECT_EQ(flags["activation"], "sigmoid");
  EXPECT_EQ(flags["schedule"], "dynamic");
  EXPECT_EQ(flags["backend"], "cpu");

  for (const Json& format : {Json(nullptr), Json(1), Json(3)}) {
    Json old = record;
    if (format.is_null()) {
      old.erase("record_format");
    } else {
      old["record_format"] = format;
    }
    std::ofstream(shards / "run.json", std::ios::trunc) << old.dump(2) << "\n";
    auto r = run_cli(args(input, dir / "out.csv", shards, "dynamic", true));
    EXPECT_EQ(r.exit_code, 1) << format.dump();
    EXPECT_NE(r.err.find(fmt::format("its run.json has record format {}, written by another "
                                     "mcinfer version (this one writes format 2)",
                                     format.is_null() ? 1 : format.get<int>())),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(dir / "out.csv"));
  }
  // The record as written resumes to the uninterrupted output.
  std::ofstream(shards / "run.json", std::ios::trunc) << record.dump(2) << "\n";
  ASSERT_EQ(run_cli(args(input, dir / "out.csv", shards, "dynamic", true)).exit_code, 0);
  ASSERT_EQ(run_cli(args(input, dir / "want.csv", dir / "fresh", "dynamic", false)).exit_code, 0);
  expect_same(dir / "out.csv", testing::read_table(dir / "want.csv"), "resumed");
}

TEST(ResumeSafety, SignalStopsCleanlyAndSaysHowToResume) {
  auto dir = testing::scratch_dir("resume_signal");
  auto input = write_rows(dir, 30000);
  auto reference_out = dir / "reference.csv";
  ASSERT_EQ(run_cli(args(input, reference_out, dir / "ref", "dynamic", false)).exit_code, 0);
  auto want = testing::read_table(reference_out);
  for (int sig : {2, 15}) {
    auto shards = dir / fmt::format("shards_{}", sig);
    auto output = dir / "out.csv";
    fs::remove(output);
    CliOptions stop;
    stop.signal_after_ms = 300;
    stop.signal = sig;
    auto r = run_cli(args(input, output, shards, "dynamic", false), stop);
    EXPECT_EQ(r.exit_code, 128 + sig) << r.err;
    EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(output));
    auto resumed = run_cli(args(input, output, shards, "dynamic", true));
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    expect_same(output, want, fmt::format("signal {}", sig));
  }
}

TEST(ResumeSafety, FullDiskFailsCleanlyAndResumeCompletes) {
  auto dir = testing::scratch_dir("resume_full_disk");
  auto input = write_rows(dir, 1500);
  auto reference_out = dir / "reference.csv";
  ASSERT_EQ(run_cli(args(input, reference_out, dir / "ref", "dynamic", false)).exit_code, 0);
  auto want = testing::read_table(reference_out);
  auto shards = dir / "shards";
  auto output = dir / "out.csv";
  CliOptions small;
  small.file_size_limit = 6000;  // bytes per file: the shards fill up part-way
  auto r = run_cli(args(input, output, shards, "dynamic", false), small);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("write failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(output));
  auto resumed = run_cli(args(input, output, shards, "dynamic", true));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  expect_same(output, want, "after a full disk");
}

}  // namespace
}  // namespace mcinfer
