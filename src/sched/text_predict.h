#pragma once
// Texts in memory through a replica pool, as the library's Model computes a list of rows: the
// rows are tokenised on the replicas' threads, cut into batches of about `batch_tokens` tokens
// (longest rows first, so the last batches are the short ones and no replica waits long for the
// others), and each replica takes the next batch when it is free. Outputs land at their rows'
// places.
//
// Threading: predict_texts() is called from one thread and runs on the pool's threads; `control`
// is read and written from any thread while it runs.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/task.h"
#include "sched/replica_pool.h"
#include "tokenizer/tokenizer.h"

namespace mcinfer::sched {

// How a text becomes the tokenizer's input: the prompt prepended and the strip of
// sentence-transformers < 5.4, as a run's rows (row_feeder.h, prepare_text).
struct TextPrep {
  const tokenizer::Tokenizer* tokenizer = nullptr;
  std::string prompt;
  bool strip = false;
  std::size_t max_len = 512;  // tokens per sequence; longer rows are truncated
};

struct PredictControl {
  std::int64_t batch_tokens = 4096;  // tokens per batch (a longer row is a batch alone)
  std::size_t batch_rows = 0;        // rows per batch at most; 0: no limit but the tokens
  // Set from any thread: the batches in flight finish, predict_texts() throws StoppedError.
  const std::atomic<bool>* stop = nullptr;
  // Rows whose outputs are done, raised as batches finish (readable from any thread).
  std::atomic<std::size_t>* rows_done = nullptr;
};

// `pairs` is empty or as long as `texts`. Returns [texts.size(), dim] in input order.
std::vector<float> predict_texts(ReplicaPool& pool, const TextPrep& prep,
                                 std::span<const std::string_view> texts,
                                 std::span<const std::string_view> pairs,
                                 const model::TaskSpec& task, std::int64_t dim,
                                 const PredictControl& control);

// Batches of rows, as [begin, end) ranges of `order`: rows taken in that order, each batch up to
// `batch_tokens` tokens and `batch_rows` rows (0: no row limit), one row at least.
std::vector<std::pair<std::size_t, std::size_t>> cut_batches(std::span<const std::size_t> lengths,
                                                             std::span<const std::size_t> order,
                                                             std::int64_t batch_tokens,
                                                             std::size_t batch_rows);

}  // namespace mcinfer::sched
