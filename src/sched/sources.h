#pragma once
// The two in-process schedules.
//   static:  exactly PyTorch's DistributedSampler(shuffle=False, drop_last=False) and fixed
//            batches, for parity with existing pipelines (padded duplicates included).
//   dynamic: rows read ahead in windows, sorted by length inside each window, cut into batches
//            by a token budget and handed to whichever replica asks first.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <vector>

#include "core/enum_names.h"
#include "sched/row_feeder.h"
#include "sched/work.h"

namespace mcinfer::sched {

// The indices DistributedSampler gives `rank`: the index list padded to a multiple of
// `replicas` by repeating it from the start, then every replicas-th index from rank.
std::vector<std::uint64_t> distributed_sampler_indices(std::uint64_t n, int replicas, int rank);

// --schedule: which of the two sources below a run takes its batches from.
enum class Schedule { kDynamic, kStatic };
inline constexpr EnumNames<Schedule, 2> kScheduleNames{
    {{{Schedule::kDynamic, "dynamic"}, {Schedule::kStatic, "static"}}}};
inline std::string_view schedule_name(Schedule s) { return kScheduleNames.name(s); }

// Which replicas of DistributedSampler's world this process runs: global replicas
// [first_replica, first_replica + local_replicas) of global_replicas (one process: all of them).
struct StaticLayout {
  int global_replicas = 1;
  int first_replica = 0;
  int local_replicas = 1;
};

class StaticSource : public WorkSource {
 public:
  // One pass over the input: the rows' own positions are known as they stream by, and the
  // padding, which needs the row count, comes after the last row. The feeder returns at least
  // this process's rows and the first global_replicas rows (RowShare::static_sampler).
  // Positions of the padded stream marked in `done` (a resumed run) are left out; batches are
  // whole, so the batches still to do are exactly the original ones.
  StaticSource(RowFeeder& feeder, StaticLayout layout, int batch_size, std::vector<bool> done = {});
  std::optional<Batch> next(int replica) override;
  void stop() override;

  // Positions of the padded stream this process computes (one process: ceil(rows / replicas) ×
  // replicas), once the input has been read to its end; 0 before. Any thread.
  std::uint64_t padded_total() const { return padded_total_.load(std::memory_order_acquire); }
  // Tokens of the input rows read so far that a resumed run had already done (left out). Any
  // thread.
  std::uint64_t skipped_tokens() const { return skipped_tokens_.load(std::memory_order_relaxed); }

 private:
  // Takes the next position of the padded stream that is this process's; caller holds mutex_.
  void produce_one();
  // Local replica of padded-stream position p, or -1 when another process runs it.
  int local_replica(std::uint64_t position) const;
  void add(std::uint64_t position, WorkItem item);

  RowFeeder& feeder_;
  const std::uint64_t global_;  // replicas of the sampler's world
  std::uint64_t rows_ = 0;      // once input_done_: the input's good rows
  std::uint64_t total_ = 0;     // once input_done_: ceil(rows_ / global_) * global_
  std::atomic<std::uint64_t> padded_total_{0};
  const int first_;
  const int local_;
  const int batch_size_;
  std::mutex mutex_;
  bool input_done_ = false;
  std::uint64_t next_padding_ = 0;  // once input_done_: the next padding position to consider
  bool finished_ = false;
  std::vector<std::vector<WorkItem>> head_;  // the first rows (their windows), for the padding
  std::vector<Batch> pending_;               // per local replica, filling
  std::vector<std::deque<Batch>> ready_;
  std::uint64_t batches_ = 0;
  bool stopped_ = false;
  std::vector<bool> done_;
  std::atomic<std::uint64_t> skipped_tokens_{0};
};

struct DynamicOptions {
  DynamicOptions() = default;
  DynamicOptions(std::size_t window, std::int64_t tokens)
      : window_rows(window), batch_tokens(tokens) {}
  std::size_t window_rows = 8192;    // rows sorted together
  std::int64_t batch_tokens = 4096;  // budget of padded tokens (rows × longest row) per batch
  // A backend of compiled shapes (backend::BatchShape::kBuckets): the length a batch is padded
  // to by its longest row, and the multiple of rows it is padded to. Unset: packed batches.
  std::function<std::int64_t(std::int64_t)> padded_length;
  std::int64_t row_multiple = 1;
};

class DynamicSource : public WorkSource {
 public:
  DynamicSource(RowFeeder& feeder, const DynamicOptions& options, int replicas);
  std::optional<Batch> next(int replica) override;
  void stop() override;

 private:
  // Reads, sorts and cuts one window; caller holds produce_mutex_. False when input is exhausted.
  bool produce_window();
  void cut_packed(std::vector<WorkItem>& window, std::int64_t budget, std::vector<Batch>& batches);
  void cut_to_shapes(std::vector<WorkItem>& window, std::int64_t budget,
                     std::vector<Batch>& batches);
  // produce_window() unless the input is done or the source stopped; caller holds
  // produce_mutex_. A read that throws stops the source before the lock is released, so that a
  // replica waiting for the lock does not read on past the bad row (and report a later one).
  void refill();

  RowFeeder& feeder_;
  const DynamicOptions options_;
  const int replicas_;
  std::mutex produce_mutex_;  // serialises reading the input
  std::mutex queue_mutex_;
  std::deque<Batch> queue_;
  std::atomic<bool> input_done_{false};
  std::atomic<bool> stopped_{false};
  std::uint64_t batches_ = 0;  // guarded by produce_mutex_
};

}  // namespace mcinfer::sched
