#include "sched/text_predict.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <numeric>

#include "core/error.h"
#include "model/model_dir.h"
#include "sched/chunking.h"
#include "sched/precision_check.h"
#include "sched/row_feeder.h"

namespace mcinfer::sched {
namespace {

// Rows a replica claims at a time at most: the shared cursor is touched rarely, and at the end,
// where rows are short, no replica holds many rows the others could have taken.
constexpr std::size_t kMaxClaim = 64;
// Until a replica has tokenised rows of its own: about 4 bytes of English text per token.
constexpr double kInitialTokensPerByte = 0.25;

// Row `row` as the tokenizer's input: the prompt prepended (into `buffer`), the strip applied.
struct RowText {
  std::string_view text;
  std::optional<std::string_view> pair;
};
RowText row_text(const TextPrep& prep, std::span<const std::string_view> texts,
                 std::span<const std::string_view> pairs, std::size_t row, std::string& buffer) {
  RowText out{prepare_text(texts[row], prep.prompt, prep.strip, buffer), std::nullopt};
  if (!pairs.empty()) {
    out.pair = pairs[row];
    if (prep.strip) out.pair = model::strip_python_whitespace(*out.pair);
  }
  return out;
}

tokenizer::Encoding encode_row(const TextPrep& prep, std::span<const std::string_view> texts,
                               std::span<const std::string_view> pairs, std::size_t row,
                               std::string& buffer) {
  const RowText t = row_text(prep, texts, pairs, row, buffer);
  return prep.tokenizer->encode(t.text, t.pair, prep.max_len);
}

// --long-input chunk: the row's windows (one when it fits).
std::vector<tokenizer::Encoding> encode_windows(const TextPrep& prep,
                                                std::span<const std::string_view> texts,
                                                std::span<const std::string_view> pairs,
                                                std::size_t row, std::string& buffer) {
  const RowText t = row_text(prep, texts, pairs, row, buffer);
  return prep.tokenizer->encode_windows(t.text, t.pair, prep.max_len, prep.chunking->stride);
}

void check_pairs(std::span<const std::string_view> texts, std::span<const std::string_view> pairs) {
  if (!pairs.empty() && pairs.size() != texts.size())
    fail_usage("{} texts but {} pairs: give one pair per text, or none", texts.size(),
               pairs.size());
}

bool stopped(const PredictControl& control) {
  return control.stop != nullptr && control.stop->load(std::memory_order_relaxed);
}

// What all replicas share: the rows in the order they are taken, and the next to take.
struct SharedRows {
  const RowSource& source;
  std::vector<std::size_t> order;  // longest (by the source's bytes) first
  std::atomic<std::size_t> next{0};

  std::size_t bytes(std::size_t row) const { return source.bytes(row); }
};

// One replica's rows, claimed and tokenised but not yet run, in the order they were taken.
// Used by its replica's thread only.
class PendingRows {
 public:
  explicit PendingRows(SharedRows& shared) : shared_(shared) {}

  // Claims and tokenises rows until those pending make a full batch or no row is left.
  void fill(const PredictControl& control) {
    const std::size_t total = shared_.order.size();
    while (tokens_ < control.batch_tokens &&
           (control.batch_rows == 0 || pending_.size() < control.batch_rows)) {
      const std::size_t hint = shared_.next.load(std::memory_order_relaxed);
      if (hint >= total) return;
      const double ratio = bytes_seen_ == 0 ? kInitialTokensPerByte
                                            : static_cast<double>(tokens_seen_) / bytes_seen_;
      const std::size_t room = control.batch_rows == 0 ? 0 : control.batch_rows - pending_.size();
      const std::size_t want =
          rows_to_claim(control.batch_tokens - tokens_, shared_.bytes(shared_.order[hint]), ratio,
                        room, kMaxClaim);
      const std::size_t begin = shared_.next.fetch_add(want);
      if (begin >= total) return;
      for (std::size_t k = begin; k < std::min(total, begin + want); ++k) add(shared_.order[k]);
    }
  }

