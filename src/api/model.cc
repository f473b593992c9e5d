// mcinfer::Model: a model directory prepared once on a backend, its replicas kept in a pool, and
// rows split over them in contiguous parts, each part in batches of about kBatchTokens tokens.
#include "mcinfer/model.h"

#include <algorithm>

#include "backends/registry.h"
#include "core/error.h"
#include "model/model_dir.h"
#include "sched/replica_pool.h"
#include "sched/row_feeder.h"
#include "sched/run_plan.h"
#include "sched/text_predict.h"

namespace mcinfer {
namespace {

// Tokens per batch a replica computes at once: the CLI's default for the dynamic schedule.
constexpr std::int64_t kBatchTokens = 4096;

}  // namespace

struct Model::Impl {
  std::unique_ptr<backend::Backend> backend;
  std::optional<model::ModelDir> dir;
  sched::TaskPlan plan;
  std::shared_ptr<const backend::PreparedModel> prepared;
  std::unique_ptr<sched::ReplicaPool> pool;

  Matrix run(const std::vector<std::vector<std::int32_t>>& ids,
             const std::vector<std::vector<std::int32_t>>& types) const;
};

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model Model::load(const std::filesystem::path& model_dir, const ModelOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->backend = backend::make_backend(
      {.name = options.backend, .pjrt = {.plugin = options.plugin, .devices = options.devices}});
  impl->dir = model::ModelDir::open(model_dir);
  sched::TaskRequest request;
  if (!options.task.empty()) {
    request.task = model::parse_task(options.task);
    if (!request.task) fail_usage("task must be classify or embed, not '{}'", options.task);
  }
  request.max_len = options.max_len;
  request.normalize = options.normalize;
  request.prompt = options.prompt;
  request.prompt_name = options.prompt_name;
  request.truncate_dim = options.truncate_dim;
  request.tokenizer_compat =
      sched::parse_tokenizer_compat(options.tokenizer_compat, "tokenizer_compat");
  if (!options.pooling.empty()) {
    const auto pooling = model::kPoolingNames.parse(options.pooling);
    if (!pooling) fail_usage("pooling '{}' is not a pooling mode", options.pooling);
    request.pooling = model::PoolingModes(*pooling);
  }
  impl->plan = sched::plan_task(*impl->dir, request);
  const auto precision = model::parse_precision(options.precision);
  if (!precision)
    fail_usage("precision must be {}, not '{}'", model::kPrecisionNames.choices(),
               options.precision);
  backend::PrepareOptions prepare;
  prepare.precision = impl->backend->resolve_precision(*precision).precision;
  impl->prepared = impl->backend->prepare(*impl->dir, prepare, nullptr);
  if (options.replicas < 0 || options.threads_per_replica < 1)
    fail_usage("replicas must be 0 (one per slot) or more, threads_per_replica 1 or more");
  const int replicas = options.replicas > 0 ? options.replicas : impl->backend->replica_slots();
  impl->pool = std::make_unique<sched::ReplicaPool>(
      impl->prepared,
      sched::PoolOptions{replicas, options.threads_per_replica, options.pin_threads});
  return Model(std::move(impl));
}

std::string Model::backend() const { return std::string(impl_->backend->name()); }
std::string Model::precision() const {
  return std::string(model::precision_name(impl_->prepared->precision()));
}
std::string Model::task() const { return std::string(model::task_name(impl_->plan.task.kind)); }
int Model::replicas() const { return impl_->pool->size(); }
std::size_t Model::max_len() const { return impl_->plan.max_len; }

std::vector<std::string> Model::columns() const { return impl_->plan.schema.columns; }

Matrix Model::predict(std::span<const std::string_view> texts,
                      std::span<const std::string_view> pairs,
                      const PredictOptions& options) const {
  const sched::TaskPlan& plan = impl_->plan;
  if (plan.tokenizer == nullptr)
    fail_usage("{}: no tokenizer files: give token ids (predict_ids)", impl_->dir->path().string());
  if (options.batch_tokens < 1) fail_usage("batch_tokens must be 1 or more");
  model::TaskSpec task = plan.task;
  std::string prompt = plan.prompt.value;
  if (options.prompt || options.prompt_name) {
    sched::PromptedTask call =
        sched::with_prompt(*impl_->dir, plan, options.prompt, options.prompt_name);
    task = std::move(call.task);
    prompt = std::move(call.prompt.value);
  }
  Matrix m;
  m.rows = texts.size();
  m.cols = static_cast<std::size_t>(plan.dim);
  m.columns = plan.schema.columns;
  m.values = sched::predict_texts(
      *impl_->pool, {plan.tokenizer.get(), prompt, plan.strip_text, plan.max_len}, texts, pairs,
      task, plan.dim, {options.batch_tokens, options.batch_rows, options.stop, options.rows_done});
  return m;
}

Matrix Model::predict(const std::vector<std::string>& texts,
                      const std::vector<std::string>& pairs) const {
  const std::vector<std::string_view> text_views(texts.begin(), texts.end());
  const std::vector<std::string_view> pair_views(pairs.begin(), pairs.end());
  return predict(text_views, pair_views);
}

Matrix Model::predict_ids(const std::vector<std::vector<std::int32_t>>& ids) const {
  if (!impl_->plan.prompt.value.empty()) {
    fail_usage(
        "a prompt is in force ({}) and token ids cannot carry it: give texts (predict), or "
        "load the model with prompt = \"\"",
        impl_->plan.prompt.source);
  }
  const std::int64_t vocab = impl_->prepared->config().vocab_size;
  for (std::size_t r = 0; r < ids.size(); ++r) {
    if (ids[r].empty()) fail_usage("row {}: no token ids", r);
    if (ids[r].size() > impl_->plan.max_len)
      fail_usage("row {}: {} token ids, more than max_len {}", r, ids[r].size(),
                 impl_->plan.max_len);
    for (std::size_t i = 0; i < ids[r].size(); ++i) {
      if (ids[r][i] < 0 || ids[r][i] >= vocab)
        fail_usage("row {}: token id {} at position {} is outside the vocabulary [0, {})", r,
                   ids[r][i], i, vocab);
    }
  }
  return impl_->run(ids, {});
}

Matrix Model::Impl::run(const std::vector<std::vector<std::int32_t>>& ids,
                        const std::vector<std::vector<std::int32_t>>& types) const {
  Matrix m;
  m.rows = ids.size();
  m.cols = static_cast<std::size_t>(plan.dim);
  m.columns = plan.schema.columns;
  std::vector<model::SequenceInput> rows;
  rows.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i)
    rows.push_back({ids[i], types.empty() ? std::span<const std::int32_t>() : types[i], {}});
  m.values = sched::predict_rows(*pool, rows, plan.task, plan.dim, kBatchTokens);
  return m;
}

}  // namespace mcinfer
