// Real launchers from Debian's packages: Open MPI's mpirun, and a one-node Slurm cluster
// (scripts/slurm_cluster.sh; .ci/run starts it and sets SLURM_CONF): srun steps, with and
// without PMIx, and a job array followed by its dependent merge job, using the scripts of
// examples/slurm as a user would. Each run's output must equal the one-machine run's with the
// same global replica count. MCINFER_REQUIRE_MPI / MCINFER_REQUIRE_SLURM turn a missing launcher
// from a skip into a failure (CI sets both).
#include <gtest/gtest.h>

#include <unistd.h>

#include "core/json.h"
#include "support/distributed.h"

namespace mcinfer::testing {
namespace {

// Whether this mcinfer was built with an MPI library (`--version` says which).
bool built_with_mpi() { return run_cli({"--version"}).out.find("MPI: none") == std::string::npos; }

// The mpirun tests skip without mpirun or an MPI build, and fail instead under
// MCINFER_REQUIRE_MPI.
class Mpi : public ::testing::Test {
 protected:
  void SetUp() override {
    if (fs::exists(kMpirun) && built_with_mpi()) return;
    if (std::getenv("MCINFER_REQUIRE_MPI"))
      FAIL() << "MCINFER_REQUIRE_MPI is set but mpirun or an MPI build is missing";
    GTEST_SKIP() << "no mpirun, or mcinfer built without MPI";
  }
  static constexpr const char* kMpirun = "/usr/bin/mpirun";

  // `mpirun -np 3 mcinfer ARGS...` with `env` exported to every rank.
  static CliResult mpirun(const std::vector<std::string>& args,
                          const std::vector<std::string>& env = {}) {
    std::vector<std::string> a = {"--oversubscribe", "-np", "3"};
    if (::geteuid() == 0) a.push_back("--allow-run-as-root");
    for (const auto& e : env) a.insert(a.end(), {"-x", e});
    a.push_back(cli_path().string());
    a.insert(a.end(), args.begin(), args.end());
    CliOptions options;
    options.program = kMpirun;
    return run_cli(a, options);
  }
};

// Under mpirun every rank starts at once and rank 0 merges: one command, the final file.
TEST_F(Mpi, RankZeroMergesEveryRank) {
  for (const char* schedule : {"static", "dynamic"}) {
    const Job job = job_with_reference(std::string("dist_mpi_") + schedule, schedule, 120);
    auto r = mpirun(job.args());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    expect_same_table(job.output, reference_of(job), 1e-5, schedule);
    for (int rank = 0; rank < 3; ++rank) {
      const Json record = read_json_file(job.shards / fmt::format("run_{}.json", rank));
      EXPECT_EQ(record["launcher"], "Open MPI");
      EXPECT_EQ(record["complete"], true);
    }
  }
}

// Every rank killed (SIGKILL) at its second batch: mpirun fails, nothing is written; the same
// command with --resume finishes every rank from its durable batches and merges.
TEST_F(Mpi, KilledJobResumesWithTheSameCommand) {
  const Job job = job_with_reference("dist_mpi_kill", "dynamic", 150);
  auto killed = mpirun(job.args(), {"MCINFER_FAULT=shard-write:2"});
  EXPECT_NE(killed.exit_code, 0) << killed.err;
  EXPECT_FALSE(fs::exists(job.output));
  auto resumed_args = job.args();
  resumed_args.push_back("--resume");
  auto resumed = mpirun(resumed_args);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  expect_same_table(job.output, reference_of(job), 1e-5, "resumed mpirun job");
}

// Whether a Slurm cluster is up for this test (SLURM_CONF names its configuration).
bool slurm_cluster() {
  const char* conf = std::getenv("SLURM_CONF");
  return conf != nullptr && fs::exists(conf) && fs::exists("/usr/bin/srun");
}

// The Slurm tests skip without a cluster, and fail instead under MCINFER_REQUIRE_SLURM.
class Slurm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (slurm_cluster()) return;
    if (std::getenv("MCINFER_REQUIRE_SLURM")) FAIL() << "MCINFER_REQUIRE_SLURM: no Slurm cluster";
    GTEST_SKIP() << "no Slurm cluster (scripts/slurm_cluster.sh start DIR, then SLURM_CONF)";
  }
};

