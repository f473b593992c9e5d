// A build without an MPI library: distributed runs finish with `mcinfer merge --shards-dir`.
#include "sched/mpi_world.h"

namespace mcinfer::sched {

std::string mpi_library() { return "none"; }

std::unique_ptr<MpiWorld> join_mpi_world(const RankInfo& /*rank*/) { return nullptr; }

}  // namespace mcinfer::sched
