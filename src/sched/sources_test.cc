#include "sched/sources.h"

#include <gtest/gtest.h>

#include <fstream>
#include <latch>
#include <random>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/json.h"
#include "sched/share.h"
#include "support/paths.h"

namespace mcinfer::sched {
namespace {

namespace fs = std::filesystem;

// Reference: tools/gen_sampler_table.py records what torch's DistributedSampler yields.
TEST(DistributedSampler, MatchesTorch) {
  Json table = read_json_file(testing::fixture("sched/distributed_sampler.json"));
  ASSERT_GT(table.size(), 10u);
  for (const auto& c : table) {
    const auto n = c["n"].get<std::uint64_t>();
    const int replicas = c["replicas"].get<int>();
    for (int r = 0; r < replicas; ++r) {
      auto want = c["ranks"][static_cast<std::size_t>(r)].get<std::vector<std::uint64_t>>();
      EXPECT_EQ(distributed_sampler_indices(n, replicas, r), want)
          << "n=" << n << " R=" << replicas << " rank " << r;
    }
  }
}

// A JSONL file of pre-tokenised rows whose lengths vary; row i has id "r<i>".
fs::path write_rows(const std::string& name, int rows, std::uint32_t seed) {
  auto path = testing::scratch_dir(name) / "rows.jsonl";
  std::ofstream out(path);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> len(2, 40);
  for (int i = 0; i < rows; ++i) {
    out << "{\"id\": \"r" << i << "\", \"input_ids\": [";
    const int n = len(rng);
    for (int j = 0; j < n; ++j) out << (j ? "," : "") << (5 + (i + j) % 50);
    out << "]}\n";
  }
  return path;
}

FeedOptions feed_options(const fs::path& path) {
  FeedOptions o;
  o.input = path;
  o.format = data::InputFormat::kJsonl;
  o.max_len = 64;
  o.vocab_size = 100;
  o.type_vocab_size = 2;
  return o;
}

// Every batch each replica of `source` gets, replicas asking in a scrambled order as threads
// would; per replica, the ordinals of its batches in order.
std::vector<std::vector<std::vector<std::uint64_t>>> drain(StaticSource& source, int replicas,
                                                           unsigned seed) {
  std::vector<std::vector<std::vector<std::uint64_t>>> got(static_cast<std::size_t>(replicas));
  std::vector<bool> done(static_cast<std::size_t>(replicas), false);
  std::mt19937 rng(seed);
  int finished = 0;
  while (finished < replicas) {
    const int r = static_cast<int>(rng() % static_cast<unsigned>(replicas));
    if (done[r]) continue;
    auto batch = source.next(r);
    if (!batch) {
      done[r] = true;
      ++finished;
      continue;
    }
    std::vector<std::uint64_t> ordinals;
    for (const auto& item : batch->items) {
      ordinals.push_back(item.ordinal);
      EXPECT_EQ(item.id.text, "r" + std::to_string(item.ordinal));
    }
    got[r].push_back(std::move(ordinals));
  }
  return got;
}

// The sampler's index list of a replica cut into batches of `batch_size`.
std::vector<std::vector<std::uint64_t>> sampler_batches(int rows, int replicas, int rank,
                                                        int batch_size) {
  std::vector<std::vector<std::uint64_t>> out;
  for (std::uint64_t i :
       distributed_sampler_indices(static_cast<std::uint64_t>(rows), replicas, rank)) {
    if (out.empty() || static_cast<int>(out.back().size()) == batch_size) out.emplace_back();
    out.back().push_back(i);
  }
  return out;
}

TEST(StaticSource, ReplicaShardsAreTheSamplersIndexListsInFixedBatches) {
  for (int rows : {0, 1, 3, 7, 10, 23}) {
    for (int replicas : {1, 2, 3, 7}) {
      for (int batch_size : {1, 4}) {
        auto path = write_rows("static_source", rows, 1);
        RowFeeder feeder(feed_options(path), nullptr);
        StaticSource source(feeder, {.global_replicas = replicas, .local_replicas = replicas},
                            batch_size);
        const auto got = drain(source, replicas, static_cast<unsigned>(rows * 31 + replicas));
        for (int r = 0; r < replicas; ++r) {
          EXPECT_EQ(got[r], sampler_batches(rows, replicas, r, batch_size))
              << "rows " << rows << " replicas " << replicas << " batch " << batch_size << " rank "
              << r;
        }
        EXPECT_EQ(feeder.ids().size(), static_cast<std::size_t>(rows));
      }
    }
  }
}

// Rank k of `world` processes with `local` replicas each runs global replicas k × local + r of
// one DistributedSampler over world × local replicas: the same batches as one process running
// them all, and only its own rows (and the sampler's padding head) are tokenised.
TEST(StaticSource, RanksRunTheirGlobalReplicasOfOneSampler) {
  for (int rows : {0, 1, 5, 13, 40}) {
    for (int world : {2, 3}) {
      for (int local : {1, 2}) {
        const int global = world * local;
        auto path = write_rows("static_ranks", rows, 1);
        std::vector<std::size_t> lengths;
        {
          RowFeeder all(feed_options(path), nullptr);
          WorkItem item;
          while (all.next(item)) lengths.push_back(item.ids.size());
        }
        for (int rank = 0; rank < world; ++rank) {
          RowFeeder feeder(feed_options(path), nullptr);
          feeder.set_share(RowShare::static_sampler(rank, world, local));
          StaticSource source(
              feeder,
              {.global_replicas = global, .first_replica = rank * local, .local_replicas = local},
              3);
          const auto got = drain(source, local, static_cast<unsigned>(rows + rank));
          for (int r = 0; r < local; ++r) {
            EXPECT_EQ(got[r], sampler_batches(rows, global, rank * local + r, 3))
                << "rows " << rows << " world " << world << " local " << local << " rank " << rank
                << " replica " << r;
          }
          EXPECT_EQ(feeder.ids().size(), static_cast<std::size_t>(rows)) << "every id kept";
          // Returned (tokenised) rows: this rank's own and the padding's head, no others.
          std::uint64_t want_tokens = 0;
          for (int o = 0; o < rows; ++o) {
            if ((o % global) / local == rank || o < global) want_tokens += lengths[o];
          }
          EXPECT_EQ(feeder.stats().tokens, want_tokens) << "rows " << rows << " rank " << rank;
        }
      }
    }
  }
}

// Under the dynamic schedule the ranks' shares are disjoint, cover every row, and are balanced
// by text weight.
TEST(DynamicSource, RankSharesAreDisjointCompleteAndBalanced) {
  const int rows = 3000;
  for (int world : {2, 3, 5}) {
    auto path = write_rows("dynamic_ranks", rows, 7);
    std::vector<int> owner(rows, -1);
    std::vector<std::uint64_t> weight(static_cast<std::size_t>(world), 0);
    for (int rank = 0; rank < world; ++rank) {
      RowFeeder feeder(feed_options(path), nullptr);
      feeder.set_share(RowShare::dynamic_blocks(rank, world, feeder.file_size()));
      DynamicSource source(feeder, DynamicOptions{256, 512}, 2);
      while (auto batch = source.next(0)) {
        for (const auto& item : batch->items) {
          ASSERT_EQ(owner[item.ordinal], -1) << "row " << item.ordinal << " in two shares";
          owner[item.ordinal] = rank;
          weight[static_cast<std::size_t>(rank)] += item.ids.size();
        }
      }
      EXPECT_EQ(feeder.rows_read(),
                static_cast<std::uint64_t>(std::count(owner.begin(), owner.end(), rank)));
      EXPECT_EQ(feeder.ids().size(), static_cast<std::size_t>(rows));
    }
    for (int i = 0; i < rows; ++i) ASSERT_NE(owner[i], -1) << "row " << i << " in no share";
    const auto [lo, hi] = std::minmax_element(weight.begin(), weight.end());
    EXPECT_LE(static_cast<double>(*hi), 1.2 * static_cast<double>(*lo)) << "world " << world;
  }
}

TEST(DynamicSource, EveryRowOnceInLengthSortedBudgetedBatches) {
  auto path = write_rows("dynamic_source", 1000, 2);
  for (int replicas : {1, 3}) {
    RowFeeder feeder(feed_options(path), nullptr);
    DynamicOptions opts;
    opts.window_rows = 128;
    opts.batch_tokens = 200;
    DynamicSource source(feeder, opts, replicas);
    std::mutex mutex;
    std::vector<Batch> batches;
    std::vector<std::thread> threads;
    for (int r = 0; r < replicas; ++r) {
      threads.emplace_back([&, r] {
        while (auto b = source.next(r)) {
          std::lock_guard lock(mutex);
          batches.push_back(std::move(*b));
        }
      });
    }
    for (auto& t : threads) t.join();
    std::set<std::uint64_t> seen;
    std::set<std::uint64_t> numbers;
    for (const auto& b : batches) {
      EXPECT_TRUE(numbers.insert(b.number).second);
      std::int64_t longest = 0, real = 0;
      for (const auto& item : b.items) {
        EXPECT_TRUE(seen.insert(item.ordinal).second) << "row " << item.ordinal << " twice";
        longest = std::max<std::int64_t>(longest, static_cast<std::int64_t>(item.ids.size()));
        real += static_cast<std::int64_t>(item.ids.size());
      }
      EXPECT_EQ(b.real_tokens, real);
      EXPECT_EQ(b.padded_tokens, longest * static_cast<std::int64_t>(b.items.size()));
      if (b.items.size() > 1) {
        EXPECT_LE(b.padded_tokens, opts.batch_tokens);
      }
    }
    EXPECT_EQ(seen.size(), 1000u);
    EXPECT_EQ(feeder.ids().size(), 1000u);
  }
}

// ModernBERT's mix: 8,000-token rows among 20-token ones under the default budget (4,096
// tokens, below the long rows). Each long row is a batch of its own, the short ones share
// batches of one length (no padding), the long batches are handed out first, and replicas that
// take the next batch whenever they are free (cost ∝ tokens) finish within one short batch of
// each other: none waits while another still has a long row queued behind it.
TEST(DynamicSource, LongAndShortRowsWithoutPaddingOrIdleReplicas) {
  auto path = testing::scratch_dir("dynamic_long_rows") / "rows.jsonl";
  constexpr int kRows = 1000, kLong = 8000, kShort = 20;
  {
    std::ofstream out(path);
    for (int i = 0; i < kRows; ++i) {
      const int n = i % 50 == 7 ? kLong : kShort;
      out << "{\"id\": \"r" << i << "\", \"input_ids\": [";
      for (int j = 0; j < n; ++j) out << (j ? "," : "") << (5 + (i + j) % 50);
      out << "]}\n";
    }
  }
  FeedOptions feed = feed_options(path);
  feed.max_len = 8192;
  for (int replicas : {2, 3}) {
    RowFeeder feeder(feed, nullptr);
    DynamicSource source(feeder, DynamicOptions{}, replicas);
    std::vector<std::int64_t> finish(static_cast<std::size_t>(replicas), 0);
    std::int64_t last_short = 0, long_rows = 0, short_rows = 0;
    bool short_seen = false;
    for (;;) {
      // The replica free first asks next.
      const auto r =
          static_cast<int>(std::min_element(finish.begin(), finish.end()) - finish.begin());
      auto batch = source.next(r);
      if (!batch) break;
      const auto longest = static_cast<std::int64_t>(batch->items.back().ids.size());
      EXPECT_EQ(batch->padded_tokens, batch->real_tokens) << "padding computed";
      if (longest == kLong) {
        EXPECT_EQ(batch->items.size(), 1u);
        EXPECT_FALSE(short_seen) << "a long row handed out after short batches";
        ++long_rows;
      } else {
        EXPECT_LE(batch->padded_tokens, DynamicOptions{}.batch_tokens);
        short_seen = true;
        short_rows += static_cast<std::int64_t>(batch->items.size());
        last_short = std::max(last_short, batch->real_tokens);
      }
      finish[static_cast<std::size_t>(r)] += batch->real_tokens;
    }
    EXPECT_EQ(long_rows, kRows / 50);
    EXPECT_EQ(short_rows, kRows - kRows / 50);
    const auto [lo, hi] = std::minmax_element(finish.begin(), finish.end());
    EXPECT_LE(*hi - *lo, last_short) << replicas << " replicas";
  }
}

// A backend of compiled shapes (BatchShape::kBuckets): batches fill [rows, bucket] shapes, the
// rows a multiple of 8 within the budget at the bucket length of their longest row, so that only
// a window's last batch is padded in rows.
TEST(DynamicSource, CompiledShapesGetFullBatchesWithinTheBudget) {
  auto path = write_rows("dynamic_shapes", 1000, 4);
  RowFeeder feeder(feed_options(path), nullptr);
  DynamicOptions opts;
  opts.window_rows = 256;
  opts.batch_tokens = 400;
  auto bucket = [](std::int64_t n) { return (n + 15) / 16 * 16; };
  opts.padded_length = bucket;
  opts.row_multiple = 8;
  DynamicSource source(feeder, opts, 1);
  std::set<std::uint64_t> seen;
  int partial = 0, batches = 0;
  while (auto b = source.next(0)) {
    ++batches;
    const std::int64_t length = bucket(static_cast<std::int64_t>(b->items.front().ids.size()));
    const auto rows = static_cast<std::int64_t>(b->items.size());
    for (std::size_t k = 0; k < b->items.size(); ++k) {
      EXPECT_TRUE(seen.insert(b->items[k].ordinal).second);
      EXPECT_LE(static_cast<std::int64_t>(b->items[k].ids.size()), length);  // first is longest
    }
    const std::int64_t fit = std::max<std::int64_t>(1, opts.batch_tokens / length);
    const std::int64_t full = fit >= 8 ? fit / 8 * 8 : fit;
    EXPECT_LE(rows, full);
    if (rows != full) ++partial;
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_LE(partial, 4) << "of " << batches << " batches: one per window of 256 rows";
}

TEST(DynamicSource, SameInputSameBatches) {
  auto path = write_rows("dynamic_repro", 300, 3);
  auto collect = [&] {
    RowFeeder feeder(feed_options(path), nullptr);
    DynamicSource source(feeder, DynamicOptions{64, 150}, 1);
    std::vector<std::vector<std::uint64_t>> out;
    while (auto b = source.next(0)) {
      out.emplace_back();
      for (const auto& item : b->items) out.back().push_back(item.ordinal);
    }
    return out;
  };
  EXPECT_EQ(collect(), collect());
}

// Replicas waiting to read when another one's read fails must not read on past the bad row: a
// bad row after it would then be reported instead (the cause of a flaky MalformedCsv.NulBytes,
// whose input has a second bad row right after the first).
TEST(DynamicSource, AFailedReadIsTheOnlyErrorEvenWithReplicasWaiting) {
  auto path = testing::scratch_dir("dynamic_bad_row") / "rows.jsonl";
  {
    std::ofstream out(path);
    out << "{\"id\": 1, \"input_ids\": [1, 2]}\n";
    for (int i = 0; i < 20; ++i) out << "{\"id\": " << i + 2 << ", \"input_ids\": [1, 500]}\n";
  }
  constexpr int kReplicas = 8;
  for (int attempt = 0; attempt < 300; ++attempt) {
    RowFeeder feeder(feed_options(path), nullptr);
    DynamicSource source(feeder, DynamicOptions{64, 200}, kReplicas);
    std::mutex mutex;
    std::vector<std::string> errors;
    std::latch start(kReplicas);
    std::vector<std::thread> threads;
    for (int r = 0; r < kReplicas; ++r) {
      threads.emplace_back([&, r] {
        start.arrive_and_wait();
        try {
          while (source.next(r)) {
          }
        } catch (const Error& e) {
          std::lock_guard lock(mutex);
          errors.emplace_back(e.what());
        }
      });
    }
    for (auto& t : threads) t.join();
    ASSERT_EQ(errors.size(), 1u) << "attempt " << attempt << ": " << errors.back();
    ASSERT_NE(errors[0].find("rows.jsonl:2: "), std::string::npos) << errors[0];
  }
}

TEST(RowFeeder, BadPretokenisedRowsNameFileAndLine) {
  auto path = testing::scratch_dir("feeder_bad") / "rows.jsonl";
  std::ofstream(path)
      << "{\"id\": 1, \"input_ids\": [1, 2]}\n{\"id\": 2, \"input_ids\": [1, 500]}\n"
         "{\"id\": 3, \"input_ids\": [1, 2], \"attention_mask\": [0, 0]}\n";
  {
    RowFeeder feeder(feed_options(path), nullptr);
    WorkItem item;
    EXPECT_TRUE(feeder.next(item));
    try {
      feeder.next(item);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(
          std::string(e.what()).find("rows.jsonl:2: input_ids[1] = 500 is outside the vocabulary"),
          std::string::npos)
          << e.what();
    }
  }
  FeedOptions skip = feed_options(path);
  skip.skip_bad_rows = true;
  RowFeeder feeder(skip, nullptr);
  WorkItem item;
  int good = 0;
  while (feeder.next(item)) ++good;
  EXPECT_EQ(good, 1);
  ASSERT_EQ(feeder.bad_rows().size(), 2u);
  EXPECT_EQ(feeder.bad_rows()[1].line, 3u);
  EXPECT_NE(feeder.bad_rows()[1].reason.find("masks every token"), std::string::npos);
}

}  // namespace
}  // namespace mcinfer::sched
