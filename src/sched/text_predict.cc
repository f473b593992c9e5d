#include "sched/text_predict.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "model/model_dir.h"
#include "sched/row_feeder.h"

namespace mcinfer::sched {
namespace {

// Rows a replica tokenises per claim: large enough that the shared counter is touched rarely,
// small enough that the replicas finish together on a few thousand rows.
constexpr std::size_t kTokenizeChunk = 64;

bool stopped(const PredictControl& control) {
  return control.stop != nullptr && control.stop->load(std::memory_order_relaxed);
}

// Every row's tokens, each replica claiming chunks of rows until none is left.
std::vector<tokenizer::Encoding> tokenize_all(ReplicaPool& pool, const TextPrep& prep,
                                              std::span<const std::string_view> texts,
                                              std::span<const std::string_view> pairs,
                                              const PredictControl& control) {
  std::vector<tokenizer::Encoding> encodings(texts.size());
  std::atomic<std::size_t> next{0};
  pool.run([&](int, backend::Replica&) {
    std::string buffer;
    for (;;) {
      const std::size_t begin = next.fetch_add(kTokenizeChunk);
      if (begin >= texts.size() || stopped(control)) return;
      const std::size_t end = std::min(texts.size(), begin + kTokenizeChunk);
      for (std::size_t i = begin; i < end; ++i) {
        const std::string_view text = prepare_text(texts[i], prep.prompt, prep.strip, buffer);
        std::optional<std::string_view> pair;
        if (!pairs.empty()) {
          pair = pairs[i];
          if (prep.strip) pair = model::strip_python_whitespace(*pair);
        }
        encodings[i] = prep.tokenizer->encode(text, pair, prep.max_len);
      }
    }
  });
  return encodings;
}

}  // namespace

std::vector<std::pair<std::size_t, std::size_t>> cut_batches(std::span<const std::size_t> lengths,
                                                             std::span<const std::size_t> order,
                                                             std::int64_t batch_tokens,
                                                             std::size_t batch_rows) {
  std::vector<std::pair<std::size_t, std::size_t>> batches;
  for (std::size_t begin = 0; begin < order.size();) {
    std::size_t end = begin;
    std::int64_t tokens = 0;
    while (end < order.size() && (batch_rows == 0 || end - begin < batch_rows)) {
      const auto length = static_cast<std::int64_t>(lengths[order[end]]);
      if (end > begin && tokens + length > batch_tokens) break;
      tokens += length;
      ++end;
    }
    batches.emplace_back(begin, end);
    begin = end;
  }
  return batches;
}

std::vector<float> predict_texts(ReplicaPool& pool, const TextPrep& prep,
                                 std::span<const std::string_view> texts,
                                 std::span<const std::string_view> pairs,
                                 const model::TaskSpec& task, std::int64_t dim,
                                 const PredictControl& control) {
  if (!pairs.empty() && pairs.size() != texts.size())
    fail_usage("{} texts but {} pairs: give one pair per text, or none", texts.size(),
               pairs.size());
  const std::vector<tokenizer::Encoding> encodings =
      tokenize_all(pool, prep, texts, pairs, control);
  if (stopped(control)) throw StoppedError("stopped while tokenising: no outputs");
  std::vector<std::size_t> lengths(texts.size()), order(texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) lengths[i] = encodings[i].ids.size();
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return lengths[a] > lengths[b]; });
  const auto batches = cut_batches(lengths, order, control.batch_tokens, control.batch_rows);

  const auto width = static_cast<std::size_t>(dim);
  std::vector<float> all(texts.size() * width);
  std::atomic<std::size_t> next{0};
  pool.run([&](int, backend::Replica& replica) {
    std::vector<model::SequenceInput> batch;
    std::vector<float> values;
    for (;;) {
      const std::size_t b = next.fetch_add(1);
      if (b >= batches.size() || stopped(control)) return;
      const auto [begin, end] = batches[b];
      batch.clear();
      for (std::size_t k = begin; k < end; ++k) {
        const tokenizer::Encoding& enc = encodings[order[k]];
        batch.push_back({enc.ids, enc.type_ids, {}});
      }
      replica.predict(batch, task, values);
      for (std::size_t k = begin; k < end; ++k) {
        std::copy_n(values.begin() + static_cast<std::ptrdiff_t>((k - begin) * width), width,
                    all.begin() + static_cast<std::ptrdiff_t>(order[k] * width));
      }
      if (control.rows_done != nullptr)
        control.rows_done->fetch_add(end - begin, std::memory_order_relaxed);
    }
  });
  if (stopped(control)) throw StoppedError("stopped after the batches in flight: no outputs");
  return all;
}

}  // namespace mcinfer::sched
