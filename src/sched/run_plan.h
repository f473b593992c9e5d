#pragma once
// The first part of a run: everything checked and resolved before a weight is loaded or a byte
// is written — the flags, the model directory's facts, the task, the max length, the output
// columns, and the memory plan once the prepared model's size is known.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "backend/backend.h"
#include "backends/registry.h"
#include "data/predictions.h"
#include "mcinfer/backend_choice.h"
#include "model/model_dir.h"
#include "sched/launch.h"
#include "sched/row_feeder.h"
#include "sched/run.h"

namespace mcinfer::sched {

// --backend, --plugin and --devices as the backend takes them: run, Model, inspect and bench alike.
backend::BackendOptions backend_options(const BackendChoice& choice);

// What a model directory and the task options resolve to: for a run, and for the library's
// Model (include/mcinfer/model.h).
struct TaskPlan {
  model::TaskSpec task;
  std::optional<model::EmbeddingPlan> embedding;  // embed only
  std::size_t max_len = 0;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;  // null: inputs must be token ids
  model::Sourced<tokenizer::Compat> tokenizer_compat{tokenizer::Compat::kFile, "default"};
  model::Sourced<std::string> prompt{"", "none"};  // "" : no prompt
  // classify: the activation of the values, as task.activation holds it (never kAuto).
  std::optional<model::Sourced<model::OutputActivation>> activation;
  bool strip_text = false;  // sentence-transformers before 5.4 (ModelDir::strips_text)
  // sparse: the top-k in force (task.sparse.top_k; 0: every nonzero) and where it comes from.
  std::optional<model::Sourced<std::int64_t>> sparse_top_k;
  // The output columns. A sparse task's are its dense token weights (e0..e{vocab-1}), what its
  // shards hold; the output writes them as sparse rows (data::PredictionSchema::sparse).
  data::PredictionSchema schema;
  std::int64_t dim = 0;  // values per output row
};

struct TaskRequest {
  std::optional<model::TaskKind> task;
  std::optional<model::PoolingModes> pooling;
  std::optional<bool> normalize;
  model::OutputActivation activation = model::OutputActivation::kAuto;
  std::optional<std::size_t> max_len;
  std::optional<std::string> outputs;  // --outputs, unparsed (what it offers depends on the task)
  std::optional<std::string> prompt, prompt_name;     // --prompt, --prompt-name
  std::optional<tokenizer::Compat> tokenizer_compat;  // nullopt: auto
  std::optional<std::int64_t> sparse_top_k;           // --sparse-top-k
  std::optional<std::int64_t> truncate_dim;           // --truncate-dim
};

// The text side of a plan, which needs no whole config.json (so `tokenize` shares it): the
// tokenizer as `request` asks it built, the strip of sentence-transformers < 5.4, and the prompt in
// force.
void plan_text(const model::ModelDir& dir, const TaskRequest& request, TaskPlan& plan);

// A plan's task with another prompt in force (the library's prompt per call): `text`, else the
// prompt named `name`, else the directory's default, with the pooling's skip of its tokens as
// plan_task sets it. Throws UsageError as plan_task does.
struct PromptedTask {
  model::TaskSpec task;
  model::Sourced<std::string> prompt;
};
PromptedTask with_prompt(const model::ModelDir& dir, const TaskPlan& plan,
                         const std::optional<std::string>& text,
                         const std::optional<std::string>& name);

// --tokenizer-compat: as requested, else auto: transformers 5's way when config.json records a
// transformers_version of 5 or later, else the files' (no record: the files').
model::Sourced<tokenizer::Compat> resolve_tokenizer_compat(
    const model::ModelDir& dir, std::optional<tokenizer::Compat> requested);

// "tokenizer as the files say (auto: ...); prompt 'query: ' (source), its 3 tokens not pooled":
// the first line a run prints, and inspect's.
std::string describe_text_plan(const TaskPlan& plan);

// The prompt's tokens as encode() counts them for include_prompt false: the prompt alone
// tokenised (stripped first when `strip`), less its closing special token.
std::int64_t prompt_token_count(const tokenizer::Tokenizer& tokenizer, const std::string& prompt,
                                bool strip);

// Defaults: classify for a cross-encoder, embed for another sentence-transformers model, else
// classify when the model has a head, else embed; a classifier's activation as
// ModelDir::activation decides it; pooling and normalize from the sentence-transformers modules,
// else mean pooling without normalisation. Throws UsageError for a task the model cannot do, and
// Error for an activation class it does not implement.
TaskPlan plan_task(const model::ModelDir& dir, const TaskRequest& request);

// --long-input chunk fits `task` (plan.task, or a call's with its own prompt from
// `prompt_source`): a stride the windows can hold (a pair's, with `pairs`, with an empty first
// text; each row's first text takes more, and a row whose first text leaves no room is
// truncated), no prompt left out of the pooling, no sparse task yet. --stride needs chunk.
void check_chunking(const ChunkOptions& chunk, std::size_t stride, bool pairs, const TaskPlan& plan,
                    const model::TaskSpec& task, std::string_view prompt_source);

struct RunPlan : TaskPlan {
  data::InputFormat in_format = data::InputFormat::kCsv;
  data::OutputFormat out_format = data::OutputFormat::kCsv;  // of --output
  data::LineFormat shard_format = data::LineFormat::kCsv;    // of the shards
  int replicas = 1;   // default: this rank's share of the backend's replica slots
  int first_cpu = 0;  // where this rank's replicas start pinning (ranks sharing a host)
  FeedOptions feed;
  // What a replica computes for each sequence: `task`, less its last step in a chunked run
  // (applied to each row once its windows are reduced).
  WindowTask window;
  backend::BatchShape batch_shape;  // how the backend wants the dynamic schedule's batches cut
};

// Checks the flags and resolves the plan; throws UsageError or Error naming what is wrong.
RunPlan plan_run(const RunOptions& options, const model::ModelDir& dir,
                 const backend::Backend& backend, const RankInfo& rank);

struct MemoryPlan {
  std::int64_t batch_tokens = 0;   // the largest batch a replica may get
  std::uint64_t per_replica = 0;   // its activations
  std::uint64_t input_bytes = 0;   // the read-ahead of the dynamic schedule
  std::uint64_t window_bytes = 0;  // chunked runs: outputs of windows waiting for their row
  std::uint64_t weight_bytes = 0;  // the prepared model, already resident
};

// Rows a dynamic run reads, sorts and cuts at a time (window_rows, 8,192), fewer when chunked
// rows' window outputs are wide (a sparse encoder's vocabulary vectors), so that the outputs
// waiting for their row's last window (up to two read-aheads of them) stay within 256 MiB.
std::size_t read_ahead_rows(const RunOptions& options, const RunPlan& plan);

// One copy of the weights + every replica's activations for the largest batch; throws Error
// saying which flag to lower when it does not fit in the memory available.
MemoryPlan check_memory(const RunOptions& options, const RunPlan& plan,
                        const backend::Backend& backend, const backend::PreparedModel& model);

}  // namespace mcinfer::sched
