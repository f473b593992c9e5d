#pragma once
// What a replica computes for each sequence of a batch, independent of the device: the input
// (token ids of one sequence) and the task (class scores, or a pooled sentence embedding).

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "model/config.h"
#include "model/pooling.h"

namespace mcinfer::model {

struct SequenceInput {
  std::span<const std::int32_t> ids;             // [length], special tokens included
  std::span<const std::int32_t> type_ids;        // [length] or empty (all 0)
  std::span<const std::int32_t> attention_mask;  // [length] or empty (all 1); 0 drops a token
};

// kSparse: a SPLADE sparse encoder's weight per vocabulary token (sentence-transformers'
// SparseEncoder: the MLM head's logits through SpladePooling).
enum class TaskKind { kClassify, kEmbed, kSparse };
inline constexpr EnumNames<TaskKind, 3> kTaskNames{{{
    {TaskKind::kClassify, "classify"},
    {TaskKind::kEmbed, "embed"},
    {TaskKind::kSparse, "sparse"},
}}};
inline std::string_view task_name(TaskKind kind) { return kTaskNames.name(kind); }
inline std::optional<TaskKind> parse_task(std::string_view name) { return kTaskNames.parse(name); }

// What turns a classifier's logits into the written values; kAuto: the model's own (see
// ModelDir::activation).
enum class OutputActivation { kAuto, kSoftmax, kSigmoid, kNone };
inline constexpr EnumNames<OutputActivation, 4> kOutputActivationNames{{{
    {OutputActivation::kAuto, "auto"},
    {OutputActivation::kSoftmax, "softmax"},
    {OutputActivation::kSigmoid, "sigmoid"},
    {OutputActivation::kNone, "none"},
}}};
inline std::string_view output_activation_name(OutputActivation a) {
  return kOutputActivationNames.name(a);
}
inline std::optional<OutputActivation> parse_output_activation(std::string_view name) {
  return kOutputActivationNames.parse(name);
}

// One output of several from one forward pass (`run --outputs`). A classifier offers probs (its
// activation applied to the logits, as the single output is), logits, cls and mean (its last
// hidden states pooled); an embedding model mean, cls and max (the last hidden states pooled,
// before any Dense module or normalisation) and normalized (the model's own embedding, Dense
// modules included, L2-normalised). kEmbedding, the model's embedding before normalisation, is
// what a chunked run computes per window for normalized (sched/chunking.h); users do not
// choose it.
enum class OutputKind { kProbs, kLogits, kCls, kMean, kMax, kNormalized, kEmbedding };
inline constexpr EnumNames<OutputKind, 7> kOutputKindNames{{{
    {OutputKind::kProbs, "probs"},
    {OutputKind::kLogits, "logits"},
    {OutputKind::kCls, "cls"},
    {OutputKind::kMean, "mean"},
    {OutputKind::kMax, "max"},
    {OutputKind::kNormalized, "normalized"},
    {OutputKind::kEmbedding, "embedding"},
}}};
inline std::string_view output_kind_name(OutputKind kind) { return kOutputKindNames.name(kind); }
// The outputs `kind` offers, in the order their names are listed to users.
std::vector<OutputKind> outputs_for(TaskKind kind);
// "probs,cls" for `task`; throws UsageError naming the offered outputs for an unknown name, one
// that `task` does not offer, a repeated one or an empty list.
std::vector<OutputKind> parse_outputs(std::string_view list, TaskKind task);

// SpladePooling's pooling_strategy over a sequence's tokens and its activation_function on each
// MLM logit: relu is log1p(relu(x)), log1p_relu is log1p(log1p(relu(x))) (SpladePooling applies
// the log1p in both, and a second one for log1p_relu).
enum class SpladePooling { kMax, kSum };
inline constexpr EnumNames<SpladePooling, 2> kSpladePoolingNames{{{
    {SpladePooling::kMax, "max"},
    {SpladePooling::kSum, "sum"},
}}};
enum class SpladeActivation { kRelu, kLog1pRelu };
inline constexpr EnumNames<SpladeActivation, 2> kSpladeActivationNames{{{
    {SpladeActivation::kRelu, "relu"},
    {SpladeActivation::kLog1pRelu, "log1p_relu"},
}}};

// What a sparse task computes after the MLM head: the pooling and activation, then the `top_k`
// largest values of each row kept (sentence-transformers' max_active_dims; 0: all).
struct SparseSpec {
  SpladePooling pooling = SpladePooling::kMax;
  SpladeActivation activation = SpladeActivation::kRelu;
  std::int64_t top_k = 0;
};

// SpladePooling's activation of one logit.
float splade_activation(SpladeActivation activation, float logit);

// Keeps the `k` largest values of each of `rows` rows of `dim` (ties: the lower index), the
// others set to 0, as sentence-transformers' select_max_active_dims does (it ranks by |value|;
// SPLADE values are never negative). k <= 0 or k >= dim: nothing changes.
void keep_top_k(float* values, std::int64_t rows, std::int64_t dim, std::int64_t k);

struct TaskSpec {
  TaskSpec() = default;
  TaskSpec(TaskKind task_kind, PoolingModes pooling_modes, bool l2_normalize = false,
           OutputActivation output_activation = OutputActivation::kAuto)
      : kind(task_kind),
        pooling(std::move(pooling_modes)),
        normalize(l2_normalize),
        activation(output_activation) {}

  TaskKind kind = TaskKind::kEmbed;
  PoolingModes pooling = Pooling::kMean;
  bool normalize = false;
  OutputActivation activation = OutputActivation::kAuto;
  // Embeddings: sentence-transformers Dense modules, applied in order after pooling and before
  // normalize. Shared read-only by every replica.
  std::shared_ptr<const std::vector<DenseLayer>> dense;
  // Several outputs, concatenated per sequence in this order; empty: the one output above.
  std::vector<OutputKind> outputs;
  // Embeddings: the first `pool_skip` positions of every sequence (a prompt's tokens, with its
  // special token in front) are left out of the pooling (sentence-transformers' Pooling with
  // include_prompt false). CLS pooling then takes the first token after them when
  // `cls_after_skip` (sentence-transformers 5.5 and later), else token 0 all the same.
  std::int64_t pool_skip = 0;
  bool cls_after_skip = true;
  // kSparse only.
  SparseSpec sparse;
  // Embeddings: keep the first `truncate_dim` values (Matryoshka; 0: all), after Dense and before
  // the normalisation, which then normalises the kept values (sentence-transformers' encode with
  // truncate_dim and normalize_embeddings).
  std::int64_t truncate_dim = 0;
};

// The activation `auto` means from config.json's problem_type alone: a plain transformers
// classifier's, and what a TaskSpec built without a model directory (benchmarks, tests) gets.
// Plans resolve `auto` from the directory instead (ModelDir::activation, which also knows
// cross-encoders), so a planned TaskSpec never holds kAuto.
OutputActivation resolve_activation(const ModelConfig& config, OutputActivation requested);

// `activation` (resolved: not kAuto) on `rows` rows of `dim` logits, in place; softmax by row.
void apply_output_activation(OutputActivation activation, float* values, std::int64_t rows,
                             std::int64_t dim);

// Values per sequence a task writes: labels for classify; the vocabulary for sparse; for embed the
// pooled width (hidden size per pooling mode), or the last Dense layer's out_features; with
// outputs, the sum of theirs.
std::int64_t output_dim(const ModelConfig& config, const TaskSpec& task);
// Values of one of several outputs.
std::int64_t output_width(const ModelConfig& config, const TaskSpec& task, OutputKind kind);

}  // namespace mcinfer::model
