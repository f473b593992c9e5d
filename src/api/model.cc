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
      impl->prepared, sched::PoolOptions{replicas, options.threads_per_replica, true});
  return Model(std::move(impl));
}

std::string Model::backend() const { return std::string(impl_->backend->name()); }
std::string Model::precision() const {
  return std::string(model::precision_name(impl_->prepared->precision()));
}
std::string Model::task() const { return std::string(model::task_name(impl_->plan.task.kind)); }
int Model::replicas() const { return impl_->pool->size(); }
std::size_t Model::max_len() const { return impl_->plan.max_len; }

Matrix Model::predict(const std::vector<std::string>& texts,
                      const std::vector<std::string>& pairs) const {
  const tokenizer::Tokenizer* tok = impl_->plan.tokenizer.get();
  if (tok == nullptr)
    fail_usage("{}: no tokenizer files: give token ids (predict_ids)", impl_->dir->path().string());
  if (!pairs.empty() && pairs.size() != texts.size())
    fail_usage("{} texts but {} pairs: give one pair per text, or none", texts.size(),
               pairs.size());
  std::vector<std::vector<std::int32_t>> ids(texts.size()), types(texts.size());
  const sched::TaskPlan& plan = impl_->plan;
  std::string buffer;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const std::string_view text =
        sched::prepare_text(texts[i], plan.prompt.value, plan.strip_text, buffer);
    std::optional<std::string_view> pair;
    if (!pairs.empty()) pair = pairs[i];
    if (pair && plan.strip_text) pair = model::strip_python_whitespace(*pair);
    tokenizer::Encoding enc = tok->encode(text, pair, impl_->plan.max_len);
    ids[i] = std::move(enc.ids);
    types[i] = std::move(enc.type_ids);
  }
  return impl_->run(ids, types);
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
