#include "sched/text_predict.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <utility>

#include "core/error.h"

namespace mcinfer::sched {
namespace {

// A replica whose output for a row is [the sum of its ids, its length], and which records each
// batch's rows and longest row: where outputs land and how rows were batched, without a model.
struct BatchLog {
  std::mutex mutex;
  std::vector<std::pair<std::size_t, std::size_t>> batches;  // rows, longest
};

class SumReplica final : public backend::Replica {
 public:
  explicit SumReplica(BatchLog& log) : log_(log) {}
  void predict(std::span<const model::SequenceInput> rows, const model::TaskSpec&,
               std::vector<float>& out) override {
    out.clear();
    std::size_t longest = 0;
    for (const model::SequenceInput& row : rows) {
      double sum = 0;
      for (std::int32_t id : row.ids) sum += id;
      out.push_back(static_cast<float>(sum));
      out.push_back(static_cast<float>(row.ids.size()));
      longest = std::max(longest, row.ids.size());
    }
    std::lock_guard lock(log_.mutex);
    log_.batches.emplace_back(rows.size(), longest);
  }
  double last_flops() const override { return 0; }
  void attach_profile(backend::OpProfile*) override {}

 private:
  BatchLog& log_;
};

class SumModel final : public backend::PreparedModel {
 public:
  explicit SumModel(BatchLog& log) : log_(log) {}
  const model::ModelConfig& config() const override { return config_; }
  model::Precision precision() const override { return model::Precision::kFp32; }
  const backend::WeightStats& stats() const override { return stats_; }
  std::unique_ptr<backend::Replica> make_replica(int) const override {
    return std::make_unique<SumReplica>(log_);
  }

