// Rank and world from every launcher's variables, as each launcher sets them (Open MPI's
// mpirun, MPICH's hydra, Slurm's srun and job arrays, Kubernetes Indexed Jobs, torchrun), and
// every conflicting or incomplete combination refused by name.
#include "sched/launch.h"

#include <gtest/gtest.h>

#include <map>

#include "core/error.h"

namespace mcinfer::sched {
namespace {

using Env = std::map<std::string, std::string, std::less<>>;

EnvLookup lookup(const Env& env) {
  return [&env](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

RankInfo detect(const Env& env, std::optional<int> rank = {}, std::optional<int> world = {}) {
  return detect_rank(lookup(env), rank, world);
}

std::string refusal(const Env& env, std::optional<int> rank = {}, std::optional<int> world = {}) {
  try {
    const RankInfo info = detect(env, rank, world);
    return "accepted: " + info.describe();
  } catch (const UsageError& e) {
    return e.what();
  }
}

void expect_rank(const RankInfo& info, int rank, int world, std::optional<int> local,
                 const std::string& source) {
  EXPECT_EQ(info.rank, rank) << source;
  EXPECT_EQ(info.world, world) << source;
  EXPECT_EQ(info.local_rank, local) << source;
  EXPECT_EQ(info.source, source);
}

void expect_refused(const std::string& message, std::string_view part) {
  EXPECT_NE(message.find(part), std::string::npos) << message;
  EXPECT_EQ(message.find("accepted: "), std::string::npos) << message;
}

TEST(Launch, NoLauncherIsOneProcess) {
  const RankInfo info = detect({});
  expect_rank(info, 0, 1, std::nullopt, "single process");
  EXPECT_FALSE(info.distributed());
  EXPECT_EQ(info.describe(), "rank 0 of 1 (single process)");
  EXPECT_EQ(detect({}, std::nullopt, 1).world, 1);  // --world 1 alone: today's run
}

TEST(Launch, ExplicitFlags) {
  const RankInfo info = detect({}, 2, 4);
  expect_rank(info, 2, 4, std::nullopt, "--rank/--world");
  EXPECT_FALSE(info.mpi_launcher);
  expect_refused(refusal({}, 4, 4), "--rank 4 is not below --world 4");
  expect_refused(refusal({}, 1), "--rank 1 needs --world");
  expect_refused(refusal({}, std::nullopt, 3), "--world 3 needs --rank");
  expect_refused(refusal({}, 0, 0), "--world must be at least 1");
  expect_refused(refusal({}, -1, 2), "--rank must be at least 0");
}

TEST(Launch, OpenMpi) {
  const Env env = {{"OMPI_COMM_WORLD_RANK", "1"},
                   {"OMPI_COMM_WORLD_SIZE", "3"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}};
  const RankInfo info = detect(env);
  expect_rank(info, 1, 3, 0, "Open MPI");
  EXPECT_TRUE(info.mpi_launcher);
  EXPECT_EQ(info.describe(), "rank 1 of 3 (Open MPI)");
  // Flags that agree are fine; flags that do not are refused.
  EXPECT_EQ(detect(env, 1, 3).rank, 1);
  expect_refused(refusal(env, 0, 3), "the Open MPI launcher says rank 1 of 3");
  expect_refused(refusal(env, std::nullopt, 2), "OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=3");
  expect_refused(refusal({{"OMPI_COMM_WORLD_RANK", "1"}}),
                 "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not");
  expect_refused(refusal({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "3"}}),
                 "rank 3 is not below the world size 3");
  expect_refused(refusal({{"OMPI_COMM_WORLD_RANK", "x1"}, {"OMPI_COMM_WORLD_SIZE", "3"}}),
                 "OMPI_COMM_WORLD_RANK=x1: not a non-negative integer");
}

TEST(Launch, MpichPmi) {
  const RankInfo info = detect({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "1"}});
  expect_rank(info, 2, 4, 1, "MPICH/PMI");
  EXPECT_TRUE(info.mpi_launcher);
  expect_refused(refusal({{"PMI_SIZE", "4"}}), "PMI_SIZE is set but PMI_RANK is not");
}

TEST(Launch, SlurmStep) {
  const Env env = {
      {"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "3"}, {"SLURM_LOCALID", "2"}, {"SLURM_STEP_ID", "0"}};
  const RankInfo info = detect(env);
  expect_rank(info, 2, 3, 2, "Slurm step");
  EXPECT_FALSE(info.mpi_launcher);
  Env pmix = env;
  pmix["PMIX_RANK"] = "2";
  EXPECT_TRUE(detect(pmix).mpi_launcher);
  // A one-task step (an array task's batch script, or `srun -n 1`) does not split the input.
  EXPECT_EQ(detect({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_STEP_ID", "0"}}).world,
            1);
  // The batch script of `sbatch --ntasks=3` running mcinfer without srun is one process.
  EXPECT_EQ(detect({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "3"}}).world, 1);
  expect_refused(refusal({{"SLURM_NTASKS", "3"}, {"SLURM_STEP_ID", "1"}}),
                 "SLURM_NTASKS is set but SLURM_PROCID is not");
}

// Ranks sharing a host: how many there are, so that each takes its share of the host's cores.
TEST(Launch, RanksOnOneHostShareItsCores) {
  const RankInfo ompi = detect({{"OMPI_COMM_WORLD_RANK", "3"},
                                {"OMPI_COMM_WORLD_SIZE", "4"},
                                {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(ompi.local_size, 2);
  EXPECT_EQ(ompi.replica_slots(16), 8);
  EXPECT_EQ(ompi.first_cpu(8), 8);
  EXPECT_EQ(ompi.replica_slots(1), 1);
  EXPECT_EQ(detect({{"PMI_RANK", "0"}, {"PMI_SIZE", "3"}, {"MPI_LOCALNRANKS", "3"}}).local_size, 3);
  EXPECT_EQ(detect({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "2"}}).local_size, 2);
  // Slurm says how many tasks each node runs: "3", "2(x4)"; with uneven nodes it does not.
  for (const auto& [per_node, want] : std::vector<std::pair<std::string, std::optional<int>>>{
           {"3", 3}, {"2(x4)", 2}, {"2(x3),1", std::nullopt}, {"x", std::nullopt}}) {
    const RankInfo slurm = detect({{"SLURM_PROCID", "0"},
                                   {"SLURM_NTASKS", "3"},
                                   {"SLURM_STEP_ID", "0"},
                                   {"SLURM_STEP_TASKS_PER_NODE", per_node}});
    EXPECT_EQ(slurm.local_size, want) << per_node;
  }
  // Alone on its host (or not said): every slot, from the first core.
  const RankInfo alone = detect({}, 1, 3);
  EXPECT_EQ(alone.replica_slots(16), 16);
  EXPECT_EQ(alone.first_cpu(16), 0);
}

TEST(Launch, MpirunInsideASlurmAllocationIsTheMpiRank) {
  // sbatch --ntasks=3 running mpirun -np 3: every rank inherits the batch step's SLURM_*.
  const RankInfo info = detect({{"SLURM_PROCID", "0"},
                                {"SLURM_NTASKS", "3"},
                                {"SLURM_STEP_ID", "0"},
                                {"OMPI_COMM_WORLD_RANK", "2"},
                                {"OMPI_COMM_WORLD_SIZE", "3"}});
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.source, "Open MPI");
}

TEST(Launch, SlurmJobArray) {
  // sbatch --array=0-2: the batch script of task 1.
  const RankInfo info = detect({{"SLURM_ARRAY_TASK_ID", "1"},
                                {"SLURM_ARRAY_TASK_MIN", "0"},
                                {"SLURM_ARRAY_TASK_MAX", "2"},
                                {"SLURM_ARRAY_TASK_COUNT", "3"},
                                {"SLURM_PROCID", "0"},
                                {"SLURM_NTASKS", "1"}});
  expect_rank(info, 1, 3, std::nullopt, "Slurm job array");
  // Ids need not start at 0, and a step spaces them: --array=10-14:2 is 10, 12, 14.
  const Env stepped = {{"SLURM_ARRAY_TASK_ID", "14"},
                       {"SLURM_ARRAY_TASK_MIN", "10"},
                       {"SLURM_ARRAY_TASK_STEP", "2"},
                       {"SLURM_ARRAY_TASK_COUNT", "3"}};
  EXPECT_EQ(detect(stepped).rank, 2);
  expect_refused(refusal({{"SLURM_ARRAY_TASK_ID", "13"},
                          {"SLURM_ARRAY_TASK_MIN", "10"},
                          {"SLURM_ARRAY_TASK_STEP", "2"},
                          {"SLURM_ARRAY_TASK_COUNT", "3"}}),
                 "the task ids are not min + k × step");
  expect_refused(refusal({{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_MIN", "0"}}),
                 "SLURM_ARRAY_TASK_COUNT is not");
  // --array=1,5,9 without a step: task 9 would be rank 8 of 3.
  expect_refused(refusal({{"SLURM_ARRAY_TASK_ID", "9"},
                          {"SLURM_ARRAY_TASK_MIN", "1"},
                          {"SLURM_ARRAY_TASK_COUNT", "3"}}),
                 "rank 8 is not below the world size 3");
}

TEST(Launch, KubernetesIndexedJob) {
  const RankInfo info = detect({{"JOB_COMPLETION_INDEX", "4"}}, std::nullopt, 5);
  expect_rank(info, 4, 5, std::nullopt, "Kubernetes Indexed Job");
  expect_refused(refusal({{"JOB_COMPLETION_INDEX", "4"}}),
                 "a Kubernetes Indexed Job gives the rank but not the world; add --world N");
  expect_refused(refusal({{"JOB_COMPLETION_INDEX", "5"}}, std::nullopt, 5),
                 "rank 5 is not below the world size 5");
  expect_refused(refusal({{"JOB_COMPLETION_INDEX", "1"}}, 0, 5),
                 "the Kubernetes Indexed Job launcher says rank 1 of 5");
}

TEST(Launch, Torchrun) {
  const RankInfo info = detect({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "3"}});
  expect_rank(info, 3, 8, 3, "torchrun");
  expect_refused(refusal({{"WORLD_SIZE", "8"}}), "WORLD_SIZE is set but RANK is not");
}

}  // namespace
}  // namespace mcinfer::sched