  bool empty() const { return pending_.empty(); }

  // Moves the items of the next batch into `batch` (cleared first).
  void take(const PredictControl& control, Batch& batch) {
    lengths_.clear();
    for (const WorkItem& item : pending_) lengths_.push_back(item.ids.size());
    const std::size_t n =
        next_batch_rows(lengths_, control.batch_tokens, control.batch_rows, control.shape);
    batch.items.clear();
    for (std::size_t k = 0; k < n; ++k) {
      WorkItem& item = pending_.front();
      tokens_ -= static_cast<std::int64_t>(item.ids.size());
      batch.items.push_back(std::move(item));
      pending_.pop_front();
    }
  }

 private:
  // Row `row`'s items from the source (the row, or its windows), position and ordinal `row`.
  void add(std::size_t row) {
    const std::size_t first = pending_.size();
    shared_.source.items(row, buffer_, pending_);
    for (std::size_t k = first; k < pending_.size(); ++k) {
      WorkItem& item = pending_[k];
      item.ordinal = item.position = row;
      tokens_ += static_cast<std::int64_t>(item.ids.size());
      tokens_seen_ += item.ids.size();
    }
    bytes_seen_ += shared_.bytes(row);
  }

  SharedRows& shared_;
  std::deque<WorkItem> pending_;
  std::int64_t tokens_ = 0;
  std::size_t tokens_seen_ = 0, bytes_seen_ = 0;
  std::string buffer_;
  std::vector<std::size_t> lengths_;
};

}  // namespace

std::vector<WorkItem> sample_texts(const TextPrep& prep, std::span<const std::string_view> texts,
                                   std::span<const std::string_view> pairs, std::size_t n) {
  check_pairs(texts, pairs);
  std::vector<WorkItem> out;
  std::string buffer;
  for (std::size_t row : evenly_spaced(texts.size(), std::min(n, texts.size()))) {
    tokenizer::Encoding e = encode_row(prep, texts, pairs, row, buffer);
    WorkItem& item = out.emplace_back();
    item.ordinal = item.position = row;
    item.ids = std::move(e.ids);
    item.type_ids = std::move(e.type_ids);
  }
  return out;
}

std::size_t next_batch_rows(std::span<const std::size_t> lengths, std::int64_t batch_tokens,
                            std::size_t batch_rows, const backend::BatchShape& shape) {
  const bool buckets = shape.kind == backend::BatchShape::Kind::kBuckets && shape.padded_length;
  std::size_t n = 0;
  std::int64_t longest = 0;
  while (n < lengths.size() && (batch_rows == 0 || n < batch_rows)) {
    const std::int64_t row_longest = std::max(longest, static_cast<std::int64_t>(lengths[n]));
    const std::int64_t padded = buckets ? shape.padded_length(row_longest) : row_longest;
    if (n > 0 && static_cast<std::int64_t>(n + 1) * padded > batch_tokens) break;
    longest = row_longest;
    ++n;
  }
  const auto multiple = static_cast<std::size_t>(std::max<std::int64_t>(1, shape.row_multiple));
  if (buckets && n >= multiple) n -= n % multiple;
  return n;
}

std::size_t rows_to_claim(std::int64_t missing_tokens, std::size_t next_row_bytes,
                          double tokens_per_byte, std::size_t room_rows, std::size_t max_rows) {
  // Special tokens make even an empty row 1 token or more.
  const double per_row = std::max(1.0, static_cast<double>(next_row_bytes) * tokens_per_byte);
  const double rows =
      std::ceil(static_cast<double>(std::max<std::int64_t>(missing_tokens, 1)) / per_row);
  std::size_t claim =
      rows >= static_cast<double>(max_rows) ? max_rows : static_cast<std::size_t>(rows);
  if (room_rows != 0) claim = std::min(claim, room_rows);
  return std::max<std::size_t>(claim, 1);
}

std::vector<float> predict_source(ReplicaPool& pool, const RowSource& source,
                                  const model::TaskSpec& task, std::int64_t dim,
                                  const PredictControl& control, WindowMerger* merger) {
  SharedRows shared{source, std::vector<std::size_t>(source.rows)};
  std::iota(shared.order.begin(), shared.order.end(), std::size_t{0});
  std::stable_sort(shared.order.begin(), shared.order.end(),
                   [&](std::size_t a, std::size_t b) { return shared.bytes(a) > shared.bytes(b); });

  const auto width = static_cast<std::size_t>(dim);
  std::vector<float> all(source.rows * width);
  pool.run([&](int, backend::Replica& replica) {
    PendingRows pending(shared);
    Batch batch, rows;
    std::vector<model::SequenceInput> inputs;
    std::vector<float> values, row_values;
    for (;;) {
      if (stopped(control)) return;
      pending.fill(control);
      if (pending.empty()) return;
      pending.take(control, batch);
      inputs.clear();
      for (const WorkItem& item : batch.items) inputs.push_back({item.ids, item.type_ids, {}});
      replica.predict(inputs, task, values);
      const Batch* done = &batch;
      const std::vector<float>* done_values = &values;
      if (merger != nullptr) {  // the rows whose last window this batch computed
        merger->add(batch, values, rows, row_values);
        done = &rows;
        done_values = &row_values;
      }
      for (std::size_t k = 0; k < done->items.size(); ++k) {
        std::copy_n(done_values->begin() + static_cast<std::ptrdiff_t>(k * width), width,
                    all.begin() + static_cast<std::ptrdiff_t>(done->items[k].position * width));
      }
      if (control.rows_done != nullptr)
        control.rows_done->fetch_add(done->items.size(), std::memory_order_relaxed);
    }
  });
  if (stopped(control)) throw StoppedError("stopped after the batches in flight: no outputs");
  return all;
}

std::vector<float> predict_texts(ReplicaPool& pool, const TextPrep& prep,
                                 std::span<const std::string_view> texts,
                                 std::span<const std::string_view> pairs,
                                 const model::TaskSpec& task, std::int64_t dim,
                                 const PredictControl& control) {
  check_pairs(texts, pairs);
  RowSource source;
  source.rows = texts.size();
  source.bytes = [&](std::size_t row) {
    return prep.prompt.size() + texts[row].size() + (pairs.empty() ? 0 : pairs[row].size());
  };
  source.items = [&](std::size_t row, std::string& buffer, std::deque<WorkItem>& out) {
    auto push = [&](tokenizer::Encoding& e, std::size_t window, std::size_t windows) {
      WorkItem& item = out.emplace_back();
      item.window = static_cast<std::uint32_t>(window);
      item.windows = static_cast<std::uint32_t>(windows);
      item.ids = std::move(e.ids);
      item.type_ids = std::move(e.type_ids);
    };
    if (prep.chunking == nullptr) {
      tokenizer::Encoding e = encode_row(prep, texts, pairs, row, buffer);
      push(e, 0, 1);
      return;
    }
    std::vector<tokenizer::Encoding> windows = encode_windows(prep, texts, pairs, row, buffer);
    for (std::size_t w = 0; w < windows.size(); ++w) push(windows[w], w, windows.size());
  };
  return predict_source(pool, source, task, dim, control,
                        prep.chunking != nullptr ? prep.chunking->merger : nullptr);
}

std::vector<float> predict_ids(ReplicaPool& pool, std::span<const std::vector<std::int32_t>> ids,
                               const model::TaskSpec& task, std::int64_t dim,
                               const PredictControl& control) {
  RowSource source;
  source.rows = ids.size();
  // In the texts' unit: about 4 bytes a token (kInitialTokensPerByte), exact from the first row.
  source.bytes = [&](std::size_t row) { return ids[row].size() * 4; };
  source.items = [&](std::size_t row, std::string&, std::deque<WorkItem>& out) {
    out.emplace_back().ids = ids[row];
  };
  return predict_source(pool, source, task, dim, control, nullptr);
}

}  // namespace mcinfer::sched
