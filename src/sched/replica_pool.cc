#include "sched/replica_pool.h"

#include <algorithm>
#include <barrier>
#include <exception>
#include <mutex>
#include <thread>

#include "core/system.h"

namespace mcinfer::sched {

using Clock = std::chrono::steady_clock;

ReplicaPool::ReplicaPool(std::shared_ptr<const backend::PreparedModel> model,
                         const PoolOptions& options)
    : model_(std::move(model)), options_(options) {
  for (int r = 0; r < std::max(1, options.replicas); ++r)
    replicas_.push_back(model_->make_replica(options.threads_per_replica));
}

double ReplicaPool::run(const std::function<void(int, backend::Replica&)>& body,
                        const std::function<void()>& on_failure) {
  const int n = size();
  const bool pin = options_.pin && n > 1 && options_.threads_per_replica == 1;
  const std::vector<int> cpus = pin ? sys::cpus_by_core() : std::vector<int>{};
  std::barrier start(n);
  std::mutex failure_mutex;
  std::exception_ptr first_failure;
  std::vector<Clock::time_point> began(static_cast<std::size_t>(n)),
      ended(static_cast<std::size_t>(n));
  auto work = [&](int r) {
    const auto i = static_cast<std::size_t>(r);
    if (pin && !cpus.empty())
      sys::pin_current_thread(
          cpus[(static_cast<std::size_t>(options_.first_cpu) + i) % cpus.size()]);
    start.arrive_and_wait();
    began[i] = Clock::now();
    try {
      body(r, *replicas_[i]);
    } catch (...) {
      {
        std::lock_guard lock(failure_mutex);
        if (!first_failure) first_failure = std::current_exception();
      }
      stop();
      if (on_failure) on_failure();
    }
    ended[i] = Clock::now();
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(work, r);
  for (auto& t : threads) t.join();
  if (first_failure) std::rethrow_exception(first_failure);
  return std::chrono::duration<double>(*std::max_element(ended.begin(), ended.end()) -
                                       *std::min_element(began.begin(), began.end()))
      .count();
}

std::vector<float> predict_rows(ReplicaPool& pool, std::span<const model::SequenceInput> rows,
                                const model::TaskSpec& task, std::int64_t dim,
                                std::int64_t batch_tokens,
                                const std::function<void(int, backend::Replica&)>& before) {
  const auto width = static_cast<std::size_t>(dim);
  std::vector<float> all(rows.size() * width);
  const auto parts = static_cast<std::size_t>(pool.size());
  pool.run([&](int r, backend::Replica& replica) {
    if (before) before(r, replica);
    const auto p = static_cast<std::size_t>(r);
    const std::size_t first = rows.size() * p / parts, last = rows.size() * (p + 1) / parts;
    std::vector<float> values;
    for (std::size_t begin = first; begin < last;) {
      std::size_t end = begin;
      std::int64_t tokens = 0;
      while (end < last &&
             (end == begin ||
              tokens + static_cast<std::int64_t>(rows[end].ids.size()) <= batch_tokens)) {
        tokens += static_cast<std::int64_t>(rows[end].ids.size());
        ++end;
      }
      replica.predict(rows.subspan(begin, end - begin), task, values);
      std::copy(values.begin(), values.end(),
                all.begin() + static_cast<std::ptrdiff_t>(begin * width));
      begin = end;
    }
  });
  return all;
}

}  // namespace mcinfer::sched
