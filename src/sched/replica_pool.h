#pragma once
// The replicas of a prepared model, each on its own thread: used by `run`, `bench` and the
// pre-run precision check. Threads start together (so a wall time measures them all), are pinned
// one per physical core when each replica has one thread, and stop cleanly: the first failure
// in time is kept and rethrown once every thread has ended (a later one may be its consequence),
// and stop() asks every body to finish early.
//
// Threading: run() is called from one thread; bodies run on the pool's threads, replica r only
// ever on the thread of index r.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"

namespace mcinfer::sched {

struct PoolOptions {
  int replicas = 1;
  int threads_per_replica = 1;
  bool pin = true;  // pinning applies only with several replicas of one thread each
  // Replica r pins to the host's (first_cpu + r)-th core: ranks sharing a host start apart.
  int first_cpu = 0;
};

class ReplicaPool {
 public:
  // Makes the replicas (their buffers grow on first use, on their own threads).
  ReplicaPool(std::shared_ptr<const backend::PreparedModel> model, const PoolOptions& options);

  int size() const { return static_cast<int>(replicas_.size()); }
  backend::Replica& replica(int r) { return *replicas_.at(static_cast<std::size_t>(r)); }

  // Runs body(r, replica r) on every replica's thread at once and returns the wall seconds from
  // the first body's start to the last one's end (each thread reads the clock itself: on a
  // loaded machine the calling thread may wake after the workers finished). `on_failure` runs
  // on the failing thread right after the first failure (e.g. to stop a shared work source).
  double run(const std::function<void(int, backend::Replica&)>& body,
             const std::function<void()>& on_failure = {});

  // Asks running bodies to stop: they poll stopping().
  void stop() { stopping_ = true; }
  bool stopping() const { return stopping_.load(); }

 private:
  std::shared_ptr<const backend::PreparedModel> model_;
  PoolOptions options_;
  std::vector<std::unique_ptr<backend::Replica>> replicas_;
  std::atomic<bool> stopping_{false};
};

// Every row through the pool, as both the precision check and the public API compute a list of
// rows: split in pool.size() contiguous parts, part r through replica r on its own thread, each
// part in batches of up to `batch_tokens` tokens (one row at least). `before(r, replica)` runs on
// replica r's thread first (calibration attaches its observer there). Returns [rows, dim].
std::vector<float> predict_rows(ReplicaPool& pool, std::span<const model::SequenceInput> rows,
                                const model::TaskSpec& task, std::int64_t dim,
                                std::int64_t batch_tokens,
                                const std::function<void(int, backend::Replica&)>& before = {});

}  // namespace mcinfer::sched
