// mcinfer::Model: a model directory prepared once on a backend (a reduced precision on its first
// call's rows, through the run's precision gate), its replicas kept in a pool, and the rows of
// every call (texts or token ids) taken by free replicas in batches (sched/text_predict.h).
#include "mcinfer/model.h"

#include <algorithm>

#include "api/choices.h"
#include "backends/registry.h"
#include "core/error.h"
#include "core/json.h"
#include "model/gemm_plan.h"
#include "model/model_dir.h"
#include "sched/chunking.h"
#include "sched/precision_plan.h"
#include "sched/replica_pool.h"
#include "sched/row_feeder.h"
#include "sched/run_plan.h"
#include "sched/text_predict.h"

namespace mcinfer {

struct Model::Impl {
  std::unique_ptr<backend::Backend> backend;
  std::optional<model::ModelDir> dir;
  sched::TaskPlan plan;
  model::Precision precision = model::Precision::kFp32;  // resolved
  PrecisionGate gate;
  sched::ChunkOptions chunk;
  std::size_t stride = 0;
  sched::PoolOptions pool_options;
  std::vector<std::string> warnings;
  // Reduced precisions with check rows: the weights wait for the first call's rows.
  bool gate_pending = false;
  std::string gate_failure;  // the first call's PrecisionCheckError, repeated on every call
  sched::CheckedWeights weights;
  std::unique_ptr<sched::ReplicaPool> pool;

  // Prepares the weights (checked on the rows `sample` gives) and the replicas.
  void prepare(const sched::RowSampler& sample);
  // The first call's rows decide the reduced precision's weights; later calls find them.
  void ensure_prepared(const sched::RowSampler& sample);
};

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

namespace {

sched::TaskRequest task_request(const ModelOptions& options, const api::ParsedChoices& choices) {
  sched::TaskRequest request;
  request.task = choices.task;
  request.pooling = choices.pooling;
  request.activation = choices.activation;
  request.tokenizer_compat = choices.tokenizer_compat;
  request.max_len = options.max_len;
  request.normalize = options.normalize;
  request.prompt = options.prompt;
  request.prompt_name = options.prompt_name;
  request.truncate_dim = options.truncate_dim;
  request.outputs = options.outputs;
  request.sparse_top_k = options.sparse_top_k;
  return request;
}

}  // namespace

Model Model::load(const std::filesystem::path& model_dir, const ModelOptions& options) {
  // Every name and bound is refused before any file is read.
  const api::ParsedChoices choices = api::parse_choices(options, OptionSurface::kPython);
  if (options.replicas < 0 || options.threads_per_replica < 1)
    fail_usage("replicas must be 0 (one per slot) or more, threads_per_replica 1 or more");
  auto impl = std::make_unique<Impl>();
  impl->backend = backend::make_backend(sched::backend_options(options));
  impl->dir = model::ModelDir::open(model_dir);
  impl->plan = sched::plan_task(*impl->dir, task_request(options, choices));
  impl->chunk = choices.chunk;
  impl->stride = options.stride;
  sched::check_chunking(impl->chunk, impl->stride, false, impl->plan, impl->plan.task,
                        impl->plan.prompt.source);
  // The gate's refusals are `mcinfer run`'s, before any weight is read.
  impl->gate = options;
  sched::check_bound_values(impl->gate);
  impl->precision =
      sched::check_gate(impl->gate, choices.precision, impl->plan.task, *impl->backend,
                        impl->dir->config().num_layers, impl->warnings)
          .precision;
  impl->pool_options = {options.replicas > 0 ? options.replicas : impl->backend->replica_slots(),
                        options.threads_per_replica, options.pin_threads};
  impl->gate_pending =
      impl->precision != model::Precision::kFp32 && sched::check_rows(impl->gate) > 0;
  if (!impl->gate_pending)
    impl->prepare([](std::size_t) { return std::vector<sched::WorkItem>{}; });
  return Model(std::move(impl));
}

void Model::Impl::prepare(const sched::RowSampler& sample) {
  // The evidence is about the task's own output, as a run's.
  model::TaskSpec task = plan.task;
  task.outputs.clear();
  weights =
      sched::prepare_checked(gate, precision, *dir, *backend, task, sample,
                             pool_options.replicas * pool_options.threads_per_replica, &warnings);
  pool = std::make_unique<sched::ReplicaPool>(weights.model, pool_options);
}

void Model::Impl::ensure_prepared(const sched::RowSampler& sample) {
  if (!gate_failure.empty()) throw PrecisionCheckError(gate_failure);
  if (!gate_pending) return;
  try {
    prepare(sample);
  } catch (const PrecisionCheckError& e) {
    gate_failure = e.what();
    throw;
  }
  gate_pending = false;
}

std::string Model::backend() const { return std::string(impl_->backend->name()); }
std::string Model::precision() const {
  return std::string(model::precision_name(impl_->precision));
}
std::string Model::precision_report() const {
  const sched::CheckedWeights& w = impl_->weights;
  if (!w.check && !w.int8_plan) return "";
  Json report = Json::object();
  if (w.check) report["precision_check"] = w.check->to_json();
  if (w.int8_plan) report["int8_plan"] = w.int8_plan->to_json();
  report["warnings"] = impl_->warnings;
  return report.dump();
}
std::string Model::task() const { return std::string(model::task_name(impl_->plan.task.kind)); }
int Model::replicas() const { return impl_->pool_options.replicas; }
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
  std::string prompt = plan.prompt.value, prompt_source = plan.prompt.source;
  if (options.prompt || options.prompt_name) {
    sched::PromptedTask call =
        sched::with_prompt(*impl_->dir, plan, options.prompt, options.prompt_name);
    task = std::move(call.task);
    prompt = std::move(call.prompt.value);
    prompt_source = std::move(call.prompt.source);
  }
  const bool chunked = impl_->chunk.mode == sched::LongInput::kChunk;
  if (chunked)
    sched::check_chunking(impl_->chunk, impl_->stride, !pairs.empty(), plan, task, prompt_source);
  sched::TextPrep prep{plan.tokenizer.get(), prompt, plan.strip_text, plan.max_len};
  impl_->ensure_prepared([&](std::size_t n) { return sched::sample_texts(prep, texts, pairs, n); });
  // Chunked rows: the windows computed with the task less its last step, which the merger
  // applies to each reduced row.
  std::optional<sched::WindowMerger> merger;
  sched::TextChunking chunking;
  if (chunked) {
    sched::WindowTask window = sched::window_task(task, impl_->dir->config(), impl_->chunk);
    merger.emplace(impl_->chunk.reduce, plan.dim, window.finish);
    chunking = {impl_->stride, &*merger};
    prep.chunking = &chunking;
    task = std::move(window.task);
  }
  Matrix m;
  m.rows = texts.size();
  m.cols = static_cast<std::size_t>(plan.dim);
  m.columns = plan.schema.columns;
  m.values = sched::predict_texts(*impl_->pool, prep, texts, pairs, task, plan.dim,
                                  {options.batch_tokens, options.batch_rows, options.stop,
                                   options.rows_done, impl_->backend->batch_shape()});
  return m;
}

