#include "sched/run_plan.h"

#include <charconv>
#include <set>

#include "core/system.h"
#include "sched/precision_plan.h"

namespace mcinfer::sched {

backend::BackendOptions backend_options(const BackendChoice& choice) {
  return {.name = choice.backend, .pjrt = {.plugin = choice.plugin, .devices = choice.devices}};
}
namespace {

namespace fs = std::filesystem;

std::string human_bytes(std::uint64_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

// The classifier's labels, made unique.
std::vector<std::string> label_columns(const model::ModelConfig& config) {
  std::vector<std::string> columns;
  std::set<std::string> seen = {"id"};
  for (std::size_t i = 0; i < config.labels.size(); ++i) {
    std::string name = config.labels[i];
    if (!seen.insert(name).second) {
      name = fmt::format("{}_{}", name, i);
      seen.insert(name);
    }
    columns.push_back(name);
  }
  return columns;
}

// Column names for the output: labels or e0..e{d-1}; with several outputs, each one's columns
// prefixed by its name ("probs.neg", "cls.e0"), one group per output.
data::PredictionSchema make_schema(const model::ModelConfig& config, const model::TaskSpec& task,
                                   std::int64_t embedding_dim) {
  data::PredictionSchema schema;
  if (!task.outputs.empty()) {
    for (model::OutputKind kind : task.outputs) {
      const std::string name(model::output_kind_name(kind));
      const bool labelled = kind == model::OutputKind::kProbs || kind == model::OutputKind::kLogits;
      const std::size_t first = schema.columns.size();
      if (labelled) {
        for (const std::string& label : label_columns(config))
          schema.columns.push_back(name + "." + label);
      } else {
        for (std::int64_t i = 0; i < model::output_width(config, task, kind); ++i)
          schema.columns.push_back(fmt::format("{}.e{}", name, i));
      }
      schema.groups.push_back({name, schema.columns.size() - first, labelled});
    }
    return schema;
  }
  if (task.kind == model::TaskKind::kSparse) embedding_dim = config.vocab_size;
  if (task.kind == model::TaskKind::kEmbed || task.kind == model::TaskKind::kSparse) {
    schema.embedding = true;
    schema.sparse = task.kind == model::TaskKind::kSparse;
    for (std::int64_t i = 0; i < embedding_dim; ++i)
      schema.columns.push_back(fmt::format("e{}", i));
    return schema;
  }
  schema.columns = label_columns(config);
  return schema;
}

void check_flags(const RunOptions& o) {
  check_bound_values(o);
  if (o.threads_per_replica < 1) fail_usage("--threads-per-replica must be at least 1");
  if (o.schedule == Schedule::kStatic && o.batch_size < 1)
    fail_usage("--batch-size must be at least 1");
  if (o.schedule == Schedule::kDynamic && o.batch_tokens < 1)
    fail_usage("--batch-tokens must be at least 1");
  if (o.resume && !o.shards_dir) {
    fail_usage(
        "--resume needs --shards-dir: the directory that holds the interrupted run's shards");
  }
  std::error_code ec;
  const fs::path parent = o.output.parent_path().empty() ? fs::path(".") : o.output.parent_path();
  if (!fs::is_directory(parent, ec))
    fail("{}: the output's directory does not exist", o.output.string());
  if (fs::exists(o.output, ec) && fs::equivalent(o.output, o.input, ec))
    fail_usage("--output {} is the input file", o.output.string());
}

// The output's format must hold the task's rows and be one this build writes (formats.h's
// table): refused before a weight is loaded or a row computed, not when the shards are merged.
void check_output_format(const RunOptions& o, const RunPlan& plan) {
  data::check_table_format(o.output, plan.out_format, data::row_kind(plan.schema),
                           data::parquet_available());
}

}  // namespace

void check_chunking(const ChunkOptions& chunk, std::size_t stride, bool pairs, const TaskPlan& plan,
                    const model::TaskSpec& task, std::string_view prompt_source) {
  if (chunk.mode != LongInput::kChunk) {
    if (stride != 0) fail_usage("--stride applies to --long-input chunk");
    return;
  }
  if (task.pool_skip > 0) {
    fail_usage(
        "--long-input chunk with a prompt left out of the pooling (include_prompt false, {}): "
        "only a row's first window holds the prompt, so what its windows leave out is not "
        "defined; use --long-input truncate, as sentence-transformers does",
        prompt_source);
  }
  if (!plan.tokenizer) return;  // rows must carry input_ids, which must fit: nothing to cut
  const std::size_t specials = plan.tokenizer->special_tokens(pairs);
  if (plan.max_len <= specials + stride) {
    fail_usage(
        "--stride {} is too large for --max-len {}: a window holds {} tokens after its {} special "
        "tokens, and the stride must be smaller than that (Hugging Face refuses it too)",
        stride, plan.max_len, plan.max_len > specials ? plan.max_len - specials : 0, specials);
  }
}

model::Sourced<tokenizer::Compat> resolve_tokenizer_compat(
    const model::ModelDir& dir, std::optional<tokenizer::Compat> requested) {
  if (requested) return {*requested, "--tokenizer-compat"};
  const std::optional<std::string>& version = dir.transformers_version();
  if (!version)
    return {tokenizer::Compat::kFile, "auto: config.json records no transformers_version"};
  int major = 0;
  std::from_chars(version->data(), version->data() + version->size(), major);
  return {major >= 5 ? tokenizer::Compat::kTransformers5 : tokenizer::Compat::kFile,
          fmt::format("auto: config.json transformers_version {}", *version)};
}

std::string describe_text_plan(const TaskPlan& plan) {
  std::string out = fmt::format("tokenizer {} ({})",
                                plan.tokenizer_compat.value == tokenizer::Compat::kFile
                                    ? "as its files say"
                                    : "as transformers 5 builds it",
                                plan.tokenizer_compat.source);
  if (plan.strip_text) out += "; texts stripped of edge whitespace (sentence-transformers < 5.4)";
  if (plan.prompt.value.empty()) return out + "; no prompt";
  out += fmt::format("; prompt {} ({})", Json(plan.prompt.value).dump(), plan.prompt.source);
  if (plan.task.pool_skip > 0)
    out += fmt::format(
        ", the first {} tokens (the leading special token and the prompt's) left out of the "
        "pooling",
        plan.task.pool_skip);
  return out;
}

std::int64_t prompt_token_count(const tokenizer::Tokenizer& tokenizer, const std::string& prompt,
                                bool strip) {
  const std::string_view text = strip ? model::strip_python_whitespace(prompt) : prompt;
  const std::vector<std::int32_t> ids = tokenizer.encode(text, std::nullopt, 0).ids;
  const std::vector<std::int32_t> none = tokenizer.encode("", std::nullopt, 0).ids;
  // A template that closes a sequence with a special token closes the empty one with it too.
  const bool closed = !none.empty() && !ids.empty() && ids.back() == none.back();
  return static_cast<std::int64_t>(ids.size()) - (closed ? 1 : 0);
}

namespace {

void require_tokenizer_for_prompt(const model::ModelDir& dir,
                                  const model::Sourced<std::string>& prompt, const TaskPlan& plan) {
  if (!prompt.value.empty() && !plan.tokenizer) {
    fail_usage("a prompt ({}) is text, but {} has no tokenizer files", prompt.source,
               dir.path().string());
  }
}

}  // namespace

void plan_text(const model::ModelDir& dir, const TaskRequest& request, TaskPlan& plan) {
  plan.tokenizer_compat = resolve_tokenizer_compat(dir, request.tokenizer_compat);
  if (dir.has_tokenizer())
    plan.tokenizer = tokenizer::Tokenizer::load(dir.path(), plan.tokenizer_compat.value);
  plan.strip_text = dir.strips_text();
  plan.prompt = dir.prompt(request.prompt, request.prompt_name);
  require_tokenizer_for_prompt(dir, plan.prompt, plan);
}

namespace {

// The tokens of the prompt the pooling leaves out (include_prompt false).
void plan_prompt_pooling(const model::ModelDir& dir, const TaskPlan& plan,
                         const model::Sourced<std::string>& prompt, model::TaskSpec& task) {
  task.pool_skip = 0;
  task.cls_after_skip = model::TaskSpec{}.cls_after_skip;
  if (prompt.value.empty()) return;
  if (task.kind != model::TaskKind::kEmbed || dir.pools_prompt()) return;
  task.pool_skip = prompt_token_count(*plan.tokenizer, prompt.value, plan.strip_text);
  task.cls_after_skip = dir.st_behaviour().cls_after_prompt;
  if (static_cast<std::size_t>(task.pool_skip) + 1 >= plan.max_len) {
    fail_usage(
        "the prompt ({}) takes {} tokens with its special token, which --max-len {} leaves no "
        "room for a text after (the Pooling module leaves the prompt's tokens out: "
        "include_prompt false)",
        prompt.source, task.pool_skip, plan.max_len);
  }
}

}  // namespace

namespace {

// A SparseEncoder runs --task sparse only, and --task sparse needs one: its SpladePooling, and
// the top-k of --sparse-top-k, else the model's max_active_dims, else none.
void plan_sparse(const model::ModelDir& dir, const TaskRequest& request, TaskPlan& plan) {
  model::TaskSpec& task = plan.task;
  const model::StSplade* splade = dir.splade();
  if (task.kind != model::TaskKind::kSparse) {
    if (splade) {
      fail_usage(
          "{}: a SparseEncoder computes token weights: --task sparse (its default), not "
          "--task {}",
          dir.path().string(), model::task_name(task.kind));
    }
    if (request.sparse_top_k) fail_usage("--sparse-top-k applies to --task sparse");
    return;
  }
  if (!splade) {
    fail_usage(
        "{}: --task sparse needs a sentence-transformers SparseEncoder directory "
        "(modules.json with a fill-mask Transformer and SpladePooling)",
        dir.path().string());
  }
  task.sparse.pooling = splade->pooling;
  task.sparse.activation = splade->activation;
  if (request.sparse_top_k) {
    if (*request.sparse_top_k < 1)
      fail_usage("--sparse-top-k {} must be at least 1", *request.sparse_top_k);
    plan.sparse_top_k = {*request.sparse_top_k, "--sparse-top-k"};
  } else if (dir.max_active_dims()) {
    plan.sparse_top_k = {*dir.max_active_dims(),
                         "config_sentence_transformers.json: max_active_dims"};
  } else {
    plan.sparse_top_k = {0, "default: every nonzero"};
  }
  task.sparse.top_k = plan.sparse_top_k->value;
}

}  // namespace

PromptedTask with_prompt(const model::ModelDir& dir, const TaskPlan& plan,
                         const std::optional<std::string>& text,
                         const std::optional<std::string>& name) {
  PromptedTask out{plan.task, dir.prompt(text, name)};
  require_tokenizer_for_prompt(dir, out.prompt, plan);
  plan_prompt_pooling(dir, plan, out.prompt, out.task);
  return out;
}

TaskPlan plan_task(const model::ModelDir& dir, const TaskRequest& request) {
  TaskPlan plan;
  const model::ModelConfig& config = dir.config();
  plan_text(dir, request, plan);
  model::TaskSpec& task = plan.task;
  task.kind = request.task.value_or(dir.default_task().value);
  if (task.kind == model::TaskKind::kClassify &&
      config.head != model::Head::kSequenceClassification) {
    fail_usage("{}: {} has no classification head; use --task embed", dir.path().string(),
               config.architecture.empty() ? config.family_name() : config.architecture);
  }
  plan_sparse(dir, request, plan);
  if (task.kind == model::TaskKind::kClassify) {
    plan.activation = dir.activation(request.activation);
    task.activation = plan.activation->value;
  }
  if (task.kind == model::TaskKind::kEmbed) {
    plan.embedding = dir.embedding_plan(request.pooling, request.normalize);
    task.pooling = plan.embedding->pooling.value;
    task.normalize = plan.embedding->normalize.value;
    task.dense = dir.load_dense(*plan.embedding);
  }
  if (request.outputs) task.outputs = model::parse_outputs(*request.outputs, task.kind);
  if (request.truncate_dim) {
    if (task.kind != model::TaskKind::kEmbed)
      fail_usage("--truncate-dim applies to embeddings (--task embed), not {}",
                 model::task_name(task.kind));
    if (request.outputs)
      fail_usage("--truncate-dim with --outputs is not supported: give one or the other");
    const std::int64_t width = model::output_width(config, task, model::OutputKind::kEmbedding);
    if (*request.truncate_dim < 1 || *request.truncate_dim > width)
      fail_usage("--truncate-dim {} is not in [1, {}] (the model's embedding width)",
                 *request.truncate_dim, width);
    task.truncate_dim = *request.truncate_dim;
  }
  plan.max_len = dir.max_len(plan.tokenizer ? plan.tokenizer->model_max_length() : std::nullopt,
                             request.max_len)
                     .value;
  plan_prompt_pooling(dir, plan, plan.prompt, plan.task);
  plan.schema = make_schema(
      config, task,
      plan.embedding ? model::output_width(config, task, model::OutputKind::kEmbedding) : 0);
  plan.dim = static_cast<std::int64_t>(plan.schema.columns.size());
  return plan;
}

RunPlan plan_run(const RunOptions& o, const model::ModelDir& dir, const backend::Backend& backend,
                 const RankInfo& rank) {
  RunPlan plan;
  plan.in_format = data::resolve_input_format(o.input, o.format);
  plan.out_format = data::run_output_format(o.output);
  plan.replicas = o.replicas > 0 ? o.replicas : rank.replica_slots(backend.replica_slots());
  plan.first_cpu = rank.first_cpu(plan.replicas);
  plan.batch_shape = backend.batch_shape();
  check_flags(o);
  static_cast<TaskPlan&>(plan) =
      plan_task(dir, {o.task, o.pooling, o.normalize, o.activation, o.max_len, o.outputs, o.prompt,
                      o.prompt_name, o.tokenizer_compat, o.sparse_top_k, o.truncate_dim});
  check_chunking(o.chunk, o.stride, o.text_pair_col.has_value(), plan, plan.task,
                 plan.prompt.source);
  check_output_format(o, plan);
  plan.shard_format = data::shard_format(plan.out_format, data::row_kind(plan.schema));
  const model::ModelConfig& config = dir.config();
  plan.window = window_task(plan.task, config, o.chunk);
  plan.feed = FeedOptions{.input = o.input,
                          .format = plan.in_format,
                          .columns = o.columns(),
                          .skip_bad_rows = o.skip_bad_rows,
                          .max_len = plan.max_len,
                          .vocab_size = config.vocab_size,
                          .type_vocab_size = config.type_vocab_size,
                          .prompt = plan.prompt.value,
                          .strip_text = plan.strip_text,
                          .long_input = o.chunk.mode,
                          .stride = o.stride};
  return plan;
}

std::size_t read_ahead_rows(const RunOptions& o, const RunPlan& plan) {
  if (o.chunk.mode != LongInput::kChunk || plan.dim <= 0) return o.window_rows;
  constexpr std::uint64_t kWindowOutputBudget = 256ull << 20;
  const std::uint64_t per_row = 2 * static_cast<std::uint64_t>(plan.dim) * sizeof(float);
  const auto cap =
      static_cast<std::size_t>(std::max<std::uint64_t>(64, kWindowOutputBudget / per_row));
  return std::min(o.window_rows, cap);
}

MemoryPlan check_memory(const RunOptions& o, const RunPlan& plan, const backend::Backend& backend,
                        const backend::PreparedModel& model) {
  MemoryPlan m;
  const auto max_len = static_cast<std::int64_t>(plan.max_len);
  m.batch_tokens = o.schedule == Schedule::kStatic
                       ? static_cast<std::int64_t>(o.batch_size) * max_len
                       : std::max<std::int64_t>(o.batch_tokens, max_len);
  m.per_replica = backend.replica_bytes(model.config(), m.batch_tokens, max_len,
                                        o.threads_per_replica, model.precision());
  m.weight_bytes = model.stats().resident_bytes();
  // Windows of chunked rows are items of the read-ahead like rows, each at most max_len tokens.
  const std::size_t read_ahead = read_ahead_rows(o, plan);
  m.input_bytes = static_cast<std::uint64_t>(read_ahead) * plan.max_len * 12;
  // A row's windows may span two read-aheads: the outputs of up to two read-aheads of windows
  // wait for their rows' last windows.
  if (o.chunk.mode == LongInput::kChunk)
    m.window_bytes = 2 * static_cast<std::uint64_t>(read_ahead) * plan.dim * sizeof(float);
  const std::uint64_t planned =
      static_cast<std::uint64_t>(plan.replicas) * m.per_replica + m.input_bytes + m.window_bytes;
  const std::uint64_t available = sys::available_memory_bytes();
  if (available > 0 && planned > available) {
    fail(
        "memory plan does not fit: {} replicas x {} of activations (batches of up to {} tokens) + "
        "{} of input read-ahead{} = {}, but only {} is available (the {} of weights are already "
        "loaded). Lower --replicas or {}",
        plan.replicas, human_bytes(m.per_replica), m.batch_tokens, human_bytes(m.input_bytes),
        m.window_bytes ? fmt::format(" + {} of window outputs", human_bytes(m.window_bytes)) : "",
        human_bytes(planned), human_bytes(available), human_bytes(m.weight_bytes),
        o.schedule == Schedule::kStatic ? "--batch-size or --max-len" : "--batch-tokens");
  }
  return m;
}

}  // namespace mcinfer::sched
