#pragma once
// Counters the replicas update and the progress line built from them: on a terminal one line on
// stderr redrawn at most 10 times a second, otherwise a log line every 10 seconds.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace mcinfer::sched {

struct ReplicaCounters {
  std::atomic<std::uint64_t> rows{0};
  std::atomic<std::uint64_t> batches{0};
  std::atomic<std::uint64_t> busy_ns{0};
};

// Written by the replica threads, read by the progress thread (all relaxed: the line is a
// glance, not an invariant).
struct RunCounters {
  explicit RunCounters(int replicas) : replica(static_cast<std::size_t>(replicas)) {}
  std::atomic<std::uint64_t> rows_done{0};  // a resumed run starts at the rows already durable
  std::atomic<std::uint64_t> real_tokens{0};
  std::atomic<std::uint64_t> padded_tokens{0};
  // Token positions the replicas computed: the real tokens on packed backends, the padded
  // shapes' positions on compiled ones (Replica::last_computed_tokens).
  std::atomic<std::uint64_t> computed_tokens{0};
  // Rows in the run: static, the sampler's padded stream (known from the start); dynamic, the
  // input's good rows, known once the whole input has been read. 0 while unknown.
  std::atomic<std::uint64_t> rows_total{0};
  std::atomic<std::uint64_t> input_bytes{0};  // of the input, read so far
  std::atomic<std::uint64_t> rows_read{0};    // dynamic: good rows read so far
  std::uint64_t input_size = 0;               // 0: unknown
  // Tokens of the rows read so far that this run computes (not the rows a resumed run skips).
  std::atomic<std::uint64_t> tokens_read{0};
  // Rows truncated to max_len so far (--long-input truncate): the printer warns once.
  std::atomic<std::uint64_t> truncated_rows{0};
  std::size_t max_len = 0;
  std::vector<ReplicaCounters> replica;
};

// One moment of a run, as the progress line shows it.
struct ProgressSnapshot {
  double seconds = 0;               // since the run started
  std::uint64_t rows = 0;           // done, a resumed run's earlier rows included
  std::uint64_t rows_this_run = 0;  // done by this process, for the rate
  std::uint64_t rows_total = 0;     // 0: not known yet
  // While rows_total is not known: the rows read per byte read times the input's size; 0: none.
  double rows_total_estimate = 0;
  std::uint64_t real_tokens = 0;
  std::uint64_t padded_tokens = 0;
  std::vector<double> busy;  // per replica, the share of `seconds` spent on batches
};

// "3157/20000 rows (15.7%) | 300.0 rows/s | 9011 tok/s | padding 3.1% | ETA 0:24 | busy 98% 97%";
// with only an estimated total "3157/~20000 rows (~15.7%) | ...", with none "3157 rows | ...";
// without an ETA, no ETA.
std::string format_progress(const ProgressSnapshot& s, std::optional<double> eta_seconds);

// "0:24", "12:05", "1:02:03".
std::string format_duration(double seconds);

// Tokens this run still has to compute: those read but not computed, plus, while the input is
// not all read, the unread bytes at the density (tokens to compute per byte) of the bytes read.
// The density counts the rows a resumed run skips as bytes without tokens, so it also
// extrapolates their share. Size 0 (unknown) extrapolates nothing.
double remaining_tokens(std::uint64_t tokens_read, std::uint64_t tokens_done,
                        std::uint64_t bytes_read, std::uint64_t input_size);

// Time left, from work measured in tokens: a row's cost grows with its tokens, and the dynamic
// schedule runs each window's longest rows first, so a rate in rows makes an early estimate far
// too long (and one from the bytes read, which run a window ahead of the work, far too short).
// The rate is taken over the later half of the time so far: the start (the first window
// tokenised while replicas wait, GEMM kernels compiled for each new batch shape) is forgotten
// as the run goes on, and the estimate steadies as the span grows. No estimate is given before
// kMinSeconds, before kMinFraction of the work, nor until the rate over the last quarter of the
// time agrees with it within kSettled (the start is then out of the span).
// Not thread-safe: one owner feeds it and asks it.
class EtaEstimator {
 public:
  static constexpr double kMinSeconds = 3.0;
  static constexpr double kMinFraction = 0.05;
  static constexpr double kSettled = 0.2;

  // `seconds` since the run started (non-decreasing); `done`: tokens computed so far.
  void add(double seconds, double done);
  // Seconds left for `remaining` more tokens, or nullopt while the rate is not settled.
  std::optional<double> eta(double remaining);

 private:
  bool settled_ = false;
  std::pair<double, double> latest_;               // (seconds, done)
  std::deque<std::pair<double, double>> samples_;  // earlier ones, thinned, the oldest kept
};

class ProgressPrinter {
 public:
  // interactive: a terminal (redraw one line); else periodic log lines.
  ProgressPrinter(const RunCounters& counters, bool interactive);
  ~ProgressPrinter();  // stops the thread and ends the line
  void finish();

 private:
  ProgressSnapshot snapshot() const;
  std::string line();  // samples the counters into eta_; the printer thread only
  void loop();
  // Once, when the first rows have been truncated: a line of its own.
  void warn_truncation();
  bool warned_truncation_ = false;  // the printer thread only
  const RunCounters& counters_;
  const bool interactive_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  const std::uint64_t rows_at_start_;
  EtaEstimator eta_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace mcinfer::sched