// Every Slurm log the jobs of a test wrote, for a failure's message.
std::string job_logs(const fs::path& dir) {
  std::string logs;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".log")
      logs += entry.path().filename().string() + ":\n" + read_file(entry.path());
  }
  return logs;
}

// srun -n 3: three ranks of one step. Without an MPI plugin the ranks finish alone and
// `mcinfer merge --shards-dir` is the last step; with --mpi=pmix rank 0 merges.
TEST_F(Slurm, SrunStepsSplitTheJobAndMerge) {
  for (const char* schedule : {"static", "dynamic"}) {
    const Job job = job_with_reference(std::string("slurm_srun_") + schedule, schedule, 120);
    const fs::path dir = job.input.parent_path();
    CliOptions srun;
    srun.program = "/usr/bin/srun";
    std::vector<std::string> a = {"-n", "3", cli_path().string()};
    for (const auto& arg : job.args()) a.push_back(arg);
    auto r = run_cli(a, srun);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(fs::exists(job.output)) << "no MPI plugin: no rank merges";
    EXPECT_EQ(read_json_file(job.shards / "run_2.json")["launcher"], "Slurm step");
    auto m = merge_dir(job, dir / "merged.csv");
    ASSERT_EQ(m.exit_code, 0) << m.err;
    expect_same_table(dir / "merged.csv", dir / "one.csv", 1e-5, schedule);

    if (!built_with_mpi()) continue;
    Job pmix = job;
    pmix.shards = dir / "pmix";
    std::vector<std::string> b = {"--mpi=pmix", "-n", "3", cli_path().string()};
    for (const auto& arg : pmix.args()) b.push_back(arg);
    auto p = run_cli(b, srun);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    expect_same_table(job.output, dir / "one.csv", 1e-5, std::string("pmix ") + schedule);
  }
}

// The README's recipe: examples/slurm/run_array.sbatch as a 3-task array, then
// examples/slurm/merge.sbatch with --dependency=afterok on it.
TEST_F(Slurm, JobArrayThenDependentMergeJob) {
  Job job = job_with_reference("slurm_array", "static", 150);
  const fs::path dir = job.input.parent_path();
  CliOptions sbatch;
  sbatch.program = "/usr/bin/sbatch";
  sbatch.env = {"MODEL=" + fixture(kDistributedModel).string(),
                "INPUT=" + job.input.string(),
                "OUTPUT=" + job.output.string(),
                "SHARDS=" + job.shards.string(),
                "MCINFER=" + cli_path().string(),
                "MCINFER_ARGS=--schedule static --replicas 2 --batch-size 3 --precision fp32"};
  const fs::path examples = source_dir() / "examples" / "slurm";
  auto array = run_cli({"--parsable", "--array=0-2", "--chdir", dir.string(),
                        (examples / "run_array.sbatch").string()},
                       sbatch);
  ASSERT_EQ(array.exit_code, 0) << array.err;
  std::string job_id = array.out.substr(0, array.out.find_first_of(";\n"));
  auto merge = run_cli({"--parsable", "--wait", "--dependency=afterok:" + job_id, "--chdir",
                        dir.string(), (examples / "merge.sbatch").string()},
                       sbatch);
  ASSERT_EQ(merge.exit_code, 0) << merge.err << job_logs(dir);
  expect_same_table(job.output, dir / "one.csv", 0, "array + merge job");
  const Json record = read_json_file(job.shards / "run_1.json");
  EXPECT_EQ(record["launcher"], "Slurm job array");
  EXPECT_EQ(record["world"], 3);
}

}  // namespace
}  // namespace mcinfer::testing
