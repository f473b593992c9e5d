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

StaticSource::StaticSource(RowFeeder& feeder, StaticLayout layout, int batch_size,
                           std::vector<bool> done)
    : feeder_(feeder),
      global_(static_cast<std::uint64_t>(layout.global_replicas)),
      first_(layout.first_replica),
      local_(layout.local_replicas),
      batch_size_(batch_size),
      pending_(static_cast<std::size_t>(layout.local_replicas)),
      ready_(static_cast<std::size_t>(layout.local_replicas)),
      done_(std::move(done)) {}

int StaticSource::local_replica(std::uint64_t position) const {
  const auto r = static_cast<int>(position % global_) - first_;
  return r >= 0 && r < local_ ? r : -1;
}

void StaticSource::produce_one() {
  WorkItem item;
  std::uint64_t position = 0;
  if (!input_done_) {
    if (!feeder_.next(item)) {
      input_done_ = true;
      rows_ = feeder_.stats().rows;
      total_ = (rows_ + global_ - 1) / global_ * global_;
      padded_total_.store(total_ / global_ * static_cast<std::uint64_t>(local_),
                          std::memory_order_release);
      next_padding_ = rows_;
      return;
    }
    position = item.ordinal;
    // The padding repeats the first rows; keep as many as can be needed (the feeder returns
    // them to every process), each with all its windows.
    if (position < global_) {
      if (item.window == 0) head_.emplace_back();
      head_.back().push_back(item);
    }
    if (local_replica(position) < 0) return;
  } else {
    while (next_padding_ < total_ && local_replica(next_padding_) < 0) ++next_padding_;
    if (next_padding_ == total_) {
      finished_ = true;
      for (std::size_t i = 0; i < pending_.size(); ++i) {
        if (pending_[i].items.empty()) continue;
        pending_[i].number = batches_++;
        ready_[i].push_back(std::move(pending_[i]));
        pending_[i] = Batch();
      }
      return;
    }
    position = next_padding_++;
    for (const WorkItem& window : head_[static_cast<std::size_t>((position - rows_) % rows_)])
      add(position, window);
    return;
  }
  add(position, std::move(item));
}

void StaticSource::add(std::uint64_t position, WorkItem item) {
  const auto r = static_cast<std::size_t>(local_replica(position));
  item.position = position;
  const bool done = position < done_.size() && done_[position];
  if (done && !input_done_) {
    skipped_tokens_.store(skipped_tokens_.load(std::memory_order_relaxed) + item.ids.size(),
                          std::memory_order_relaxed);
  }
  if (done) return;
  pending_[r].add(std::move(item));
  if (static_cast<int>(pending_[r].items.size()) == batch_size_) {
    pending_[r].number = batches_++;
    ready_[r].push_back(std::move(pending_[r]));
    pending_[r] = Batch();
  }
}

std::optional<Batch> StaticSource::next(int replica) {
  std::lock_guard lock(mutex_);
  auto& queue = ready_[static_cast<std::size_t>(replica)];
  while (!stopped_ && queue.empty() && !finished_) {
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
  if (options_.padded_length) {
    cut_to_shapes(window, budget, batches);
  } else {
    cut_packed(window, budget, batches);
  }
  for (auto& b : batches) b.number = batches_++;
  std::lock_guard lock(queue_mutex_);
  for (auto& b : batches) queue_.push_back(std::move(b));
  return true;
}

// Packed batches (only real tokens are computed): ascending lengths cut by the budget, then
// longest batches first, so that the costly ones start early and the run ends on short ones.
void DynamicSource::cut_packed(std::vector<WorkItem>& window, std::int64_t budget,
                               std::vector<Batch>& batches) {
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
  std::reverse(batches.begin(), batches.end());
}

// Compiled shapes: longest rows first, each batch as many rows as the budget holds at the padded
// length of its first (longest) row, rounded down to the row multiple, so that every batch but a
// window's last fills its [rows, length] shape (cut by ascending length, a batch that meets the
// next length bucket would end half full, and its shape would be padded).
void DynamicSource::cut_to_shapes(std::vector<WorkItem>& window, std::int64_t budget,
                                  std::vector<Batch>& batches) {
  const std::int64_t multiple = std::max<std::int64_t>(1, options_.row_multiple);
  for (std::size_t end = window.size(); end > 0;) {
    const std::int64_t length =
        options_.padded_length(static_cast<std::int64_t>(window[end - 1].ids.size()));
    std::int64_t rows = std::max<std::int64_t>(1, budget / std::max<std::int64_t>(1, length));
    if (rows >= multiple) rows -= rows % multiple;
    Batch batch;
    for (std::int64_t k = 0; k < rows && end > 0; ++k) batch.add(std::move(window[--end]));
    batches.push_back(std::move(batch));
  }
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
