#pragma once
// Counters the replicas update and the progress line built from them: on a terminal one line on
// stderr redrawn at most 10 times a second, otherwise a log line every 10 seconds.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mcinfer::sched {

struct ReplicaCounters {
  std::atomic<std::uint64_t> rows{0};
  std::atomic<std::uint64_t> batches{0};
  std::atomic<std::uint64_t> busy_ns{0};
};

struct RunCounters {
  explicit RunCounters(int replicas) : replica(static_cast<std::size_t>(replicas)) {}
  std::atomic<std::uint64_t> rows_done{0};
  std::atomic<std::uint64_t> real_tokens{0};
  std::atomic<std::uint64_t> padded_tokens{0};
  std::atomic<std::uint64_t> input_bytes{0};  // read so far (dynamic: for the ETA)
  std::uint64_t input_size = 0;
  std::atomic<std::uint64_t> rows_total{0};  // 0 when unknown
  std::vector<ReplicaCounters> replica;
};

class ProgressPrinter {
 public:
  // interactive: a terminal (redraw one line); else periodic log lines.
  ProgressPrinter(const RunCounters& counters, bool interactive);
  ~ProgressPrinter();  // stops the thread and ends the line
  void finish();
  std::string line() const;

 private:
  void loop();
  const RunCounters& counters_;
  const bool interactive_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace mcinfer::sched
