#pragma once
// Which rank of how many this process is, read from the launcher that started it: the schedulers
// clusters already run (Open MPI, MPICH / Intel MPI, Slurm steps and job arrays, Kubernetes
// Indexed Jobs, torchrun) or explicit --rank/--world. Every value is checked; conflicting or
// incomplete ones are a UsageError that names the variables, never a guess.
//
// Pure: the environment is passed in, so every launcher is testable without it.

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace mcinfer::sched {

struct RankInfo {
  int rank = 0;
  int world = 1;
  // This rank's index among the ranks of its host, and how many share the host, when known:
  // they share its cores (RankInfo::replica_slots, first_cpu).
  std::optional<int> local_rank, local_size;
  // Where the values came from: "single process", "--rank/--world", "Open MPI", "MPICH/PMI",
  // "Slurm step", "Slurm job array", "Kubernetes Indexed Job", "torchrun".
  std::string source = "single process";
  // The launcher runs every rank at once and an MPI library can join them (mpirun, srun with
  // PMI): rank 0 may then wait for the others and merge.
  bool mpi_launcher = false;

  bool distributed() const { return world > 1; }
  // This rank's part of a host's `host_slots` replica slots: all of them, or an equal share
  // when several ranks share the host (at least one).
  int replica_slots(int host_slots) const;
  // Where this rank's replicas start in the host's list of cores, so that ranks sharing a host
  // pin their replicas to different cores.
  int first_cpu(int replicas) const { return local_rank.value_or(0) * replicas; }
  // "rank 1 of 3 (Open MPI)"
  std::string describe() const;
};

// The environment as a lookup: nullopt when a variable is not set.
using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;
EnvLookup process_environment();

// In this order: explicit flags; Open MPI; MPICH/PMI; a Slurm step (srun) of more than one task;
// a Slurm job array; a Kubernetes Indexed Job (world from --world, which the index alone does
// not give); torchrun. A flag that a launcher contradicts, or two launchers that disagree, is
// refused. No launcher and no flags: rank 0 of 1, today's single-process run.
RankInfo detect_rank(const EnvLookup& env, std::optional<int> rank_flag,
                     std::optional<int> world_flag);

}  // namespace mcinfer::sched
