#include "model/task_outputs.h"

#include <algorithm>

#include "core/error.h"

namespace mcinfer::model {
namespace {

bool reads_logits(OutputKind kind) {
  return kind == OutputKind::kProbs || kind == OutputKind::kLogits;
}

// The pooled (then Dense, then normalised) embedding of every sequence: [batch, dim] at `out`
// with rows `stride` apart.
void pool(const ModelConfig& config, const TaskSpec& task, std::span<const SequenceInput> batch,
          std::span<const PackedBatch::Span> spans, const float* hidden, float* out,
          std::int64_t stride) {
  const std::int64_t h = config.hidden_size;
  const std::int64_t pooled = task.pooling.width(h);
  const bool dense = task.dense && !task.dense->empty();
  std::int64_t widest = pooled, width = pooled;
  for (std::size_t k = 0; dense && k < task.dense->size(); ++k) {
    const DenseLayer& layer = (*task.dense)[k];
    if (layer.in_features != width) {
      fail("{}: Dense takes {} values but receives {} ({} pooling of {} hidden values)",
           layer.module, layer.in_features, width, task.pooling.name(), h);
    }
    width = layer.out_features;
    widest = std::max(widest, width);
  }
  // Truncation (Matryoshka) keeps the first values of the full vector, written to `full` first.
  const bool truncates = task.truncate_dim > 0 && task.truncate_dim < width;
  std::vector<float> full(truncates ? static_cast<std::size_t>(width) : 0);
  std::vector<float> stage(dense ? static_cast<std::size_t>(2 * widest) : 0);
  std::vector<std::int32_t> index;
  const bool skips = task.pool_skip > 0;
  for (std::size_t s = 0; s < spans.size(); ++s) {
    if (task.pooling.has(Pooling::kWeightedMean) || skips) {
      // Each kept token's position in the row as given (attention-mask zeros were dropped).
      index.clear();
      const auto& mask = batch[s].attention_mask;
      for (std::size_t i = 0; i < batch[s].ids.size(); ++i) {
        if (mask.empty() || mask[i] != 0) index.push_back(static_cast<std::int32_t>(i));
      }
    }
    // The kept tokens before position pool_skip are left out; the plan leaves at least the
    // closing special token after them.
    std::int64_t first = 0;
    while (skips && first < spans[s].length &&
           index[static_cast<std::size_t>(first)] < task.pool_skip)
      ++first;
    if (first == spans[s].length) fail("internal: pooling leaves out every token of a sequence");
    const float* rows = hidden + (spans[s].offset + first) * h;
    float* const row = out + static_cast<std::int64_t>(s) * stride;
    float* o = truncates ? full.data() : row;
    float* pooled_out = dense ? stage.data() : o;
    pool_sequence(task.pooling, rows, spans[s].length - first, h,
                  std::span<const std::int32_t>(index).subspan(
                      std::min<std::size_t>(static_cast<std::size_t>(first), index.size())),
                  pooled_out);
    if (first > 0 && !task.cls_after_skip && task.pooling.has(Pooling::kCls)) {
      // Before sentence-transformers 5.5, CLS pooling took token 0 even with the prompt left out.
      const auto slot =
          std::find(task.pooling.modes.begin(), task.pooling.modes.end(), Pooling::kCls) -
          task.pooling.modes.begin();
      const float* cls = hidden + spans[s].offset * h;
      std::copy(cls, cls + h, pooled_out + slot * h);
    }
    if (dense) {
      float* cur = stage.data();
      float* next = stage.data() + widest;
      for (std::size_t k = 0; k < task.dense->size(); ++k) {
        const DenseLayer& layer = (*task.dense)[k];
        float* dst = k + 1 == task.dense->size() ? o : next;
        apply_dense(layer, cur, dst);
        std::swap(cur, next);
      }
    }
    if (truncates) std::copy_n(o, task.truncate_dim, row);
    if (task.normalize) l2_normalize(row, truncates ? task.truncate_dim : width);
  }
}

// One output of several: [batch, output_width] values at `out`, rows `stride` apart.
void write_output(const ModelConfig& config, const TaskSpec& task, OutputKind kind,
                  std::span<const SequenceInput> batch, std::span<const PackedBatch::Span> spans,
                  const float* hidden, const float* logits, float* out, std::int64_t stride) {
  const auto n = static_cast<std::int64_t>(batch.size());
  auto pooled = [&](Pooling mode) {
    TaskSpec one(TaskKind::kEmbed, mode);
    one.pool_skip = task.pool_skip;  // a prompt left out of the pooling is left out of each
    one.cls_after_skip = task.cls_after_skip;
    pool(config, one, batch, spans, hidden, out, stride);
  };
  switch (kind) {
    case OutputKind::kProbs:
    case OutputKind::kLogits: {
      const std::int64_t labels = config.num_labels;
      std::vector<float> rows(logits, logits + n * labels);
      if (kind == OutputKind::kProbs)
        apply_output_activation(resolve_activation(config, task.activation), rows.data(), n,
                                labels);
      for (std::int64_t s = 0; s < n; ++s)
        std::copy_n(rows.data() + s * labels, labels, out + s * stride);
      return;
    }
    case OutputKind::kCls:
      return pooled(Pooling::kCls);
    case OutputKind::kMean:
      return pooled(Pooling::kMean);
    case OutputKind::kMax:
      return pooled(Pooling::kMax);
    case OutputKind::kNormalized:
    case OutputKind::kEmbedding: {
      TaskSpec embedding = task;
      embedding.outputs.clear();
      embedding.normalize = kind == OutputKind::kNormalized;
      return pool(config, embedding, batch, spans, hidden, out, stride);
    }
  }
}

}  // namespace

bool needs_logits(const TaskSpec& task) {
  if (task.outputs.empty()) return task.kind == TaskKind::kClassify;
  return std::any_of(task.outputs.begin(), task.outputs.end(), reads_logits);
}

bool needs_hidden(const TaskSpec& task) {
  if (task.outputs.empty()) return task.kind == TaskKind::kEmbed;
  return !std::all_of(task.outputs.begin(), task.outputs.end(), reads_logits);
}

void write_task_outputs(const ModelConfig& config, const TaskSpec& task,
                        std::span<const SequenceInput> batch,
                        std::span<const PackedBatch::Span> spans, const float* hidden,
                        const float* logits, std::vector<float>& out) {
  if ((needs_hidden(task) && hidden == nullptr) || (needs_logits(task) && logits == nullptr))
    fail("internal: the forward pass did not compute what the task reads");
  const std::int64_t dim = output_dim(config, task);
  const auto n = static_cast<std::int64_t>(batch.size());
  out.resize(static_cast<std::size_t>(n * dim));
  if (task.outputs.empty()) {
    if (task.kind == TaskKind::kEmbed)
      return pool(config, task, batch, spans, hidden, out.data(), dim);
    std::copy_n(logits, n * dim, out.data());
    apply_output_activation(resolve_activation(config, task.activation), out.data(), n, dim);
    return;
  }
  std::int64_t at = 0;
  for (OutputKind kind : task.outputs) {
    write_output(config, task, kind, batch, spans, hidden, logits, out.data() + at, dim);
    at += output_width(config, task, kind);
  }
}

}  // namespace mcinfer::model
