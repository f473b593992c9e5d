#include "sched/progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>

#include "sched/sources.h"
#include "support/paths.h"

namespace mcinfer::sched {
namespace {

namespace fs = std::filesystem;

TEST(Progress, LineShowsDoneOverTotalAndPercentWhenTheTotalIsKnown) {
  ProgressSnapshot s;
  s.seconds = 10;
  s.rows = 3157;
  s.rows_this_run = 3000;
  s.rows_total = 20000;
  s.real_tokens = 90110;
  s.padded_tokens = 93000;
  s.busy = {0.98, 0.971};
  EXPECT_EQ(format_progress(s, 24.4),
            "3157/20000 rows (15.7%) | 300.0 rows/s | 9011 tok/s | padding 3.1% | ETA 0:24 | "
            "busy 98% 97%");
  // Dynamic, the input not all read yet: the total is estimated from the bytes read.
  s.rows_total = 0;
  s.rows_total_estimate = 20123.4;
  EXPECT_EQ(format_progress(s, 24.4),
            "3157/~20123 rows (~15.6%) | 300.0 rows/s | 9011 tok/s | padding 3.1% | ETA 0:24 | "
            "busy 98% 97%");
  s.rows = 20124;  // an estimate can be short: never ~100%
  EXPECT_NE(format_progress(s, 0.0).find("20124/~20123 rows (~99.9%)"), std::string::npos);
  // Nothing read yet, and no ETA yet.
  s.rows = 3157;
  s.rows_total_estimate = 0;
  EXPECT_EQ(format_progress(s, std::nullopt),
            "3157 rows | 300.0 rows/s | 9011 tok/s | padding 3.1% | busy 98% 97%");
  // Rounded down: 100% only when done.
  s.rows_total = 20000;
  s.rows = 19999;
  EXPECT_NE(format_progress(s, std::nullopt).find("19999/20000 rows (99.9%)"), std::string::npos);
  s.rows = 20000;
  EXPECT_NE(format_progress(s, std::nullopt).find("20000/20000 rows (100.0%)"), std::string::npos);
}

TEST(Progress, Durations) {
  EXPECT_EQ(format_duration(0), "0:00");
  EXPECT_EQ(format_duration(24.4), "0:24");
  EXPECT_EQ(format_duration(59.6), "1:00");
  EXPECT_EQ(format_duration(725), "12:05");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(-3), "0:00");
}

TEST(Progress, RemainingTokensExtrapolatesTheUnreadBytes) {
  // 1,000 tokens read from 10,000 of 50,000 bytes, 400 computed: 600 + 4 x 1,000 left.
  EXPECT_DOUBLE_EQ(remaining_tokens(1000, 400, 10000, 50000), 4600);
  EXPECT_DOUBLE_EQ(remaining_tokens(1000, 400, 50000, 50000), 600);  // all read
  EXPECT_DOUBLE_EQ(remaining_tokens(1000, 1010, 50000, 50000), 0);   // static padding rows
  EXPECT_DOUBLE_EQ(remaining_tokens(0, 0, 0, 50000), 0);             // nothing read yet
  EXPECT_DOUBLE_EQ(remaining_tokens(1000, 400, 10000, 0), 600);      // size unknown
}

TEST(EtaEstimator, NothingBeforeEnoughTimeAndWork) {
  EtaEstimator eta;
  for (int i = 0; i <= 29; ++i) eta.add(0.1 * i, 1000.0 * i);  // 10,000 tokens/s for 2.9 s
  EXPECT_FALSE(eta.eta(1e6));                                  // too early
  eta.add(3.0, 30000);
  EXPECT_FALSE(eta.eta(1e6));  // 3% of the work
  ASSERT_TRUE(eta.eta(300000));
  EXPECT_NEAR(*eta.eta(300000), 30.0, 1e-9);
}

TEST(EtaEstimator, WaitsForTheRateToSettleThenForgetsTheSlowStart) {
  EtaEstimator eta;
  double done = 0;
  for (int i = 1; i <= 100; ++i) {  // 10 s: 2 s of warm-up at 1,000 tokens/s, then 10,000
    done += i <= 20 ? 100 : 1000;
    eta.add(0.1 * i, done);
    // At 3 s, 3 s and 10% of the work have passed, but the later half (7,000 tokens/s) still
    // holds the warm-up and the last quarter (10,000) does not: no estimate yet.
    if (i == 30) {
      EXPECT_FALSE(eta.eta(100000));
    }
  }
  ASSERT_TRUE(eta.eta(100000));
  EXPECT_NEAR(*eta.eta(100000), 10.0, 1e-6);  // the rate over the last 5 s only
}

// A long-tailed 20,000-row run through the real dynamic schedule (8,192-row windows sorted by
// length, token-budget batches, longest first), on a synthetic clock: 2 replicas; reading and
// tokenising cost 50 us a row on the replica that refills; a row of L tokens costs
// 50 L (1 + L / 2304) us (attention's share grows with L: 4LH against 24H^2 per token and layer,
// H = 384); a batch 2 ms more; each replica's first 4 batches 3 times as much (a slow start).
// The run of issue 11 (ETA 0:08, then 0:24): here the old estimate, from the share of bytes
// read, says 0:04 at 3 s, climbs to 0:16 at 11 s, then drops to 0:03 while the truth falls
// steadily from 0:23 (the bytes read run a window ahead of the work); a rate averaged from the
// start says 1:30 at 3 s. Every ETA shown must be within a factor of 1.5 of the true time
// left (measured: 1.41 when first shown, at 4.5 s, and within 1.15 from 5 s to the last
// second), and one must be shown by a quarter of the run.
TEST(EtaEstimator, LongTailedDynamicRunOnASyntheticClock) {
  auto path = testing::scratch_dir("eta_long_tail") / "rows.jsonl";
  {
    std::ofstream out(path);
    std::mt19937 rng(11);
    for (int i = 0; i < 20000; ++i) {
      const unsigned pick = rng() % 100;
      const unsigned length = pick < 85   ? 8 + rng() % 32      // most rows: short
                              : pick < 97 ? 40 + rng() % 160    // some: long
                                          : 200 + rng() % 313;  // a few: up to 512
      out << "{\"id\": " << i << ", \"input_ids\": [1";
      for (unsigned j = 1; j < length; ++j) out << ", " << 5 + (i + j) % 90;
      out << "]}\n";
    }
  }
  FeedOptions feed;
  feed.input = path;
  feed.format = data::InputFormat::kJsonl;
  feed.max_len = 512;
  feed.vocab_size = 100;
  feed.type_vocab_size = 2;
  RowFeeder feeder(feed, nullptr);
  constexpr int kReplicas = 2;
  DynamicSource source(feeder, DynamicOptions{8192, 4096}, kReplicas);

  // The run, event by event: when each replica asked for work, what had been read by then, and
  // when each batch finished.
  struct Read {
    double at;
    std::uint64_t bytes, tokens;
  };
  struct Finished {
    double at;
    std::uint64_t tokens;
  };
  std::vector<Read> reads;
  std::vector<Finished> finished;
  double free_at[kReplicas] = {0, 0};
  int batches[kReplicas] = {0, 0};
  std::uint64_t rows_read = 0;
  for (;;) {
    const int r = free_at[0] <= free_at[1] ? 0 : 1;
    const std::uint64_t before = feeder.ids().size();
    auto batch = source.next(r);
    double t = free_at[r] + 50e-6 * static_cast<double>(feeder.ids().size() - before);
    rows_read = feeder.ids().size();
    reads.push_back({t, feeder.bytes_read(), feeder.tokens_read()});
    if (!batch) {
      free_at[r] = 1e300;
      if (free_at[1 - r] == 1e300) break;
      continue;
    }
    double cost = 2e-3;
    for (const auto& item : batch->items) {
      const double length = static_cast<double>(item.ids.size());
      cost += 50e-6 * length * (1 + length / 2304);
    }
    if (batches[r]++ < 4) cost *= 3;
    free_at[r] = t + cost;
    finished.push_back({t + cost, static_cast<std::uint64_t>(batch->real_tokens)});
  }
  ASSERT_EQ(rows_read, 20000u);
  std::sort(finished.begin(), finished.end(),
            [](const Finished& a, const Finished& b) { return a.at < b.at; });
  const double end = finished.back().at;
  ASSERT_GT(end, 10.0);  // long enough for the estimate to matter

  EtaEstimator eta;
  std::size_t next_read = 0, next_finished = 0;
  Read seen{0, 0, 0};
  std::uint64_t done = 0;
  double first_shown = -1;
  for (double t = 0.1; t < end; t += 0.1) {
    while (next_read < reads.size() && reads[next_read].at <= t) seen = reads[next_read++];
    while (next_finished < finished.size() && finished[next_finished].at <= t)
      done += finished[next_finished++].tokens;
    eta.add(t, static_cast<double>(done));
    auto left = eta.eta(remaining_tokens(seen.tokens, done, seen.bytes, feeder.file_size()));
    if (!left) continue;
    if (first_shown < 0) first_shown = t;
    const double truth = end - t;
    const double ratio = std::max(*left / truth, truth / *left);
    if (truth > 1.0) {
      EXPECT_LE(ratio, 1.5) << "at " << t << " s: ETA " << *left << " s, truly " << truth
                            << " s of " << end;
    }
  }
  EXPECT_GE(first_shown, EtaEstimator::kMinSeconds);
  EXPECT_LE(first_shown, end / 4) << "no estimate for a quarter of the run";
}

}  // namespace
}  // namespace mcinfer::sched