Matrix Model::predict(const std::vector<std::string>& texts,
                      const std::vector<std::string>& pairs) const {
  const std::vector<std::string_view> text_views(texts.begin(), texts.end());
  const std::vector<std::string_view> pair_views(pairs.begin(), pairs.end());
  return predict(text_views, pair_views);
}

Matrix Model::predict_ids(const std::vector<std::vector<std::int32_t>>& ids,
                          const PredictOptions& options) const {
  if (!impl_->plan.prompt.value.empty() || options.prompt || options.prompt_name) {
    fail_usage(
        "a prompt is in force ({}) and token ids cannot carry it: give texts (predict), or "
        "load the model with prompt = \"\"",
        impl_->plan.prompt.value.empty() ? "this call's" : impl_->plan.prompt.source);
  }
  if (options.batch_tokens < 1) fail_usage("batch_tokens must be 1 or more");
  const std::int64_t vocab = impl_->dir->config().vocab_size;
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
  impl_->ensure_prepared([&](std::size_t n) {
    std::vector<sched::WorkItem> sample;
    for (std::size_t row : sched::evenly_spaced(ids.size(), std::min(n, ids.size()))) {
      sched::WorkItem& item = sample.emplace_back();
      item.ordinal = item.position = row;
      item.ids = ids[row];
    }
    return sample;
  });
  const sched::TaskPlan& plan = impl_->plan;
  Matrix m;
  m.rows = ids.size();
  m.cols = static_cast<std::size_t>(plan.dim);
  m.columns = plan.schema.columns;
  m.values = sched::predict_ids(*impl_->pool, ids, plan.task, plan.dim,
                                {options.batch_tokens, options.batch_rows, options.stop,
                                 options.rows_done, impl_->backend->batch_shape()});
  return m;
}

}  // namespace mcinfer
