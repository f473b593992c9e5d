#include "sched/run_plan.h"

#include <set>

#include "core/system.h"

namespace mcinfer::sched {
namespace {

namespace fs = std::filesystem;

data::Format output_format(const fs::path& output) {
  const std::string ext = output.extension().string();
  return (ext == ".jsonl" || ext == ".ndjson" || ext == ".json") ? data::Format::kJsonl
                                                                 : data::Format::kCsv;
}

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
  if (task.kind == model::TaskKind::kEmbed) {
    schema.embedding = true;
    for (std::int64_t i = 0; i < embedding_dim; ++i)
      schema.columns.push_back(fmt::format("e{}", i));
    return schema;
  }
  schema.columns = label_columns(config);
  return schema;
}

void check_flags(const RunOptions& o) {
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

// --long-input chunk: a stride the windows can hold (a pair's: with an empty first text; each
// row's first text takes more, and a row whose first text leaves no room is truncated).
void check_chunking(const RunOptions& o, const TaskPlan& plan) {
  if (o.chunk.mode != LongInput::kChunk) {
    if (o.stride != 0) fail_usage("--stride applies to --long-input chunk");
    return;
  }
  if (!plan.tokenizer) return;  // rows must carry input_ids, which must fit: nothing to cut
  const std::size_t specials = plan.tokenizer->special_tokens(o.text_pair_col.has_value());
  if (plan.max_len <= specials + o.stride) {
    fail_usage(
        "--stride {} is too large for --max-len {}: a window holds {} tokens after its {} special "
        "tokens, and the stride must be smaller than that (Hugging Face refuses it too)",
        o.stride, plan.max_len, plan.max_len > specials ? plan.max_len - specials : 0, specials);
  }
}

}  // namespace

TaskPlan plan_task(const model::ModelDir& dir, const TaskRequest& request) {
  TaskPlan plan;
  const model::ModelConfig& config = dir.config();
  if (dir.has_tokenizer()) plan.tokenizer = tokenizer::Tokenizer::load(dir.path());
  model::TaskSpec& task = plan.task;
  task.kind = request.task.value_or(dir.default_task().value);
  if (task.kind == model::TaskKind::kClassify &&
      config.head != model::Head::kSequenceClassification) {
    fail_usage("{}: {} has no classification head; use --task embed", dir.path().string(),
               config.architecture.empty() ? config.family_name() : config.architecture);
  }
  task.activation = request.activation;
  if (task.kind == model::TaskKind::kEmbed) {
    plan.embedding = dir.embedding_plan(request.pooling, request.normalize);
    task.pooling = plan.embedding->pooling.value;
    task.normalize = plan.embedding->normalize.value;
    task.dense = dir.load_dense(*plan.embedding);
  }
  if (request.outputs) task.outputs = model::parse_outputs(*request.outputs, task.kind);
  plan.max_len = dir.max_len(plan.tokenizer ? plan.tokenizer->model_max_length() : std::nullopt,
                             request.max_len)
                     .value;
  plan.schema = make_schema(config, task, plan.embedding ? plan.embedding->output_dim : 0);
  plan.dim = static_cast<std::int64_t>(plan.schema.columns.size());
  return plan;
}

RunPlan plan_run(const RunOptions& o, const model::ModelDir& dir, const backend::Backend& backend,
                 const RankInfo& rank) {
  RunPlan plan;
  plan.in_format = data::resolve_format(o.input, o.format);
  plan.out_format = output_format(o.output);
  plan.replicas = o.replicas > 0 ? o.replicas : rank.replica_slots(backend.replica_slots());
  plan.first_cpu = rank.first_cpu(plan.replicas);
  plan.batch_shape = backend.batch_shape();
  check_flags(o);
  static_cast<TaskPlan&>(plan) =
      plan_task(dir, {o.task, o.pooling, o.normalize, o.activation, o.max_len, o.outputs});
  check_chunking(o, plan);
  const model::ModelConfig& config = dir.config();
  plan.window = window_task(plan.task, config, o.chunk);
  plan.feed = FeedOptions{.input = o.input,
                          .format = plan.in_format,
                          .columns = o.columns(),
                          .skip_bad_rows = o.skip_bad_rows,
                          .max_len = plan.max_len,
                          .vocab_size = config.vocab_size,
                          .type_vocab_size = config.type_vocab_size,
                          .strip_text = dir.strips_text(),
                          .long_input = o.chunk.mode,
                          .stride = o.stride};
  return plan;
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
  m.input_bytes = static_cast<std::uint64_t>(o.window_rows) * plan.max_len * 12;
  // A row's windows may span two read-aheads: the outputs of up to two read-aheads of windows
  // wait for their rows' last windows.
  if (o.chunk.mode == LongInput::kChunk)
    m.window_bytes = 2 * static_cast<std::uint64_t>(o.window_rows) * plan.dim * sizeof(float);
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
