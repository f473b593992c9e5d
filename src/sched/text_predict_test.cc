#include "sched/text_predict.h"

#include <gtest/gtest.h>

namespace mcinfer::sched {
namespace {

using Ranges = std::vector<std::pair<std::size_t, std::size_t>>;

TEST(CutBatches, FillsEachBatchUpToTheTokenBudgetInTheGivenOrder) {
  const std::vector<std::size_t> lengths = {3, 10, 4, 6, 2};
  const std::vector<std::size_t> order = {1, 3, 2, 0, 4};  // 10, 6, 4, 3, 2
  EXPECT_EQ(cut_batches(lengths, order, 12, 0), (Ranges{{0, 1}, {1, 3}, {3, 5}}));
  // A row longer than the budget is a batch of its own.
  EXPECT_EQ(cut_batches(lengths, order, 5, 0), (Ranges{{0, 1}, {1, 2}, {2, 3}, {3, 5}}));
}

TEST(CutBatches, RowLimitCutsBeforeTheTokenBudget) {
  const std::vector<std::size_t> lengths = {1, 1, 1, 1, 1};
  const std::vector<std::size_t> order = {0, 1, 2, 3, 4};
  EXPECT_EQ(cut_batches(lengths, order, 100, 2), (Ranges{{0, 2}, {2, 4}, {4, 5}}));
  EXPECT_EQ(cut_batches(lengths, order, 100, 0), (Ranges{{0, 5}}));
  EXPECT_TRUE(cut_batches(lengths, std::span<const std::size_t>(), 100, 0).empty());
}

}  // namespace
}  // namespace mcinfer::sched
