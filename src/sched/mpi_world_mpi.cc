// The MPI library's side of MpiWorld (compiled only when CMake found MPI).
#include <mpi.h>

#include <chrono>
#include <thread>

#include "core/error.h"
#include "sched/mpi_world.h"

namespace mcinfer::sched {
namespace {

void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  fail("MPI: {} failed: {}", what, std::string(text, static_cast<std::size_t>(length)));
}

class MpiLibraryWorld : public MpiWorld {
 public:
  explicit MpiLibraryWorld(const RankInfo& rank) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    int mpi_rank = 0;
    check(MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    if (mpi_rank != rank.rank || size_ != rank.world) {
      fail("MPI says rank {} of {}, the launcher's variables {}: not one MPI job", mpi_rank, size_,
           rank.describe());
    }
  }
  ~MpiLibraryWorld() override { MPI_Finalize(); }

  std::vector<int> failed_ranks(bool this_rank_succeeded) override {
    const int size = size_;
    int mine = this_rank_succeeded ? 0 : 1;
    std::vector<int> all(static_cast<std::size_t>(size), 0);
    MPI_Request request;
    check(MPI_Iallgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD, &request),
          "MPI_Iallgather");
    // A blocking collective busy-polls in Open MPI; poll gently instead.
    int done = 0;
    while (true) {
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::vector<int> failed;
    for (int r = 0; r < size; ++r)
      if (all[static_cast<std::size_t>(r)] != 0) failed.push_back(r);
    return failed;
  }

 private:
  int size_ = 0;
};

}  // namespace

std::string mpi_library() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  std::string text(version, static_cast<std::size_t>(length));
  // "Open MPI v4.1.4, package: ..." -> its first clause.
  if (auto comma = text.find(','); comma != std::string::npos) text.resize(comma);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::unique_ptr<MpiWorld> join_mpi_world(const RankInfo& rank) {
  if (!rank.mpi_launcher || !rank.distributed()) return nullptr;
  return std::make_unique<MpiLibraryWorld>(rank);
}

}  // namespace mcinfer::sched
