// The reduce of a chunked row's windows and the merger that waits for all of them: each reduce
// against its formula, and the same bytes whichever order and batches the windows come in.

#include "sched/chunking.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "data/predictions.h"
#include "sched/run_plan.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace mcinfer::sched {
namespace {

constexpr std::int64_t kDim = 3;

// Window w of a row at `position`: values that differ by row, window and column.
std::vector<float> window_values(std::uint64_t position, std::uint32_t w) {
  return {static_cast<float>(position) + 0.5F * static_cast<float>(w),
          -1.0F * static_cast<float>(w) + 0.25F, std::sin(static_cast<float>(position * 7 + w))};
}

WorkItem window_item(std::uint64_t position, std::uint32_t w, std::uint32_t windows) {
  WorkItem item;
  item.ordinal = position;
  item.position = position;
  item.id = data::RowId{"row" + std::to_string(position), true};
  item.window = w;
  item.windows = windows;
  item.ids.assign(10 + w * 3 + position % 5, 7);  // tokens differ by window: weights matter
  return item;
}

TEST(ReduceWindows, EachReduceIsItsFormula) {
  const std::vector<float> v = {1, 2, 3, -4, 6, 0.5F};  // two windows of 3
  const std::vector<std::int64_t> tokens = {3, 1};
  float out[3];
  reduce_windows(ChunkReduce::kMean, v, tokens, 3, out);
  EXPECT_FLOAT_EQ(out[0], -1.5F);
  EXPECT_FLOAT_EQ(out[1], 4.0F);
  EXPECT_FLOAT_EQ(out[2], 1.75F);
  reduce_windows(ChunkReduce::kTokenWeighted, v, tokens, 3, out);
  EXPECT_FLOAT_EQ(out[0], (3 * 1 + 1 * -4) / 4.0F);
  EXPECT_FLOAT_EQ(out[1], (3 * 2 + 1 * 6) / 4.0F);
  EXPECT_FLOAT_EQ(out[2], (3 * 3 + 1 * 0.5F) / 4.0F);
  reduce_windows(ChunkReduce::kMax, v, tokens, 3, out);
  EXPECT_EQ(std::vector<float>(out, out + 3), (std::vector<float>{1, 6, 3}));
  reduce_windows(ChunkReduce::kFirst, v, tokens, 3, out);
  EXPECT_EQ(std::vector<float>(out, out + 3), (std::vector<float>{1, 2, 3}));
}

// Rows 0..n-1 with 1..4 windows each, every window in a batch of its own order; returns the
// outputs by position.
std::vector<std::vector<float>> merge_all(ChunkReduce reduce, std::vector<WorkItem> windows,
                                          std::size_t batch_size) {
  WindowMerger merger(reduce, kDim, [](float* row) { row[0] *= 2; });
  std::vector<std::vector<float>> out(8);
  Batch rows;
  std::vector<float> values;
  for (std::size_t begin = 0; begin < windows.size(); begin += batch_size) {
    Batch batch;
    std::vector<float> in;
    for (std::size_t i = begin; i < std::min(windows.size(), begin + batch_size); ++i) {
      const auto v = window_values(windows[i].position, windows[i].window);
      in.insert(in.end(), v.begin(), v.end());
      batch.add(windows[i]);
    }
    merger.add(batch, in, rows, values);
    for (std::size_t r = 0; r < rows.items.size(); ++r) {
      auto& slot = out.at(rows.items[r].position);
      EXPECT_TRUE(slot.empty()) << "row " << rows.items[r].position << " completed twice";
      slot.assign(values.begin() + static_cast<std::ptrdiff_t>(r * kDim),
                  values.begin() + static_cast<std::ptrdiff_t>((r + 1) * kDim));
      EXPECT_EQ(rows.items[r].id.text, "row" + std::to_string(rows.items[r].position));
    }
  }
  EXPECT_EQ(merger.pending_rows(), 0u);
  return out;
}

TEST(WindowMerger, SameBytesWhateverTheOrderAndBatches) {
  std::vector<WorkItem> windows;
  for (std::uint64_t p = 0; p < 8; ++p) {
    const auto n = static_cast<std::uint32_t>(1 + p % 4);
    for (std::uint32_t w = 0; w < n; ++w) windows.push_back(window_item(p, w, n));
  }
  for (ChunkReduce reduce :
       {ChunkReduce::kMean, ChunkReduce::kMax, ChunkReduce::kFirst, ChunkReduce::kTokenWeighted}) {
    const auto in_order = merge_all(reduce, windows, 3);
    // Each row against reduce_windows over its windows in window order, then finish.
    for (std::uint64_t p = 0; p < 8; ++p) {
      std::vector<float> all;
      std::vector<std::int64_t> tokens;
      for (const WorkItem& w : windows) {
        if (w.position != p) continue;
        const auto v = window_values(p, w.window);
        all.insert(all.end(), v.begin(), v.end());
        tokens.push_back(static_cast<std::int64_t>(w.ids.size()));
      }
      std::vector<float> want(kDim);
      reduce_windows(reduce, all, tokens, kDim, want.data());
      want[0] *= 2;
      EXPECT_EQ(in_order[p], want) << kChunkReduceNames.name(reduce) << " row " << p;
    }
    std::mt19937 rng(7);
    for (int trial = 0; trial < 5; ++trial) {
      auto shuffled = windows;
      std::shuffle(shuffled.begin(), shuffled.end(), rng);
      EXPECT_EQ(merge_all(reduce, shuffled, 1 + trial), in_order)
          << kChunkReduceNames.name(reduce) << " trial " << trial;
    }
  }
}

TEST(WindowMerger, RowsWaitForTheirLastWindow) {
  WindowMerger merger(ChunkReduce::kMean, kDim, nullptr);
  Batch first, rows;
  std::vector<float> in, values;
  for (std::uint32_t w : {0u, 2u}) {
    const auto v = window_values(5, w);
    in.insert(in.end(), v.begin(), v.end());
    first.add(window_item(5, w, 3));
  }
  first.number = 4;
  merger.add(first, in, rows, values);
  EXPECT_TRUE(rows.items.empty());
  EXPECT_EQ(rows.number, 4u);
  EXPECT_EQ(merger.pending_rows(), 1u);
  Batch second;
  second.add(window_item(5, 1, 3));
  merger.add(second, window_values(5, 1), rows, values);
  ASSERT_EQ(rows.items.size(), 1u);
  EXPECT_EQ(rows.items[0].position, 5u);
  EXPECT_EQ(merger.pending_rows(), 0u);
  const auto a = window_values(5, 0), b = window_values(5, 1), c = window_values(5, 2);
  for (int j = 0; j < kDim; ++j)
    EXPECT_FLOAT_EQ(values[j], static_cast<float>((double(a[j]) + b[j] + c[j]) / 3));
}

TEST(WindowTask, LastStepMovesAfterTheReduce) {
  model::ModelConfig config;
  config.num_labels = 2;
  config.hidden_size = 4;
  config.problem_type = model::ProblemType::kSingleLabel;
  const model::TaskSpec classify(model::TaskKind::kClassify, model::Pooling::kMean);
  ChunkOptions chunk{.mode = LongInput::kChunk};
  WindowTask t = window_task(classify, config, chunk);
  EXPECT_EQ(t.task.activation, model::OutputActivation::kNone);
  ASSERT_TRUE(t.finish);
  float logits[2] = {1.0F, 3.0F};
  t.finish(logits);
  EXPECT_NEAR(logits[1], 1.0 / (1.0 + std::exp(-2.0)), 1e-7);
  EXPECT_NEAR(logits[0] + logits[1], 1.0, 1e-7);

  chunk.values = ChunkValues::kProbs;
  t = window_task(classify, config, chunk);
  EXPECT_EQ(t.task.activation, model::OutputActivation::kAuto);
  EXPECT_FALSE(t.finish);

  const model::TaskSpec embed(model::TaskKind::kEmbed, model::Pooling::kMean, true);
  t = window_task(embed, config, chunk);
  EXPECT_FALSE(t.task.normalize);
  ASSERT_TRUE(t.finish);
  float v[4] = {3, 0, 4, 0};
  t.finish(v);
  EXPECT_FLOAT_EQ(v[0], 0.6F);
  EXPECT_FLOAT_EQ(v[2], 0.8F);

  t = window_task(embed, config, ChunkOptions{});  // truncate: the task as it is
  EXPECT_TRUE(t.task.normalize);
  EXPECT_FALSE(t.finish);
}

// --outputs: each output's last step on its own columns; the others reduced as they are.
TEST(WindowTask, SeveralOutputsEachFinishTheirOwnColumns) {
  using model::OutputKind;
  model::ModelConfig config;
  config.num_labels = 2;
  config.hidden_size = 2;
  config.problem_type = model::ProblemType::kSingleLabel;
  model::TaskSpec classify(model::TaskKind::kClassify, model::Pooling::kMean);
  classify.outputs = {OutputKind::kCls, OutputKind::kProbs, OutputKind::kLogits};
  WindowTask t = window_task(classify, config, ChunkOptions{.mode = LongInput::kChunk});
  EXPECT_EQ(t.task.outputs,
            (std::vector<OutputKind>{OutputKind::kCls, OutputKind::kLogits, OutputKind::kLogits}));
  ASSERT_TRUE(t.finish);
  float row[6] = {5, -5, 1, 3, 1, 3};  // cls | probs (as logits) | logits
  t.finish(row);
  EXPECT_EQ(row[0], 5);
  EXPECT_EQ(row[1], -5);
  EXPECT_NEAR(row[3], 1.0 / (1.0 + std::exp(-2.0)), 1e-7);
  EXPECT_NEAR(row[2] + row[3], 1.0, 1e-7);
  EXPECT_EQ(row[4], 1);
  EXPECT_EQ(row[5], 3);
  t = window_task(classify, config,
                  ChunkOptions{.mode = LongInput::kChunk, .values = ChunkValues::kProbs});
  EXPECT_EQ(t.task.outputs, classify.outputs);
  EXPECT_FALSE(t.finish);

  model::TaskSpec embed(model::TaskKind::kEmbed, model::Pooling::kMean, true);
  embed.outputs = {OutputKind::kMax, OutputKind::kNormalized};
  t = window_task(embed, config, ChunkOptions{.mode = LongInput::kChunk});
  EXPECT_EQ(t.task.outputs, (std::vector<OutputKind>{OutputKind::kMax, OutputKind::kEmbedding}));
  float v[4] = {3, 4, 3, 4};
  t.finish(v);
  EXPECT_EQ(v[0], 3);
  EXPECT_FLOAT_EQ(v[2], 0.6F);
  EXPECT_FLOAT_EQ(v[3], 0.8F);
}

// The outputs a user can ask for are the column groups the prediction files know.
TEST(Outputs, OfferedOutputsAreThePredictionGroupNames) {
  std::vector<std::string_view> offered;
  for (auto task : {model::TaskKind::kClassify, model::TaskKind::kEmbed})
    for (model::OutputKind kind : model::outputs_for(task)) {
      const std::string_view name = model::output_kind_name(kind);
      if (std::find(offered.begin(), offered.end(), name) == offered.end()) offered.push_back(name);
    }
  std::sort(offered.begin(), offered.end());
  std::vector<std::string_view> groups(std::begin(data::kOutputGroupNames),
                                       std::end(data::kOutputGroupNames));
  std::sort(groups.begin(), groups.end());
  EXPECT_EQ(offered, groups);
  EXPECT_EQ(model::parse_outputs("mean,probs", model::TaskKind::kClassify),
            (std::vector<model::OutputKind>{model::OutputKind::kMean, model::OutputKind::kProbs}));
  EXPECT_THROW(model::parse_outputs("embedding", model::TaskKind::kEmbed), UsageError);
}

// Chunked rows wait in the merger for their last window: a sparse encoder's vocabulary-wide
// outputs shrink the read-ahead so that two read-aheads of them stay within 256 MiB.
TEST(ReadAhead, WideWindowOutputsShrinkIt) {
  RunOptions o;
  RunPlan plan;
  plan.dim = 30522;                                    // a BERT vocabulary
  EXPECT_EQ(read_ahead_rows(o, plan), o.window_rows);  // not chunked
  o.chunk.mode = LongInput::kChunk;
  const std::size_t rows = read_ahead_rows(o, plan);
  EXPECT_EQ(rows, (256u << 20) / (2 * 30522 * sizeof(float)));
  EXPECT_LE(2 * rows * 30522 * sizeof(float), 256u << 20);
  plan.dim = 768;  // an embedding: the read-ahead as it is
  EXPECT_EQ(read_ahead_rows(o, plan), o.window_rows);
  plan.dim = 1 << 24;  // never below 64 rows
  EXPECT_EQ(read_ahead_rows(o, plan), 64u);
}

}  // namespace
}  // namespace mcinfer::sched
