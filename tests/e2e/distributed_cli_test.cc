// Distributed runs: ranks of one job (explicit --rank/--world, or a launcher's variables) share
// a shards directory; `mcinfer merge --shards-dir` gives the output of the one-machine run with
// the same global replica count (launcher_cli_test: real mpirun and Slurm). The static split is
// torch's DistributedSampler over world × local replicas
// (tests/fixtures/sched/distributed_sampler.json, written by tools/gen_sampler_table.py); the
// dynamic one gives every row to exactly one rank.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <set>

#include "core/json.h"
#include "support/distributed.h"

namespace mcinfer::testing {
namespace {

// Static: rank k of 3 runs global replicas 2k and 2k+1 of one 6-replica sampler: each of its
// shards is, byte for byte, the one-machine run's shard of that global replica, and the merge
// equals the one-machine output.
TEST(Distributed, StaticRanksAreTheOneMachineReplicasByteForByte) {
  auto dir = scratch_dir("dist_static");
  Job job{.input = write_rows(dir, 101, 7), .shards = dir / "ranks", .output = dir / "unused.csv"};
  run_one_machine(job, 6, dir / "one", dir / "one.csv");
  run_ranks(job, 3);
  EXPECT_FALSE(fs::exists(job.output)) << "a rank without MPI writes no output";
  for (int g = 0; g < 6; ++g) {
    const auto ours = job.shards / fmt::format("shard_{}_{}.csv", g / 2, g % 2);
    EXPECT_EQ(read_file(ours), read_file(dir / "one" / fmt::format("shard_{}.csv", g)))
        << "global replica " << g;
  }
  auto m = merge_dir(job, dir / "merged.csv");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  expect_same_table(dir / "merged.csv", dir / "one.csv", 0, "merged static ranks");
  const Json record = read_json_file(job.shards / "run_1.json");
  EXPECT_EQ(record["rank"], 1);
  EXPECT_EQ(record["world"], 3);
  EXPECT_EQ(record["complete"], true);
  EXPECT_EQ(record["launcher"], "--rank/--world");
  EXPECT_EQ(record["fingerprint"]["flags"]["world"], 3);
}

// Seven ranks of one replica over 100 rows: each rank's shard holds exactly the rows torch's
// DistributedSampler(num_replicas=7, rank=k) yields, in its order, padding duplicates included.
TEST(Distributed, StaticRanksMatchTorchsDistributedSampler) {
  const Json table = read_json_file(fixture("sched/distributed_sampler.json"));
  const Json* torch = nullptr;
  for (const auto& c : table)
    if (c["n"] == 100 && c["replicas"] == 7) torch = &c;
  ASSERT_NE(torch, nullptr) << "the fixture has the case n=100, replicas=7";
  auto dir = scratch_dir("dist_torch");
  Job job{.input = write_rows(dir, 100), .shards = dir / "ranks", .output = dir / "out.csv"};
  job.replicas = 1;
  for (int rank = 0; rank < 7; ++rank) {
    auto r = run_cli(job.rank_args(rank, 7));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto shard = read_table(job.shards / fmt::format("shard_{}_0.csv", rank));
    std::vector<std::string> want;
    for (const auto& i : (*torch)["ranks"][static_cast<std::size_t>(rank)])
      want.push_back(fmt::format("d{}", i.get<int>()));
    EXPECT_EQ(shard.ids, want) << "rank " << rank;
  }
}

// Dynamic: every row computed by exactly one rank; the merge equals the one-machine run's
// output (other batch compositions: fp32 rounding only).
TEST(Distributed, DynamicRanksComputeEachRowOnceAndMergeToTheOneMachineOutput) {
  auto dir = scratch_dir("dist_dynamic");
  Job job{.input = write_rows(dir, 240), .shards = dir / "ranks", .output = dir / "unused.csv"};
  job.schedule = "dynamic";
  Job one = job;
  one.extra = {"--report", (dir / "one.json").string()};
  run_one_machine(one, 6, dir / "one", dir / "one.csv");
  std::vector<std::size_t> rows_per_rank;
  std::set<std::string> seen;
  for (int rank = 0; rank < 3; ++rank) {
    job.extra = {"--report", (dir / "report.json").string()};
    auto r = run_cli(job.rank_args(rank, 3));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::size_t rows = 0;
    for (int replica = 0; replica < 2; ++replica) {
      for (const auto& id :
           read_table(job.shards / fmt::format("shard_{}_{}.csv", rank, replica)).ids) {
        EXPECT_TRUE(seen.insert(id).second) << id << " computed twice";
        ++rows;
      }
    }
    rows_per_rank.push_back(rows);
  }
  EXPECT_EQ(seen.size(), 240u);
  for (std::size_t rows : rows_per_rank) EXPECT_GT(rows, 40u) << "a share far from a third";
  // Each rank's report: rank 0 at the given path, the others beside it.
  const Json report = read_json_file(dir / "report.rank2.json");
  EXPECT_EQ(report["rank"], 2);
  EXPECT_EQ(report["world"], 3);
  EXPECT_EQ(report["wrote_output"], false);
  EXPECT_EQ(report["rank_rows"], rows_per_rank[2]);
  EXPECT_GE(report["startup_seconds"].get<double>(), 0.0);
  EXPECT_EQ(read_json_file(dir / "report.json")["rank"], 0);
  // Work conservation: the ranks computed the one-machine run's tokens, no more.
  std::uint64_t tokens = 0;
  for (const char* name : {"report.json", "report.rank1.json", "report.rank2.json"})
    tokens += read_json_file(dir / name)["real_tokens"].get<std::uint64_t>();
  EXPECT_EQ(tokens, read_json_file(dir / "one.json")["real_tokens"].get<std::uint64_t>());
  auto m = merge_dir(job, dir / "merged.csv");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  expect_same_table(dir / "merged.csv", dir / "one.csv", 1e-5, "merged dynamic ranks");
}

// The ids in rank `rank`'s shards, sorted.
std::vector<std::string> rank_ids(const fs::path& shards, int rank) {
  std::vector<std::string> ids;
  for (int replica = 0; replica < 2; ++replica) {
    for (auto& id : read_table(shards / fmt::format("shard_{}_{}.csv", rank, replica)).ids)
      ids.push_back(std::move(id));
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

struct Launcher {
  std::string name;
  std::function<std::vector<std::string>(int rank, int world)> env;
  std::vector<std::string> flags{};  // besides the environment
};

class ByLauncher : public ::testing::TestWithParam<Launcher> {};

// Each launcher's variables, as that launcher sets them, give the same split as --rank/--world.
TEST_P(ByLauncher, SameSplitAsExplicitFlags) {
  const Launcher& launcher = GetParam();
  auto dir = scratch_dir("dist_env_" + launcher.name);
  Job explicit_job{.input = write_rows(dir, 80), .shards = dir / "flags", .output = dir / "x.csv"};
  explicit_job.schedule = "dynamic";
  Job env_job = explicit_job;
  env_job.shards = dir / "env";
  for (int rank = 0; rank < 3; ++rank) {
    auto r = run_cli(explicit_job.rank_args(rank, 3));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto a = env_job.args();
    a.insert(a.end(), launcher.flags.begin(), launcher.flags.end());
    CliOptions options;
    options.env = launcher.env(rank, 3);
    auto e = run_cli(a, options);
    ASSERT_EQ(e.exit_code, 0) << launcher.name << " rank " << rank << ": " << e.err;
    const Json record = read_json_file(env_job.shards / fmt::format("run_{}.json", rank));
    EXPECT_EQ(record["launcher"], launcher.name);
    // The rank's rows (its replicas share them dynamically, so only their union is fixed).
    EXPECT_EQ(rank_ids(env_job.shards, rank), rank_ids(explicit_job.shards, rank))
        << launcher.name << " rank " << rank;
  }
  ASSERT_EQ(merge_dir(env_job, dir / "env.csv").exit_code, 0);
  ASSERT_EQ(merge_dir(explicit_job, dir / "flags.csv").exit_code, 0);
  expect_same_table(dir / "env.csv", dir / "flags.csv", 0, launcher.name);
}

INSTANTIATE_TEST_SUITE_P(
    Launchers, ByLauncher,
    ::testing::Values(
        Launcher{"Slurm step",
                 [](int r, int w) {
                   return std::vector<std::string>{fmt::format("SLURM_PROCID={}", r),
                                                   fmt::format("SLURM_NTASKS={}", w),
                                                   "SLURM_LOCALID=0", "SLURM_STEP_ID=0"};
                 }},
        // sbatch --array=4-8:2: task ids 4, 6, 8; each task's batch script is a one-task step.
        Launcher{"Slurm job array",
                 [](int r, int w) {
                   return std::vector<std::string>{fmt::format("SLURM_ARRAY_TASK_ID={}", 4 + 2 * r),
                                                   "SLURM_ARRAY_TASK_MIN=4",
                                                   "SLURM_ARRAY_TASK_MAX=8",
                                                   "SLURM_ARRAY_TASK_STEP=2",
                                                   fmt::format("SLURM_ARRAY_TASK_COUNT={}", w),
                                                   "SLURM_PROCID=0",
                                                   "SLURM_NTASKS=1"};
                 }},
        Launcher{"Kubernetes Indexed Job",
                 [](int r, int) {
                   return std::vector<std::string>{fmt::format("JOB_COMPLETION_INDEX={}", r)};
                 },
                 {"--world", "3"}},
        Launcher{"torchrun",
                 [](int r, int w) {
                   return std::vector<std::string>{fmt::format("RANK={}", r),
                                                   fmt::format("WORLD_SIZE={}", w),
                                                   fmt::format("LOCAL_RANK={}", r)};
                 }}),
    [](const auto& info) {
      std::string name = info.param.name;
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

// A rank killed with SIGKILL leaves its shards resumable: the merge refuses (exit 3, naming the
// rank) unless --allow-missing; rerunning that rank alone with --resume completes the job.
TEST(Distributed, KilledRankResumedAloneCompletesTheJob) {
  for (const char* schedule : {"dynamic", "static"}) {
    const Job job = job_with_reference(std::string("dist_kill_") + schedule, schedule, 150);
    const fs::path dir = job.input.parent_path();
    for (int rank : {0, 2}) ASSERT_EQ(run_cli(job.rank_args(rank, 3)).exit_code, 0);
    CliOptions crash;
    crash.env = {"MCINFER_FAULT=shard-write:2"};
    ASSERT_EQ(run_cli(job.rank_args(1, 3), crash).exit_code, 137) << schedule;

    auto refused = merge_dir(job, dir / "merged.csv");
    EXPECT_EQ(refused.exit_code, 3) << refused.err;
    EXPECT_NE(refused.err.find("2 of 3 ranks complete; rank(s) 1 did not finish"),
              std::string::npos)
        << refused.err;
    EXPECT_FALSE(fs::exists(dir / "merged.csv"));
    auto partial = merge_dir(job, dir / "partial.csv", true);
    EXPECT_EQ(partial.exit_code, 0) << partial.err;
    EXPECT_LT(read_table(dir / "partial.csv").ids.size(), read_table(dir / "one.csv").ids.size());

    auto resumed_args = job.rank_args(1, 3);
    resumed_args.push_back("--resume");
    auto resumed = run_cli(resumed_args);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    auto m = merge_dir(job, dir / "merged.csv");
    ASSERT_EQ(m.exit_code, 0) << m.err;
    expect_same_table(dir / "merged.csv", dir / "one.csv", 1e-5, schedule);
  }
}

// Rows lost from a rank's shards after it finished: the merge names the missing ids and the
// rank that owned each.
TEST(Distributed, MergeNamesMissingIdsWithTheirRank) {
  auto dir = scratch_dir("dist_missing");
  Job job{.input = write_rows(dir, 60), .shards = dir / "ranks", .output = dir / "x.csv"};
  job.schedule = "static";
  job.replicas = 1;
  run_ranks(job, 3);
  // Rank 2's shard emptied to its header: its rows d2, d5, d8, ... are gone.
  const auto shard = job.shards / "shard_2_0.csv";
  const std::string text = read_file(shard);
  std::ofstream(shard, std::ios::trunc) << text.substr(0, text.find('\n') + 1);
  auto m = merge_dir(job, dir / "merged.csv");
  EXPECT_EQ(m.exit_code, 3) << m.err;
  EXPECT_NE(m.err.find("20 input ids have no prediction (first 10): d2 (rank 2), d5 (rank 2)"),
            std::string::npos)
      << m.err;
}

TEST(Distributed, RefusesRanksOfAnotherRunAndBadRankFlags) {
  auto dir = scratch_dir("dist_refuse");
  Job job{.input = write_rows(dir, 30), .shards = dir / "ranks", .output = dir / "x.csv"};
  ASSERT_EQ(run_cli(job.rank_args(0, 3)).exit_code, 0);
  auto other_world = run_cli(job.rank_args(1, 2));
  EXPECT_EQ(other_world.exit_code, 1) << other_world.err;
  EXPECT_NE(other_world.err.find("refused: rank 0 of this directory's run started with a "
                                 "different world, model, input or flags"),
            std::string::npos)
      << other_world.err;
  EXPECT_NE(other_world.err.find("flags.world: was 3, now 2"), std::string::npos)
      << other_world.err;
  Job other_flags = job;
  other_flags.extra = {"--max-len", "16"};
  auto flags = run_cli(other_flags.rank_args(1, 3));
  EXPECT_EQ(flags.exit_code, 1) << flags.err;
  EXPECT_NE(flags.err.find("flags.max_len"), std::string::npos) << flags.err;
  // The same rank twice without --resume.
  auto twice = run_cli(job.rank_args(0, 3));
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_NE(twice.err.find("already holds the shards of rank 0: add --resume"), std::string::npos)
      << twice.err;

  Job no_dir = job;
  auto a = no_dir.rank_args(1, 3);
  a.erase(std::find(a.begin(), a.end(), "--shards-dir"),
          std::find(a.begin(), a.end(), "--shards-dir") + 2);
  auto missing_dir = run_cli(a);
  EXPECT_EQ(missing_dir.exit_code, 2);
  EXPECT_NE(missing_dir.err.find("a distributed run needs --shards-dir"), std::string::npos)
      << missing_dir.err;
  auto bad_rank = run_cli(job.rank_args(3, 3));
  EXPECT_EQ(bad_rank.exit_code, 2);
  EXPECT_NE(bad_rank.err.find("--rank 3 is not below --world 3"), std::string::npos)
      << bad_rank.err;
  CliOptions conflicting;
  conflicting.env = {"RANK=2", "WORLD_SIZE=3"};
  auto conflict = run_cli(job.rank_args(1, 3), conflicting);
  EXPECT_EQ(conflict.exit_code, 2);
  EXPECT_NE(conflict.err.find("the torchrun launcher says rank 2 of 3"), std::string::npos)
      << conflict.err;
  // A single-process run does not start in a distributed run's directory.
  auto single = run_cli(job.args());
  EXPECT_EQ(single.exit_code, 1);
  EXPECT_NE(single.err.find("holds the shards of a distributed run"), std::string::npos)
      << single.err;
}

// Ranks sharing a host split its replica slots: with no --replicas, each of two local ranks
// (torchrun's LOCAL_WORLD_SIZE=2) runs half of what a single process would.
TEST(Distributed, RanksSharingAHostSplitItsReplicaSlots) {
  auto dir = scratch_dir("dist_local");
  Job job{.input = write_rows(dir, 20), .shards = dir / "ranks", .output = dir / "x.csv"};
  auto without_replicas = [](std::vector<std::string> a) {
    const auto it = std::find(a.begin(), a.end(), "--replicas");
    a.erase(it, it + 2);
    return a;
  };
  auto single = without_replicas(job.args());
  single[std::find(single.begin(), single.end(), "--shards-dir") - single.begin() + 1] =
      (dir / "one").string();
  single.insert(single.end(), {"--report", (dir / "one.json").string()});
  ASSERT_EQ(run_cli(single).exit_code, 0);
  const int slots = read_json_file(dir / "one.json")["replicas"].get<int>();
  for (int rank = 0; rank < 2; ++rank) {
    auto a = without_replicas(job.args());
    a.insert(a.end(), {"--report", (dir / "rank.json").string()});
    CliOptions local;
    local.env = {fmt::format("RANK={}", rank), "WORLD_SIZE=2", fmt::format("LOCAL_RANK={}", rank),
                 "LOCAL_WORLD_SIZE=2"};
    auto r = run_cli(a, local);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_EQ(read_json_file(dir / "rank.rank1.json")["replicas"], std::max(1, slots / 2));
  ASSERT_EQ(merge_dir(job, dir / "merged.csv").exit_code, 0);
  EXPECT_EQ(read_table(dir / "merged.csv").ids.size(), 20u);
}

// A rank whose share is empty succeeds, with shards that hold only their header.
TEST(Distributed, AnEmptyShareSucceeds) {
  auto dir = scratch_dir("dist_empty");
  Job job{.input = write_rows(dir, 2), .shards = dir / "ranks", .output = dir / "x.csv"};
  job.replicas = 1;
  run_ranks(job, 4);
  // Static over 4 global replicas and 2 rows: ranks 2 and 3 run padding copies of rows 0, 1.
  Job dynamic = job;
  dynamic.schedule = "dynamic";
  dynamic.shards = dir / "dynamic";
  std::size_t computed = 0, empty = 0;
  for (int rank = 0; rank < 4; ++rank) {
    auto r = run_cli(dynamic.rank_args(rank, 4));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto ids = read_table(dynamic.shards / fmt::format("shard_{}_0.csv", rank)).ids;
    computed += ids.size();
    empty += ids.empty() ? 1 : 0;
  }
  EXPECT_EQ(computed, 2u);
  EXPECT_GE(empty, 2u);
  ASSERT_EQ(merge_dir(dynamic, dir / "merged.csv").exit_code, 0);
  EXPECT_EQ(read_table(dir / "merged.csv").ids, (std::vector<std::string>{"d0", "d1"}));
}

}  // namespace
}  // namespace mcinfer::testing
