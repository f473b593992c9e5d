#include "sched/chunking.h"

#include <algorithm>

#include "core/error.h"
#include "core/fault.h"
#include "model/pooling.h"

namespace mcinfer::sched {

namespace {

// Several outputs: each one's last step on its own columns of the row (probs' activation when
// the logits are reduced, normalized's L2 normalisation), the others reduced as they are.
WindowTask window_outputs(const model::TaskSpec& task, const model::ModelConfig& config,
                          const ChunkOptions& options) {
  using model::OutputKind;
  WindowTask out{task, nullptr};
  std::vector<std::function<void(float*)>> steps;
  std::int64_t at = 0;
  for (OutputKind& kind : out.task.outputs) {
    const std::int64_t width = model::output_width(config, task, kind);
    if (kind == OutputKind::kNormalized) {
      kind = OutputKind::kEmbedding;
      steps.emplace_back([at, width](float* row) { model::l2_normalize(row + at, width); });
    } else if (kind == OutputKind::kProbs && options.values == ChunkValues::kLogits) {
      const model::OutputActivation activation = model::resolve_activation(config, task.activation);
      kind = OutputKind::kLogits;
      steps.emplace_back([activation, at, width](float* row) {
        model::apply_output_activation(activation, row + at, 1, width);
      });
    }
    at += width;
  }
  if (!steps.empty()) {
    out.finish = [steps = std::move(steps)](float* row) {
      for (const auto& step : steps) step(row);
    };
  }
  return out;
}

}  // namespace

WindowTask window_task(const model::TaskSpec& task, const model::ModelConfig& config,
                       const ChunkOptions& options) {
  WindowTask out{task, nullptr};
  if (options.mode != LongInput::kChunk) return out;
  if (!task.outputs.empty()) return window_outputs(task, config, options);
  const std::int64_t dim = model::output_dim(config, task);
  if (task.kind == model::TaskKind::kSparse) {
    // Each window's whole vocabulary vector is reduced; the top-k is the row's, taken after.
    const std::int64_t top_k = task.sparse.top_k;
    if (top_k > 0) {
      out.task.sparse.top_k = 0;
      out.finish = [dim, top_k](float* row) { model::keep_top_k(row, 1, dim, top_k); };
    }
    return out;
  }
  if (task.kind == model::TaskKind::kEmbed) {
    if (task.normalize) {
      out.task.normalize = false;
      out.finish = [dim](float* row) { model::l2_normalize(row, dim); };
    }
    return out;
  }
  if (options.values == ChunkValues::kProbs) return out;
  const model::OutputActivation activation = model::resolve_activation(config, task.activation);
  out.task.activation = model::OutputActivation::kNone;
  if (activation != model::OutputActivation::kNone) {
    out.finish = [activation, dim](float* row) {
      model::apply_output_activation(activation, row, 1, dim);
    };
  }
  return out;
}

void reduce_windows(ChunkReduce reduce, std::span<const float> windows,
                    std::span<const std::int64_t> tokens, std::int64_t dim, float* out) {
  const std::size_t d = static_cast<std::size_t>(dim);
  const std::size_t n = windows.size() / d;
  if (n == 0 || tokens.size() != n)
    fail("internal: {} windows with {} token counts", n, tokens.size());
  if (reduce == ChunkReduce::kFirst) {
    std::copy_n(windows.begin(), d, out);
    return;
  }
  if (reduce == ChunkReduce::kMax) {
    std::copy_n(windows.begin(), d, out);
    for (std::size_t w = 1; w < n; ++w)
      for (std::size_t j = 0; j < d; ++j) out[j] = std::max(out[j], windows[w * d + j]);
    return;
  }
  std::vector<double> sum(d, 0.0);
  double weight = 0;
  for (std::size_t w = 0; w < n; ++w) {
    const double k = reduce == ChunkReduce::kTokenWeighted ? static_cast<double>(tokens[w]) : 1.0;
    weight += k;
    for (std::size_t j = 0; j < d; ++j) sum[j] += k * static_cast<double>(windows[w * d + j]);
  }
  for (std::size_t j = 0; j < d; ++j) out[j] = static_cast<float>(sum[j] / weight);
}

WindowMerger::WindowMerger(ChunkReduce reduce, std::int64_t dim, std::function<void(float*)> finish)
    : reduce_(reduce), dim_(dim), finish_(std::move(finish)) {}

void WindowMerger::finish_row(const Pending& pending, std::vector<float>& out) const {
  const std::size_t at = out.size();
  out.resize(at + static_cast<std::size_t>(dim_));
  reduce_windows(reduce_, pending.values, pending.tokens, dim_, out.data() + at);
  if (finish_) finish_(out.data() + at);
}

void WindowMerger::add(const Batch& batch, std::span<const float> values, Batch& rows,
                       std::vector<float>& row_values) {
  rows = Batch();
  rows.number = batch.number;
  row_values.clear();
  const std::size_t d = static_cast<std::size_t>(dim_);
  auto completed = [&](const WorkItem& item) {
    WorkItem& row = rows.items.emplace_back();
    row.ordinal = item.ordinal;
    row.position = item.position;
    row.id = item.id;
  };
  for (std::size_t i = 0; i < batch.items.size(); ++i) {
    const WorkItem& item = batch.items[i];
    const std::span<const float> window = values.subspan(i * d, d);
    const auto tokens = static_cast<std::int64_t>(item.ids.size());
    if (item.windows <= 1) {
      // No other window to wait for: reduce alone (the identity for every reduce) and finish.
      Pending alone{1, {window.begin(), window.end()}, {tokens}};
      finish_row(alone, row_values);
      completed(item);
      continue;
    }
    std::unique_lock lock(mutex_);
    Pending& p = pending_[item.position];
    if (p.values.empty()) {
      p.values.assign(static_cast<std::size_t>(item.windows) * d, 0.0F);
      p.tokens.assign(item.windows, 0);
    }
    std::copy(window.begin(), window.end(), p.values.begin() + item.window * d);
    p.tokens[item.window] = tokens;
    if (++p.received < item.windows) {
      // A crash here leaves a row with some windows computed and none durable.
      lock.unlock();
      fault_point("window-pending");
      continue;
    }
    Pending done = std::move(p);
    pending_.erase(item.position);
    lock.unlock();
    finish_row(done, row_values);
    completed(item);
  }
}

std::size_t WindowMerger::pending_rows() const {
  std::lock_guard lock(mutex_);
  return pending_.size();
}

}  // namespace mcinfer::sched
