#include "sched/text_predict.h"

#include <gtest/gtest.h>

namespace mcinfer::sched {
namespace {

TEST(NextBatchRows, TakesRowsUpToTheTokenBudget) {
  const std::vector<std::size_t> lengths = {10, 6, 4, 3, 2};
  EXPECT_EQ(next_batch_rows(lengths, 12, 0), 1u);   // 10, and 6 would pass 12
  EXPECT_EQ(next_batch_rows(lengths, 16, 0), 2u);   // exactly the budget
  EXPECT_EQ(next_batch_rows(lengths, 100, 0), 5u);  // all
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
