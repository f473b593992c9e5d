#include "model/task.h"

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

}  // namespace mcinfer::model
