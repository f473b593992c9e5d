#include "model/task.h"

#include <algorithm>
#include <cmath>

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

std::int64_t output_dim(const ModelConfig& config, const TaskSpec& task) {
  if (task.kind == TaskKind::kClassify) return config.num_labels;
  if (task.dense && !task.dense->empty()) return task.dense->back().out_features;
  return task.pooling.width(config.hidden_size);
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
