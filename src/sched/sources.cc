#include "sched/sources.h"

#include <algorithm>

#include "core/error.h"

namespace mcinfer::sched {

std::vector<std::uint64_t> distributed_sampler_indices(std::uint64_t n, int replicas, int rank) {
  const auto r = static_cast<std::uint64_t>(replicas);
  const std::uint64_t total = (n + r - 1) / r * r;
  std::vector<std::uint64_t> out;
  if (n == 0) return out;
  for (std::uint64_t p = static_cast<std::uint64_t>(rank); p < total; p += r)
    out.push_back(p < n ? p : (p - n) % n);
  return out;
}

StaticSource::StaticSource(RowFeeder& feeder, std::uint64_t rows, int replicas, int batch_size,
                           std::vector<bool> done)
    : feeder_(feeder),
      rows_(rows),
      total_(rows == 0 ? 0 : (rows + replicas - 1) / replicas * replicas),
      replicas_(replicas),
      batch_size_(batch_size),
      pending_(static_cast<std::size_t>(replicas)),
      ready_(static_cast<std::size_t>(replicas)),
      done_(std::move(done)) {}

void StaticSource::produce_one() {
  WorkItem item;
  if (position_ < rows_) {
    if (!feeder_.next(item)) {
      fail("input changed while running: {} rows counted, only {} read", rows_, position_);
    }
    // The padding repeats the first rows; keep as many as can be needed.
    if (head_.size() < static_cast<std::size_t>(replicas_) && head_.size() < rows_)
      head_.push_back(item);
  } else {
    item = head_[static_cast<std::size_t>((position_ - rows_) % rows_)];
  }
  const auto r = static_cast<std::size_t>(position_ % static_cast<std::uint64_t>(replicas_));
  item.position = position_;
  const bool done = position_ < done_.size() && done_[position_];
  if (done && position_ < rows_) {
    skipped_tokens_.store(skipped_tokens_.load(std::memory_order_relaxed) + item.ids.size(),
                          std::memory_order_relaxed);
  }
  if (!done) pending_[r].add(std::move(item));
  ++position_;
  auto flush = [&](std::size_t replica) {
    if (pending_[replica].items.empty()) return;
    pending_[replica].number = batches_++;
    ready_[replica].push_back(std::move(pending_[replica]));
    pending_[replica] = Batch();
  };
  if (static_cast<int>(pending_[r].items.size()) == batch_size_) flush(r);
  if (position_ == total_) {
    for (std::size_t i = 0; i < pending_.size(); ++i) flush(i);
  }
}

std::optional<Batch> StaticSource::next(int replica) {
  std::lock_guard lock(mutex_);
  auto& queue = ready_[static_cast<std::size_t>(replica)];
  while (!stopped_ && queue.empty() && position_ < total_) {
    try {
      produce_one();
    } catch (...) {
      stopped_ = true;
      throw;
    }
  }
  if (stopped_ || queue.empty()) return std::nullopt;
  Batch batch = std::move(queue.front());
  queue.pop_front();
  return batch;
}

void StaticSource::stop() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
}

DynamicSource::DynamicSource(RowFeeder& feeder, const DynamicOptions& options, int replicas)
    : feeder_(feeder), options_(options), replicas_(replicas) {}

bool DynamicSource::produce_window() {
  std::vector<WorkItem> window;
  window.reserve(options_.window_rows);
  WorkItem item;
  while (window.size() < options_.window_rows && feeder_.next(item))
    window.push_back(std::move(item));
  if (window.empty()) return false;
  // Stable: rows of equal length keep their input order, so batches are reproducible.
  std::stable_sort(window.begin(), window.end(), [](const WorkItem& a, const WorkItem& b) {
    return a.ids.size() < b.ids.size();
  });
  // A small window (a small input, or the input's end) is cut finer, so that every replica gets
  // several batches instead of one replica getting the whole window.
  std::int64_t window_tokens = 0;
  for (const auto& w : window) window_tokens += static_cast<std::int64_t>(w.ids.size());
  const std::int64_t budget =
      std::min(options_.batch_tokens,
               std::max<std::int64_t>(static_cast<std::int64_t>(window.back().ids.size()),
                                      window_tokens / (4 * static_cast<std::int64_t>(replicas_))));
  std::vector<Batch> batches;
  Batch current;
  for (auto& w : window) {
    // Ascending lengths: the row being added is the batch's longest.
    const auto longest = static_cast<std::int64_t>(w.ids.size());
    if (!current.items.empty() &&
        static_cast<std::int64_t>(current.items.size() + 1) * longest > budget) {
      batches.push_back(std::move(current));
      current = Batch();
    }
    current.add(std::move(w));
  }
  if (!current.items.empty()) batches.push_back(std::move(current));
  // Longest batches first: the costly ones start early and the run ends on short ones.
  std::reverse(batches.begin(), batches.end());
  for (auto& b : batches) b.number = batches_++;
  std::lock_guard lock(queue_mutex_);
  for (auto& b : batches) queue_.push_back(std::move(b));
  return true;
}

void DynamicSource::refill() {
  if (stopped_ || input_done_) return;
  try {
    if (!produce_window()) input_done_ = true;
  } catch (...) {
    stopped_ = true;
    throw;
  }
}

std::optional<Batch> DynamicSource::next(int /*replica*/) {
  while (!stopped_) {
    std::optional<Batch> batch;
    bool running_low = false;
    {
      std::lock_guard lock(queue_mutex_);
      if (!queue_.empty()) {
        batch = std::move(queue_.front());
        queue_.pop_front();
        running_low = queue_.size() < static_cast<std::size_t>(replicas_);
      }
    }
    if (batch) {
      // Refill ahead of need when no other replica is already reading.
      if (running_low && !input_done_) {
        std::unique_lock produce(produce_mutex_, std::try_to_lock);
        if (produce.owns_lock()) refill();
      }
      return batch;
    }
    if (input_done_) return std::nullopt;
    std::lock_guard produce(produce_mutex_);
    bool empty;
    {
      std::lock_guard lock(queue_mutex_);
      empty = queue_.empty();
    }
    if (empty) refill();
  }
  return std::nullopt;
}

void DynamicSource::stop() { stopped_ = true; }

}  // namespace mcinfer::sched
