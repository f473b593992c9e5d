#pragma once
// Helpers of the distributed-run tests: a job over a fixture model, its ranks, the merge of its
// shards directory, and the one-machine run it must equal.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/cli.h"
#include "support/predictions.h"
#include "support/rows.h"

namespace mcinfer::testing {

namespace fs = std::filesystem;

inline const char* kDistributedModel = "models/bert_cls_multi";

// Rows with distinct ids "d<i>" (`repeat_every` > 0: every such row repeats an earlier id, as
// the seed's duplicates do).
inline fs::path write_rows(const fs::path& dir, int count, int repeat_every = 0) {
  return write_varied_rows(dir / "rows.jsonl", "bert_cls_multi", count, 17, [repeat_every](int i) {
    const bool repeat = repeat_every > 0 && i % repeat_every == repeat_every - 1;
    return fmt::format("d{}", repeat ? i - 3 : i);
  });
}

struct Job {
  fs::path input, shards, output;
  std::string schedule = "static";
  int replicas = 2;  // per rank
  std::vector<std::string> extra{};

  std::vector<std::string> args() const {
    std::vector<std::string> a = {"run",
                                  fixture(kDistributedModel).string(),
                                  "--input",
                                  input.string(),
                                  "--output",
                                  output.string(),
                                  "--shards-dir",
                                  shards.string(),
                                  "--schedule",
                                  schedule,
                                  "--replicas",
                                  std::to_string(replicas),
                                  "--batch-size",
                                  "3",
                                  "--batch-tokens",
                                  "40",
                                  "--precision",
                                  "fp32",
                                  "--quiet"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::vector<std::string> rank_args(int rank, int world) const {
    auto a = args();
    a.insert(a.end(), {"--rank", std::to_string(rank), "--world", std::to_string(world)});
    return a;
  }
};

// Every rank of `world`, one after another (they share nothing but the directory).
inline void run_ranks(const Job& job, int world) {
  for (int rank = 0; rank < world; ++rank) {
    auto r = run_cli(job.rank_args(rank, world));
    ASSERT_EQ(r.exit_code, 0) << "rank " << rank << " of " << world << ": " << r.err;
  }
}

inline CliResult merge_dir(const Job& job, const fs::path& output, bool allow_missing = false) {
  std::vector<std::string> a = {"merge",        "--shards-dir",     job.shards.string(),
                                "--expect",     job.input.string(), "--output",
                                output.string()};
  if (allow_missing) a.push_back("--allow-missing");
  return run_cli(a);
}

inline void expect_same_table(const fs::path& got_path, const fs::path& want_path, double tolerance,
                              const std::string& what) {
  ASSERT_TRUE(fs::exists(got_path)) << what;
  const auto got = read_table(got_path), want = read_table(want_path);
  EXPECT_EQ(got.ids, want.ids) << what;
  EXPECT_EQ(got.columns, want.columns) << what;
  EXPECT_LE(max_abs_difference(got, want), tolerance) << what;
}

// The one-machine run with `replicas` replicas, its shards kept in `shards`.
inline void run_one_machine(Job job, int replicas, const fs::path& shards, const fs::path& output) {
  job.replicas = replicas;
  job.shards = shards;
  job.output = output;
  auto r = run_cli(job.args());
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// A job of 3 ranks × 2 replicas over `rows` rows (every seventh id repeated) in a fresh scratch
// directory, and the one-machine run with 6 replicas it must equal: <dir>/one.csv.
inline Job job_with_reference(const std::string& name, const std::string& schedule, int rows) {
  const fs::path dir = scratch_dir(name);
  Job job{.input = write_rows(dir, rows, 7), .shards = dir / "ranks", .output = dir / "out.csv"};
  job.schedule = schedule;
  run_one_machine(job, 6, dir / "one", dir / "one.csv");
  return job;
}

// The one-machine output of job_with_reference.
inline fs::path reference_of(const Job& job) { return job.input.parent_path() / "one.csv"; }

}  // namespace mcinfer::testing
