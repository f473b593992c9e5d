#pragma once
// The ranks of a distributed run joined through MPI, when mcinfer was built with an MPI library
// (Open MPI, found by CMake) and the launcher is an MPI one (mpirun, srun with PMI): rank 0 then
// waits for every rank and merges, so one command gives the final file as on one machine.
// Without either, each rank finishes alone and `mcinfer merge --shards-dir` is the last step.
//
// Threading: created, used and destroyed by the thread that runs the job (MPI is initialised
// with MPI_THREAD_FUNNELED; replica threads never call it).

#include <memory>
#include <string>
#include <vector>

#include "sched/launch.h"

namespace mcinfer::sched {

class MpiWorld {
 public:
  virtual ~MpiWorld() = default;  // finalises MPI

  // Collective: whether every rank's part succeeded, and which ranks failed. Waits without
  // spinning a core, since the ranks that finish first would otherwise steal it from the others.
  virtual std::vector<int> failed_ranks(bool this_rank_succeeded) = 0;
};

// "Open MPI 4.1.4" or "none" (this build has no MPI library).
std::string mpi_library();

// The MPI world of `rank`, or null when the build has no MPI library or the launcher is not an
// MPI one. Throws Error when MPI's own rank and size disagree with the launcher's variables.
std::unique_ptr<MpiWorld> join_mpi_world(const RankInfo& rank);

}  // namespace mcinfer::sched