 private:
  BatchLog& log_;
  model::ModelConfig config_;
  backend::WeightStats stats_;
};

// 60 rows of 1 to 50 tokens in no order; row r's ids are r·1000, r·1000 + 1, ...
std::vector<std::vector<std::int32_t>> id_rows() {
  std::vector<std::vector<std::int32_t>> rows(60);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::size_t length = (r * 37) % 50 + 1;
    for (std::size_t i = 0; i < length; ++i)
      rows[r].push_back(static_cast<std::int32_t>(r * 1000 + i));
  }
  return rows;
}

// Token ids take the texts' path: every row once, at its place, in batches whose padded tokens
// stay within the budget (a row past it alone), with progress counted.
TEST(PredictIds, EveryRowOnceInPlaceInPaddedBudgetBatches) {
  BatchLog log;
  ReplicaPool pool(std::make_shared<SumModel>(log), {2, 1, false});
  const auto ids = id_rows();
  std::atomic<std::size_t> done{0};
  const std::vector<float> out = predict_ids(pool, ids, {}, 2, {64, 0, nullptr, &done, {}});
  ASSERT_EQ(out.size(), ids.size() * 2);
  for (std::size_t r = 0; r < ids.size(); ++r) {
    double sum = 0;
    for (std::int32_t id : ids[r]) sum += id;
    EXPECT_EQ(out[2 * r], static_cast<float>(sum)) << r;
    EXPECT_EQ(out[2 * r + 1], static_cast<float>(ids[r].size())) << r;
  }
  EXPECT_EQ(done.load(), ids.size());
  std::size_t rows = 0;
  for (const auto& [batch_rows, longest] : log.batches) {
    rows += batch_rows;
    if (batch_rows > 1) {
      EXPECT_LE(batch_rows * longest, 64u) << batch_rows << " x " << longest;
    }
  }
  EXPECT_EQ(rows, ids.size());
}

// A backend of compiled shapes (lengths padded to a multiple of 16, rows to a multiple of 4):
// the budget counts the padded length, and the batches fill their shapes.
TEST(PredictIds, CompiledShapesAreFilledWithinTheBudget) {
  BatchLog log;
  ReplicaPool pool(std::make_shared<SumModel>(log), {2, 1, false});
  const auto ids = id_rows();
  backend::BatchShape shape;
  shape.kind = backend::BatchShape::Kind::kBuckets;
  shape.padded_length = [](std::int64_t n) { return (n + 15) / 16 * 16; };
  shape.row_multiple = 4;
  const std::vector<float> out = predict_ids(pool, ids, {}, 2, {256, 0, nullptr, nullptr, shape});
  for (std::size_t r = 0; r < ids.size(); ++r)
    EXPECT_EQ(out[2 * r + 1], static_cast<float>(ids[r].size())) << r;
  std::size_t rows = 0, unfilled = 0;
  for (const auto& [batch_rows, longest] : log.batches) {
    rows += batch_rows;
    const auto padded = static_cast<std::size_t>(shape.padded_length(longest));
    if (batch_rows > 1) {
      EXPECT_LE(batch_rows * padded, 256u) << batch_rows << " x " << padded;
    }
    if (batch_rows % 4 != 0) ++unfilled;
  }
  EXPECT_EQ(rows, ids.size());
  // Only where fewer than 4 rows were left to a replica's claim.
  EXPECT_LE(unfilled, 2u);
}

TEST(NextBatchRows, CompiledShapesCountThePaddedLengthAndRoundToTheRowMultiple) {
  backend::BatchShape shape;
  shape.kind = backend::BatchShape::Kind::kBuckets;
  shape.padded_length = [](std::int64_t n) { return n <= 8 ? 8 : 32; };
  shape.row_multiple = 2;
  const std::vector<std::size_t> lengths = {7, 6, 5, 3, 2, 2, 1};
  EXPECT_EQ(next_batch_rows(lengths, 40, 0, shape), 4u);  // 5 × 8 = 40, rounded down to 4
  EXPECT_EQ(next_batch_rows(lengths, 16, 0, shape), 2u);
  EXPECT_EQ(next_batch_rows(lengths, 8, 0, shape), 1u);    // fewer than the multiple: as it is
  EXPECT_EQ(next_batch_rows(lengths, 100, 3, shape), 2u);  // the row limit, then the multiple
  const std::vector<std::size_t> long_first = {9, 2, 2, 2};
  EXPECT_EQ(next_batch_rows(long_first, 64, 0, shape), 2u);  // 9 pads to 32: 2 × 32
  EXPECT_EQ(next_batch_rows(long_first, 64, 0), 4u);         // packed: 4 × 9 = 36
}

TEST(PredictIds, RowLimitAndStop) {
  BatchLog log;
  ReplicaPool pool(std::make_shared<SumModel>(log), {1, 1, false});
  const auto ids = id_rows();
  predict_ids(pool, ids, {}, 2, {1 << 20, 3, nullptr, nullptr, {}});
  for (const auto& batch : log.batches) EXPECT_LE(batch.first, 3u);
  log.batches.clear();
  const std::atomic<bool> stop{true};
  EXPECT_THROW(predict_ids(pool, ids, {}, 2, {64, 0, &stop, nullptr, {}}), StoppedError);
  EXPECT_TRUE(log.batches.empty());
}

// The budget counts padded tokens, rows × the longest row, as --batch-tokens does.
TEST(NextBatchRows, TakesRowsUpToThePaddedTokenBudget) {
  const std::vector<std::size_t> lengths = {10, 6, 4, 3, 2};
  EXPECT_EQ(next_batch_rows(lengths, 12, 0), 1u);   // 10, and 2 × 10 would pass 12
  EXPECT_EQ(next_batch_rows(lengths, 16, 0), 1u);   // 10 + 6 real tokens, but 2 × 10 padded
  EXPECT_EQ(next_batch_rows(lengths, 20, 0), 2u);   // exactly the budget
  EXPECT_EQ(next_batch_rows(lengths, 49, 0), 4u);   // 5 × 10 = 50 would pass it
  EXPECT_EQ(next_batch_rows(lengths, 100, 0), 5u);  // all
  // A longer row later raises the padding of every row before it.
  EXPECT_EQ(next_batch_rows(std::vector<std::size_t>{2, 2, 8}, 16, 0), 2u);
  EXPECT_EQ(next_batch_rows({lengths.data() + 1, 4}, 12, 0), 2u);
  // A row longer than the budget is a batch of its own.
  EXPECT_EQ(next_batch_rows(lengths, 5, 0), 1u);
  EXPECT_EQ(next_batch_rows(std::span<const std::size_t>(), 5, 0), 0u);
}

TEST(NextBatchRows, RowLimitCutsBeforeTheTokenBudget) {
  const std::vector<std::size_t> lengths = {1, 1, 1, 1, 1};
  EXPECT_EQ(next_batch_rows(lengths, 100, 2), 2u);
  EXPECT_EQ(next_batch_rows(lengths, 100, 0), 5u);
  EXPECT_EQ(next_batch_rows(lengths, 3, 2), 2u);
}

TEST(RowsToClaim, EstimatesRowsFromTheNextRowsBytes) {
  // 400 bytes at 0.25 tokens per byte: 100 tokens a row, 1000 missing -> 10 rows.
  EXPECT_EQ(rows_to_claim(1000, 400, 0.25, 0, 64), 10u);
  EXPECT_EQ(rows_to_claim(1001, 400, 0.25, 0, 64), 11u);  // rounds up
  EXPECT_EQ(rows_to_claim(1000, 400, 0.25, 4, 64), 4u);   // the rows left under batch_rows
  EXPECT_EQ(rows_to_claim(100000, 4, 0.25, 0, 64), 64u);  // the cap
  // An empty row still costs a token; at least one row, even past the budget.
  EXPECT_EQ(rows_to_claim(5, 0, 0.25, 0, 64), 5u);
  EXPECT_EQ(rows_to_claim(0, 400, 0.25, 0, 64), 1u);
  EXPECT_EQ(rows_to_claim(-7, 400, 0.25, 0, 64), 1u);
}

}  // namespace
}  // namespace mcinfer::sched
