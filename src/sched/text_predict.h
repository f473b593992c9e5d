#pragma once
// Texts or token ids in memory through a replica pool, as the library's Model computes a list of
// rows. The rows are taken longest first (by bytes, so the last batches are the short ones and no
// replica waits long for the others): each replica claims the next few rows when it is free,
// tokenises them on its own thread and runs batches of up to `batch_tokens` padded tokens,
// keeping the rows that did not fit for its next batch. Only the rows in flight are held as tokens
// (not every row's, which for 20,000 rows of MiniLM was ~20 MiB more peak memory than `mcinfer
// run`); outputs land at their rows' places.
//
// Threading: predict_texts() is called from one thread and runs on the pool's threads; `control`
// is read and written from any thread while it runs.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/task.h"
#include "sched/replica_pool.h"
#include "sched/work.h"
#include "tokenizer/tokenizer.h"

namespace mcinfer::sched {

class WindowMerger;

// --long-input chunk: rows longer than max_len are cut into Hugging Face's overflowing windows
// (Tokenizer::encode_windows, `stride` tokens shared), each computed as a sequence of its own,
// and `merger` reduces a row's windows into its output once the last is in, as a run's chunked
// rows (chunking.h). predict_texts' task is then the window task (window_task).
struct TextChunking {
  std::size_t stride = 0;
  WindowMerger* merger = nullptr;
};

// How a text becomes the tokenizer's input: the prompt prepended and the strip of
// sentence-transformers < 5.4, as a run's rows (row_feeder.h, prepare_text).
struct TextPrep {
  const tokenizer::Tokenizer* tokenizer = nullptr;
  std::string prompt;
  bool strip = false;
  std::size_t max_len = 512;  // tokens per sequence; longer rows are truncated, unless chunking
  const TextChunking* chunking = nullptr;
};

struct PredictControl {
  // Padded tokens per batch: rows × the longest row (a longer row is a batch alone).
  std::int64_t batch_tokens = 4096;
  std::size_t batch_rows = 0;  // rows per batch at most; 0: no limit but the tokens
  // Set from any thread: the batches in flight finish, predict_texts() throws StoppedError.
  const std::atomic<bool>* stop = nullptr;
  // Rows whose outputs are done, raised as batches finish (readable from any thread).
  std::atomic<std::size_t>* rows_done = nullptr;
  // How the backend wants batches cut (Backend::batch_shape): packed, or compiled shapes whose
  // padded length and row multiple the budget then counts, as a run's dynamic schedule does.
  backend::BatchShape shape;
};

// The rows of one prediction, made into work items only when a replica claims them.
struct RowSource {
  std::size_t rows = 0;
  // Orders the rows, longest first, and estimates their tokens before they are made (texts:
  // their bytes; ids: 4 per token, the texts' initial ratio).
  std::function<std::size_t(std::size_t row)> bytes;
  // Appends row `row`'s items (the row, or its windows: window and windows set, ids, type ids)
  // to `out`; the caller sets their ordinal and position. Runs on the claiming replica's thread,
  // `buffer` its own.
  std::function<void(std::size_t row, std::string& buffer, std::deque<WorkItem>& out)> items;
};

// The one batching path of the library's predictions: rows taken longest first by free
// replicas, batches of at most `control.batch_tokens` padded tokens (rows × the longest row, as
// --batch-tokens counts them) and `control.batch_rows` rows, stop and progress for every source.
// With `merger`, items are windows and the merger reduces each row's. Returns [rows, dim].
std::vector<float> predict_source(ReplicaPool& pool, const RowSource& source,
                                  const model::TaskSpec& task, std::int64_t dim,
                                  const PredictControl& control, WindowMerger* merger);

// `pairs` is empty or as long as `texts`. Returns [texts.size(), dim] in input order.
std::vector<float> predict_texts(ReplicaPool& pool, const TextPrep& prep,
                                 std::span<const std::string_view> texts,
                                 std::span<const std::string_view> pairs,
                                 const model::TaskSpec& task, std::int64_t dim,
                                 const PredictControl& control);

// Token ids with the special tokens in place, each row at most the model's length.
std::vector<float> predict_ids(ReplicaPool& pool, std::span<const std::vector<std::int32_t>> ids,
                               const model::TaskSpec& task, std::int64_t dim,
                               const PredictControl& control);

// Up to `n` of the texts (evenly_spaced, as a run samples its input), tokenised as
// predict_texts tokenises them: the rows a Model's precision check and int8 calibration see.
std::vector<WorkItem> sample_texts(const TextPrep& prep, std::span<const std::string_view> texts,
                                   std::span<const std::string_view> pairs, std::size_t n);

// How many of the rows of `lengths` (tokens, in the order they run) the next batch takes: as
// many as keep rows × the longest row within `batch_tokens` (what --batch-tokens bounds) and
// `batch_rows` rows (0: no row limit), one row at least (a row longer than the budget is a
// batch of its own). 0 only when `lengths` is empty. A backend of compiled shapes counts the
// longest row at its padded length, and the rows are rounded down to its row multiple (when
// there are that many), so that each batch fills the shape it runs in.
std::size_t next_batch_rows(std::span<const std::size_t> lengths, std::int64_t batch_tokens,
                            std::size_t batch_rows, const backend::BatchShape& shape = {});

// How many rows to claim to bring a batch to `missing_tokens` more tokens, when the next row has
// `next_row_bytes` bytes and rows have given `tokens_per_byte` so far: the rows come longest
// first, so the estimate from the next row errs on the side of claiming too few (the caller
// claims again). At least 1, at most `room_rows` (when not 0) and `max_rows`.
std::size_t rows_to_claim(std::int64_t missing_tokens, std::size_t next_row_bytes,
                          double tokens_per_byte, std::size_t room_rows, std::size_t max_rows);

}  // namespace mcinfer::sched
