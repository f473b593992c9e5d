#include "sched/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

namespace mcinfer::sched {

std::string format_duration(double seconds) {
  const auto total = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  const long long h = total / 3600, m = total / 60 % 60, s = total % 60;
  return h ? fmt::format("{}:{:02}:{:02}", h, m, s) : fmt::format("{}:{:02}", m, s);
}

std::string format_progress(const ProgressSnapshot& s, std::optional<double> eta_seconds) {
  // Rounded down, so that 100% means done.
  auto percent = [&](double total) {
    return std::floor(1000.0 * std::min(static_cast<double>(s.rows), total) / total) / 10.0;
  };
  std::string out;
  if (s.rows_total) {
    const auto total = static_cast<double>(s.rows_total);
    out = fmt::format("{}/{} rows ({:.1f}%)", s.rows, s.rows_total, percent(total));
  } else if (s.rows_total_estimate >= 1) {
    // An estimate never says 100%: only the end of the input tells.
    const double total = std::round(s.rows_total_estimate);
    out = fmt::format("{}/~{:.0f} rows (~{:.1f}%)", s.rows, total, std::min(99.9, percent(total)));
  } else {
    out = fmt::format("{} rows", s.rows);
  }
  const double real = static_cast<double>(s.real_tokens);
  const double padded = static_cast<double>(s.padded_tokens);
  out += fmt::format(" | {:.1f} rows/s | {:.0f} tok/s | padding {:.1f}%",
                     s.seconds > 0 ? static_cast<double>(s.rows_this_run) / s.seconds : 0.0,
                     s.seconds > 0 ? real / s.seconds : 0.0,
                     padded > 0 ? 100.0 * (padded - real) / padded : 0.0);
  if (eta_seconds) out += " | ETA " + format_duration(*eta_seconds);
  out += " | busy";
  for (double b : s.busy) out += fmt::format(" {:.0f}%", 100.0 * b);
  return out;
}

double remaining_tokens(std::uint64_t tokens_read, std::uint64_t tokens_done,
                        std::uint64_t bytes_read, std::uint64_t input_size) {
  // Static padding rows are computed but never read: done may pass read at the end.
  double remaining =
      tokens_read > tokens_done ? static_cast<double>(tokens_read - tokens_done) : 0.0;
  if (bytes_read > 0 && input_size > bytes_read) {
    remaining += static_cast<double>(tokens_read) / static_cast<double>(bytes_read) *
                 static_cast<double>(input_size - bytes_read);
  }
  return remaining;
}

void EtaEstimator::add(double seconds, double done) {
  latest_ = {seconds, done};
  // Keep one sample per 1/256 of the elapsed time (at least 0.1 s apart) and only those from
  // the last one at or before half the elapsed time: a few hundred samples however long the run.
  if (samples_.empty() || seconds - samples_.back().first >= std::max(0.1, seconds / 256))
    samples_.push_back(latest_);
  while (samples_.size() > 1 && samples_[1].first <= seconds / 2) samples_.pop_front();
}

std::optional<double> EtaEstimator::eta(double remaining) {
  if (samples_.empty()) return std::nullopt;
  // Plain variables, not a structured binding: clang 14 (the fuzz build) cannot capture one.
  const double now = latest_.first, done = latest_.second;
  if (now < kMinSeconds || done + remaining <= 0 || done / (done + remaining) < kMinFraction)
    return std::nullopt;
  // Tokens per second since `since` seconds, from the last sample at or before it.
  auto rate_since = [&](double since) {
    auto it = samples_.begin();
    while (std::next(it) != samples_.end() && std::next(it)->first <= since) ++it;
    return now > it->first ? (done - it->second) / (now - it->first) : 0.0;
  };
  const double rate = rate_since(now / 2);
  if (rate <= 0) return std::nullopt;
  if (!settled_) {
    const double recent = rate_since(now * 3 / 4);
    if (std::abs(recent / rate - 1) > kSettled) return std::nullopt;
    settled_ = true;  // from then on always shown: an estimate that blinks helps nobody
  }
  return remaining / rate;
}

ProgressPrinter::ProgressPrinter(const RunCounters& counters, bool interactive)
    : counters_(counters),
      interactive_(interactive),
      rows_at_start_(counters.rows_done.load()),
      thread_([this] { loop(); }) {}

ProgressPrinter::~ProgressPrinter() { finish(); }

void ProgressPrinter::finish() {
  {
    std::lock_guard lock(mutex_);
    if (done_) return;
    done_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (interactive_) fmt::print(stderr, "\r\033[K{}\n", format_progress(snapshot(), std::nullopt));
}

ProgressSnapshot ProgressPrinter::snapshot() const {
  ProgressSnapshot s;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  s.rows = counters_.rows_done.load();
  s.rows_this_run = s.rows - std::min(s.rows, rows_at_start_);
  s.rows_total = counters_.rows_total.load();
  const std::uint64_t bytes = counters_.input_bytes.load();
  if (s.rows_total == 0 && bytes > 0 && counters_.input_size > 0) {
    s.rows_total_estimate = static_cast<double>(counters_.rows_read.load()) /
                            static_cast<double>(bytes) * static_cast<double>(counters_.input_size);
  }
  s.real_tokens = counters_.real_tokens.load();
  s.padded_tokens = counters_.padded_tokens.load();
  for (const auto& r : counters_.replica) {
    s.busy.push_back(s.seconds > 0 ? static_cast<double>(r.busy_ns.load()) / 1e9 / s.seconds : 0.0);
  }
  return s;
}

std::string ProgressPrinter::line() {
  const ProgressSnapshot s = snapshot();
  eta_.add(s.seconds, static_cast<double>(s.real_tokens));
  const double remaining = remaining_tokens(counters_.tokens_read.load(), s.real_tokens,
                                            counters_.input_bytes.load(), counters_.input_size);
  return format_progress(s, eta_.eta(remaining));
}

void ProgressPrinter::warn_truncation() {
  if (warned_truncation_ || counters_.truncated_rows.load() == 0) return;
  warned_truncation_ = true;
  fmt::print(stderr,
             "{}mcinfer: warning: rows longer than --max-len {} are being truncated; the report "
             "counts them and their lost tokens (--long-input chunk computes every token)\n",
             interactive_ ? "\r\033[K" : "", counters_.max_len);
  std::fflush(stderr);
}

void ProgressPrinter::loop() {
  // The estimator is fed every 100 ms in both modes; log lines are printed every 10 s.
  const auto sample_every = std::chrono::milliseconds(100);
  const auto print_every = interactive_ ? sample_every : std::chrono::milliseconds(10000);
  auto next_print = start_ + print_every;
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, sample_every, [this] { return done_; })) {
    warn_truncation();
    const std::string text = line();
    const auto now = std::chrono::steady_clock::now();
    if (now < next_print) continue;
    next_print = now + print_every;
    if (interactive_) {
      fmt::print(stderr, "\r\033[K{}", text);
    } else {
      fmt::print(stderr, "mcinfer: {}\n", text);
    }
    std::fflush(stderr);
  }
}

}  // namespace mcinfer::sched
