#pragma once
// Rows longer than --max-len. truncate (the default): the row is cut as transformers'
// truncation=True cuts it, and the run counts the rows cut and the tokens they lost. chunk: the
// row is cut into Hugging Face's overflowing windows (Tokenizer::encode_windows), every window is
// computed as a sequence of its own, on whichever replica and in whichever batch the schedule
// puts it, and the row's one output is reduced from its windows' outputs by a WindowMerger.

#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/enum_names.h"
#include "model/task.h"
#include "sched/work.h"

namespace mcinfer::sched {

enum class LongInput { kTruncate, kChunk };
inline constexpr EnumNames<LongInput, 2> kLongInputNames{
    {{{LongInput::kTruncate, "truncate"}, {LongInput::kChunk, "chunk"}}}};

// How a row's windows make its output. token-weighted: the mean weighted by each window's
// tokens (special tokens included: the tokens its attention saw), so that a short last window
// counts for what it holds; for mean-pooled embeddings it is the mean over every token of every
// window (overlaps counted once per window).
enum class ChunkReduce { kMean, kMax, kFirst, kTokenWeighted };
inline constexpr EnumNames<ChunkReduce, 4> kChunkReduceNames{{{
    {ChunkReduce::kMean, "mean"},
    {ChunkReduce::kMax, "max"},
    {ChunkReduce::kFirst, "first"},
    {ChunkReduce::kTokenWeighted, "token-weighted"},
}}};

// Classifiers: which values of each window are reduced. logits (the default): the windows'
// logits are reduced and the activation applied once to the result, so that every reduce gives a
// distribution again (the max of softmax rows does not sum to 1; softmax of the max does), and
// the mean is the windows' log-linear pool: a window that is sure weighs more than an unsure one.
// probs: each window's probabilities are reduced (the plain average most chunk-it-yourself
// scripts compute).
enum class ChunkValues { kLogits, kProbs };
inline constexpr EnumNames<ChunkValues, 2> kChunkValuesNames{
    {{{ChunkValues::kLogits, "logits"}, {ChunkValues::kProbs, "probs"}}}};

struct ChunkOptions {
  LongInput mode = LongInput::kTruncate;  // the stride is RunSettings::stride
  ChunkReduce reduce = ChunkReduce::kMean;
  ChunkValues values = ChunkValues::kLogits;
};

// What a replica computes for each window of a chunked run (`task` as a row that fits would be
// computed, less the last step), and that last step, applied to each reduced row: the
// classifier's activation (logits), or the embedding's L2 normalisation, which is taken after
// the reduce so that the output is a unit vector as the model's own modules promise.
struct WindowTask {
  model::TaskSpec task;
  std::function<void(float* row)> finish;  // null: nothing
};
WindowTask window_task(const model::TaskSpec& task, const model::ModelConfig& config,
                       const ChunkOptions& options);

// Reduces `windows` rows of `dim` values (in window order) with `reduce`; `tokens[w]` weighs
// window w for kTokenWeighted. Sums are taken in double, in window order.
void reduce_windows(ChunkReduce reduce, std::span<const float> windows,
                    std::span<const std::int64_t> tokens, std::int64_t dim, float* out);

// Collects window outputs until a row has all of its windows, then reduces them in window
// order: the result does not depend on which replica or batch computed which window. A row of
// one window goes straight through. Rows are told apart by stream position (a static run's
// padded duplicates are rows of their own). Thread-safe: the replicas share one.
class WindowMerger {
 public:
  WindowMerger(ChunkReduce reduce, std::int64_t dim, std::function<void(float*)> finish);

  // Takes the outputs of `batch`'s windows (`values`: [windows, dim]) and returns in `rows` the
  // rows they complete (items with id, ordinal and position only; the batch's number) and in
  // `row_values` their outputs [rows, dim].
  void add(const Batch& batch, std::span<const float> values, Batch& rows,
           std::vector<float>& row_values);
  // Rows with some but not all windows in. Any thread.
  std::size_t pending_rows() const;

 private:
  struct Pending {
    std::uint32_t received = 0;
    std::vector<float> values;         // [windows, dim], by window index
    std::vector<std::int64_t> tokens;  // [windows]
  };
  // Appends a completed row's output to `out`; caller holds mutex_ or owns `pending`.
  void finish_row(const Pending& pending, std::vector<float>& out) const;

  const ChunkReduce reduce_;
  const std::int64_t dim_;
  const std::function<void(float*)> finish_;
  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, Pending> pending_;  // by position
};

}  // namespace mcinfer::sched
