#pragma once
// From a forward pass to the values a task writes, the same for every backend: the backend
// computes the last hidden states of the kept tokens (packed, model::PackedBatch) and, for a
// classifier, the head's logits; this file pools, applies the Dense modules, normalises, applies
// the output activation and lays several outputs side by side (row i = [output 1 | output 2 |
// ...]). Plain float math on a few vectors per sequence (see model/pooling.h for its cost).

#include <cstdint>
#include <span>
#include <vector>

#include "model/config.h"
#include "model/packing.h"
#include "model/task.h"

namespace mcinfer::model {

// Whether the task reads the classification head's logits / the last hidden states.
bool needs_logits(const TaskSpec& task);
bool needs_hidden(const TaskSpec& task);

// Writes [batch.size(), output_dim(config, task)] values into `out`. `hidden`: [tokens, hidden]
// rows of the packed kept tokens (`spans`), needed when needs_hidden(task); `logits`: [batch,
// labels], needed when needs_logits(task). Throws Error naming the Dense module whose width does
// not fit.
void write_task_outputs(const ModelConfig& config, const TaskSpec& task,
                        std::span<const SequenceInput> batch,
                        std::span<const PackedBatch::Span> spans, const float* hidden,
                        const float* logits, std::vector<float>& out);

}  // namespace mcinfer::model
