#include "sched/sources.h"

#include <gtest/gtest.h>

#include <fstream>
#include <latch>
#include <random>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/json.h"
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
  o.format = data::Format::kJsonl;
  o.max_len = 64;
  o.vocab_size = 100;
  o.type_vocab_size = 2;
  return o;
}

TEST(StaticSource, ReplicaShardsAreTheSamplersIndexListsInFixedBatches) {
  for (int rows : {0, 1, 3, 7, 10, 23}) {
    for (int replicas : {1, 2, 3, 7}) {
      for (int batch_size : {1, 4}) {
        auto path = write_rows("static_source", rows, 1);
        RowFeeder feeder(feed_options(path), nullptr);
        StaticSource source(feeder, static_cast<std::uint64_t>(rows), replicas, batch_size);
        std::vector<std::vector<std::uint64_t>> got(static_cast<std::size_t>(replicas));
        std::vector<bool> done(static_cast<std::size_t>(replicas), false);
        // Replicas ask in a scrambled order, as threads would.
        std::mt19937 rng(rows * 31 + replicas);
        int finished = 0;
        while (finished < replicas) {
          int r = static_cast<int>(rng() % static_cast<unsigned>(replicas));
          if (done[r]) continue;
          auto batch = source.next(r);
          if (!batch) {
            done[r] = true;
            ++finished;
            continue;
          }
          EXPECT_LE(static_cast<int>(batch->items.size()), batch_size);
          for (const auto& item : batch->items) {
            got[r].push_back(item.ordinal);
            EXPECT_EQ(item.id.text, "r" + std::to_string(item.ordinal));
          }
        }
        for (int r = 0; r < replicas; ++r) {
          EXPECT_EQ(got[r],
                    distributed_sampler_indices(static_cast<std::uint64_t>(rows), replicas, r))
              << "rows " << rows << " replicas " << replicas << " batch " << batch_size << " rank "
              << r;
        }
        EXPECT_EQ(feeder.ids().size(), static_cast<std::size_t>(rows));
      }
    }
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
      if (b.items.size() > 1) EXPECT_LE(b.padded_tokens, opts.batch_tokens);
    }
    EXPECT_EQ(seen.size(), 1000u);
    EXPECT_EQ(feeder.ids().size(), 1000u);
  }
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
