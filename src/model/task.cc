#include "model/task.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace mcinfer::model {

OutputActivation resolve_activation(const ModelConfig& config, OutputActivation requested) {
  if (requested != OutputActivation::kAuto) return requested;
  switch (config.problem_type) {
    case ProblemType::kSingleLabel:
      return OutputActivation::kSoftmax;
    case ProblemType::kMultiLabel:
      return OutputActivation::kSigmoid;
    case ProblemType::kRegression:
      return OutputActivation::kNone;
  }
  return OutputActivation::kNone;
}

float splade_activation(SpladeActivation activation, float logit) {
  if (logit <= 0.0f) return 0.0f;
  const float once = std::log1p(logit);
  return activation == SpladeActivation::kRelu ? once : std::log1p(once);
}

void keep_top_k(float* values, std::int64_t rows, std::int64_t dim, std::int64_t k) {
  if (k <= 0 || k >= dim) return;
  std::vector<std::int32_t> order(static_cast<std::size_t>(dim));
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = values + r * dim;
    for (std::int64_t i = 0; i < dim; ++i)
      order[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
    // The k-th largest by (value descending, index ascending): everything after it is dropped.
    std::nth_element(
        order.begin(), order.begin() + k - 1, order.end(),
        [&](std::int32_t a, std::int32_t b) { return row[a] != row[b] ? row[a] > row[b] : a < b; });
    for (auto it = order.begin() + k; it != order.end(); ++it) row[*it] = 0.0f;
  }
}

std::vector<OutputKind> outputs_for(TaskKind kind) {
  if (kind == TaskKind::kSparse) return {};
  if (kind == TaskKind::kClassify)
    return {OutputKind::kProbs, OutputKind::kLogits, OutputKind::kCls, OutputKind::kMean};
  return {OutputKind::kMean, OutputKind::kCls, OutputKind::kMax, OutputKind::kNormalized};
}

std::vector<OutputKind> parse_outputs(std::string_view list, TaskKind task) {
  if (task == TaskKind::kSparse)
    fail_usage("--outputs: --task sparse has one output, its token weights (no --outputs)");
  const std::vector<OutputKind> offered = outputs_for(task);
  std::vector<std::string_view> names;
  for (OutputKind k : offered) names.push_back(output_kind_name(k));
  std::vector<OutputKind> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view name = list.substr(start, comma - start);
    const auto kind = kOutputKindNames.parse(name);
    if (!kind || std::find(offered.begin(), offered.end(), *kind) == offered.end()) {
      fail_usage("--outputs: '{}' is not an output of --task {} (it offers {})", name,
                 task_name(task), fmt::join(names, ", "));
    }
    if (std::find(out.begin(), out.end(), *kind) != out.end())
      fail_usage("--outputs: '{}' is listed twice", name);
    out.push_back(*kind);
    start = comma + 1;
  }
  return out;
}

std::int64_t output_width(const ModelConfig& config, const TaskSpec& task, OutputKind kind) {
  switch (kind) {
    case OutputKind::kProbs:
    case OutputKind::kLogits:
      return config.num_labels;
    case OutputKind::kCls:
    case OutputKind::kMean:
    case OutputKind::kMax:
      return config.hidden_size;
    case OutputKind::kNormalized:
    case OutputKind::kEmbedding: {
      const std::int64_t width = task.dense && !task.dense->empty()
                                     ? task.dense->back().out_features
                                     : task.pooling.width(config.hidden_size);
      return task.truncate_dim > 0 ? std::min(task.truncate_dim, width) : width;
    }
  }
  return 0;
}

std::int64_t output_dim(const ModelConfig& config, const TaskSpec& task) {
  if (task.kind == TaskKind::kSparse) return config.vocab_size;
  if (!task.outputs.empty()) {
    std::int64_t dim = 0;
    for (OutputKind kind : task.outputs) dim += output_width(config, task, kind);
    return dim;
  }
  return output_width(
      config, task,
      task.kind == TaskKind::kClassify ? OutputKind::kLogits : OutputKind::kEmbedding);
}

void apply_output_activation(OutputActivation activation, float* values, std::int64_t rows,
                             std::int64_t dim) {
  const std::span<float> all(values, static_cast<std::size_t>(rows * dim));
  switch (activation) {
    case OutputActivation::kSoftmax:
      for (std::int64_t s = 0; s < rows; ++s) {
        float* row = values + s * dim;
        const float mx = *std::max_element(row, row + dim);
        double total = 0;
        for (std::int64_t j = 0; j < dim; ++j) total += std::exp(static_cast<double>(row[j]) - mx);
        for (std::int64_t j = 0; j < dim; ++j)
          row[j] = static_cast<float>(std::exp(static_cast<double>(row[j]) - mx) / total);
      }
      break;
    case OutputActivation::kSigmoid:
      for (auto& v : all) v = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(v))));
      break;
    case OutputActivation::kNone:
    case OutputActivation::kAuto:
      break;
  }
}

}  // namespace mcinfer::model
