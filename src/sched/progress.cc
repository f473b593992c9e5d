#include "sched/progress.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

namespace mcinfer::sched {

ProgressPrinter::ProgressPrinter(const RunCounters& counters, bool interactive)
    : counters_(counters), interactive_(interactive), thread_([this] { loop(); }) {}

ProgressPrinter::~ProgressPrinter() { finish(); }

void ProgressPrinter::finish() {
  {
    std::lock_guard lock(mutex_);
    if (done_) return;
    done_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (interactive_) fmt::print(stderr, "\r\033[K{}\n", line());
}

std::string ProgressPrinter::line() const {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::uint64_t rows = counters_.rows_done.load();
  const std::uint64_t total = counters_.rows_total.load();
  const double real = static_cast<double>(counters_.real_tokens.load());
  const double padded = static_cast<double>(counters_.padded_tokens.load());
  const double rate = elapsed > 0 ? rows / elapsed : 0;
  std::string out = total ? fmt::format("{}/{} rows", rows, total) : fmt::format("{} rows", rows);
  out += fmt::format(" | {:.1f} rows/s | {:.0f} tok/s | padding {:.1f}%", rate,
                     elapsed > 0 ? real / elapsed : 0,
                     padded > 0 ? 100.0 * (padded - real) / padded : 0.0);
  // ETA from rows when the total is known, else from the share of the input read.
  double fraction = 0;
  if (total) {
    fraction = static_cast<double>(rows) / static_cast<double>(total);
  } else if (counters_.input_size) {
    fraction = static_cast<double>(counters_.input_bytes.load()) /
               static_cast<double>(counters_.input_size);
  }
  if (fraction > 0.01 && fraction < 1) {
    const double eta = elapsed / fraction - elapsed;
    out += fmt::format(" | ETA {:.0f}:{:02.0f}", std::floor(eta / 60), std::fmod(eta, 60.0));
  }
  out += " | busy";
  for (const auto& r : counters_.replica) {
    out += fmt::format(" {:.0f}%", elapsed > 0 ? 100.0 * r.busy_ns.load() / 1e9 / elapsed : 0.0);
  }
  return out;
}

void ProgressPrinter::loop() {
  const auto period =
      interactive_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(10000);
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return done_; })) {
    if (interactive_) {
      fmt::print(stderr, "\r\033[K{}", line());
    } else {
      fmt::print(stderr, "mcinfer: {}\n", line());
    }
    std::fflush(stderr);
  }
}

}  // namespace mcinfer::sched
