#include "sched/precision_check.h"

#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <numeric>
#include <thread>

#include "core/enum_names.h"
#include "sched/replica_pool.h"

namespace mcinfer::sched {
namespace {

// Batches of the check's rows: a few thousand tokens, as the public API batches.
constexpr std::int64_t kCheckBatchTokens = 4096;

// Outputs of `rows` through one model, [rows, dim], in batches as a run would form them: the rows
// split in `threads` contiguous parts, each through its own single-threaded replica on its own
// thread, as a run computes (one OpenMP team per replica would race under ThreadSanitizer, whose
// view of libgomp's barriers is blind, and would differ from how the run computes).
std::vector<float> outputs(const std::vector<WorkItem>& rows,
                           std::shared_ptr<const backend::PreparedModel> model,
                           const model::TaskSpec& task, int threads, std::int64_t& dim,
                           const ObserverFactory& observe = {}) {
  dim = model::output_dim(model->config(), task);
  std::vector<model::SequenceInput> inputs;
  for (const WorkItem& row : rows) inputs.push_back({row.ids, row.type_ids, row.mask});
  const std::size_t parts = reference_parts(rows.size(), threads);
  ReplicaPool pool(std::move(model), {static_cast<int>(parts), 1, false});
  return predict_rows(
      pool, inputs, task, dim, kCheckBatchTokens, [&](int r, backend::Replica& replica) {
        if (observe) {
          backend::int8_calibration_of(replica).observe_gemms(observe(static_cast<std::size_t>(r)));
        }
      });
}

backend::PrepareOptions fp32_options() {
  backend::PrepareOptions options;
  options.precision = model::Precision::kFp32;
  return options;
}

}  // namespace

std::size_t reference_parts(std::size_t rows, int threads) {
  return std::clamp<std::size_t>(static_cast<std::size_t>(threads), 1,
                                 std::max<std::size_t>(rows, 1));
}

std::vector<std::size_t> evenly_spaced(std::size_t rows, std::size_t n) {
  std::vector<std::size_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = (2 * i + 1) * rows / (2 * n);
  return out;
}

std::vector<WorkItem> sample_rows(const FeedOptions& feed, const tokenizer::Tokenizer* tokenizer,
                                  std::size_t n) {
  std::vector<WorkItem> out;
  if (n == 0) return out;
  FeedOptions count_options = feed;
  count_options.tokenize = false;
  count_options.skip_bad_rows = true;
  WorkItem item;
  std::uint64_t rows = 0;
  {
    // Scoped: its read buffer (up to the row limit) must be gone before the second pass's grows.
    RowFeeder counter(count_options, nullptr);
    while (counter.next(item)) ++rows;
  }
  if (rows == 0) return out;
  n = static_cast<std::size_t>(std::min<std::uint64_t>(n, rows));
  // The feeder passes over rows marked done without tokenising them: mark all but the sample.
  std::vector<bool> skip(rows, true);
  for (std::size_t row : evenly_spaced(rows, n)) skip[row] = false;
  FeedOptions sample_options = feed;
  sample_options.skip_bad_rows = true;
  RowFeeder feeder(sample_options, tokenizer);
  feeder.skip_done(&skip);
  while (feeder.next(item)) out.push_back(std::move(item));
  return out;
}

PrecisionCheck compare_precision(const std::vector<WorkItem>& rows,
                                 std::shared_ptr<const backend::PreparedModel> checked,
                                 std::shared_ptr<const backend::PreparedModel> reference,
                                 const model::TaskSpec& task, int threads) {
  PrecisionReference ref;
  ref.rows = rows;
  ref.outputs = outputs(rows, std::move(reference), task, threads, ref.dim);
  return check_against(ref, std::move(checked), task, threads, PrecisionBounds{});
}

std::optional<PrecisionReference> reference_before_run(
    const model::ModelDir& dir, const backend::Backend& backend, const model::TaskSpec& task,
    const RowSampler& sample, std::size_t n, int threads, const ObserverFactory& observe) {
  if (n == 0) return std::nullopt;
  const auto t0 = std::chrono::steady_clock::now();
  PrecisionReference ref;
  ref.rows = sample(n);
  // The two reading passes grew and freed buffers up to the row limit (64 MiB); hand the freed
  // heap back so that the run's own pass does not stack its buffers on top (measured: peak RSS
  // 205 MiB instead of 143 on a 512 MiB field without this).
  ::malloc_trim(0);
  if (ref.rows.empty()) return std::nullopt;
  auto fp32 = backend.prepare(dir, fp32_options(), nullptr);
  ref.outputs = outputs(ref.rows, std::move(fp32), task, threads, ref.dim, observe);
  ::malloc_trim(0);  // the fp32 packing is gone: return it before the run's weights load
  ref.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return ref;
}

void observe_fp32(const PrecisionReference& reference, const model::ModelDir& dir,
                  const backend::Backend& backend, const model::TaskSpec& task, int threads,
                  const ObserverFactory& observe) {
  std::int64_t dim = 0;
  outputs(reference.rows, backend.prepare(dir, fp32_options(), nullptr), task, threads, dim,
          observe);
  ::malloc_trim(0);
}

namespace {

// One value per row (a reranker's score, a regression): a row's cosine is ±1 and its argmax
// trivial, so the rows' scores are compared as one vector (the cosine of the score column) and
// by their order (the share of row pairs the two rank alike: a reranker's output is its order).
void compare_scores(const std::vector<float>& got, const std::vector<float>& want,
                    PrecisionCheck& check) {
  double dot = 0, na = 0, nb = 0;
  for (std::size_t r = 0; r < check.rows; ++r) {
    dot += static_cast<double>(got[r]) * want[r];
    na += static_cast<double>(got[r]) * got[r];
    nb += static_cast<double>(want[r]) * want[r];
  }
  const double cosine = (na == 0 || nb == 0) ? (na == nb ? 1.0 : 0.0) : dot / std::sqrt(na * nb);
  check.min_cosine = check.mean_cosine = cosine;
  std::size_t pairs = 0, alike = 0;
  for (std::size_t i = 0; i < check.rows; ++i) {
    for (std::size_t j = i + 1; j < check.rows; ++j) {
      if (want[i] == want[j]) continue;  // fp32 itself does not order them
      ++pairs;
      alike += (got[i] < got[j]) == (want[i] < want[j]) && got[i] != got[j];
    }
  }
  check.agreement_kind = PrecisionCheck::Agreement::kRank;
  check.agreement = pairs == 0 ? 1.0 : static_cast<double>(alike) / static_cast<double>(pairs);
}

// Each kind of agreement: its key in the report and its words in messages.
constexpr EnumNames<PrecisionCheck::Agreement, 3> kAgreementKeys{{{
    {PrecisionCheck::Agreement::kArgmax, "argmax_agreement"},
    {PrecisionCheck::Agreement::kRank, "rank_agreement"},
    {PrecisionCheck::Agreement::kTopK, "top_k_overlap"},
}}};
constexpr EnumNames<PrecisionCheck::Agreement, 3> kAgreementWords{{{
    {PrecisionCheck::Agreement::kArgmax, "argmax agreement"},
    {PrecisionCheck::Agreement::kRank, "rank agreement"},
    {PrecisionCheck::Agreement::kTopK, "top-k overlap"},
}}};

// Sparse rows: a search index keeps a row's nonzero tokens, so what matters beyond the cosine is
// whether the same tokens are kept. Per row, the share of the fp32 row's K nonzero indices among
// the checked row's K largest values (K already bounded by the run's top-k); the rows' mean.
void compare_top_k(const std::vector<float>& got, const std::vector<float>& want, std::int64_t dim,
                   PrecisionCheck& check) {
  double sum = 0;
  std::vector<std::int64_t> order(static_cast<std::size_t>(dim));
  for (std::size_t r = 0; r < check.rows; ++r) {
    const float* a = got.data() + r * static_cast<std::size_t>(dim);
    const float* b = want.data() + r * static_cast<std::size_t>(dim);
    const auto k =
        static_cast<std::size_t>(std::count_if(b, b + dim, [](float v) { return v != 0; }));
    if (k == 0) {
      sum += 1;  // nothing to find; a checked row that is not empty has cosine 0 already
      continue;
    }
    std::iota(order.begin(), order.end(), std::int64_t{0});
    std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k - 1), order.end(),
                     [a](std::int64_t x, std::int64_t y) { return a[x] > a[y]; });
    std::size_t found = 0;
    for (std::size_t i = 0; i < k; ++i) found += a[order[i]] != 0 && b[order[i]] != 0;
    sum += static_cast<double>(found) / static_cast<double>(k);
  }
  check.agreement_kind = PrecisionCheck::Agreement::kTopK;
  check.agreement = sum / static_cast<double>(check.rows);
}

}  // namespace

PrecisionCheck check_against(const PrecisionReference& reference,
                             std::shared_ptr<const backend::PreparedModel> checked,
                             const model::TaskSpec& task, int threads,
                             const PrecisionBounds& bounds) {
  const auto t0 = std::chrono::steady_clock::now();
  PrecisionCheck check;
  check.precision = std::string(model::precision_name(checked->precision()));
  check.rows = reference.rows.size();
  for (const WorkItem& row : reference.rows) {
    // A chunked row's windows share its ordinal: listed once.
    if (check.row_ordinals.empty() || check.row_ordinals.back() != row.ordinal)
      check.row_ordinals.push_back(row.ordinal);
  }
  std::int64_t dim = 0;
  const std::vector<float> got = outputs(reference.rows, std::move(checked), task, threads, dim);
  if (dim != reference.dim)
    fail("internal: precision check output widths {} and {}", dim, reference.dim);
  const std::vector<float>& want = reference.outputs;
  double cosine_sum = 0;
  std::size_t same_argmax = 0;
  for (std::size_t r = 0; r < check.rows; ++r) {
    const float* a = got.data() + r * static_cast<std::size_t>(dim);
    const float* b = want.data() + r * static_cast<std::size_t>(dim);
    double dot = 0, na = 0, nb = 0;
    for (std::int64_t j = 0; j < dim; ++j) {
      dot += static_cast<double>(a[j]) * b[j];
      na += static_cast<double>(a[j]) * a[j];
      nb += static_cast<double>(b[j]) * b[j];
      check.max_abs_diff =
          std::max(check.max_abs_diff, std::fabs(static_cast<double>(a[j]) - b[j]));
    }
    // Two zero vectors are the same output; one zero vector is as far as it gets.
    const double cosine = (na == 0 || nb == 0) ? (na == nb ? 1.0 : 0.0) : dot / std::sqrt(na * nb);
    check.min_cosine = std::min(check.min_cosine, cosine);
    cosine_sum += cosine;
    same_argmax += std::max_element(a, a + dim) - a == std::max_element(b, b + dim) - b;
  }
  if (check.rows > 0) check.mean_cosine = cosine_sum / static_cast<double>(check.rows);
  if (task.kind == model::TaskKind::kClassify && check.rows > 0)
    check.agreement = static_cast<double>(same_argmax) / static_cast<double>(check.rows);
  if (dim == 1 && check.rows > 0) compare_scores(got, want, check);
  if (task.kind == model::TaskKind::kSparse && check.rows > 0) compare_top_k(got, want, dim, check);
  check.seconds = reference.seconds +
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  enforce(check, bounds);
  return check;
}

Json PrecisionCheck::to_json() const {
  Json j = {
      {"precision", precision},   {"reference", "fp32"},         {"rows", rows},
      {"min_cosine", min_cosine}, {"mean_cosine", mean_cosine},  {"max_abs_diff", max_abs_diff},
      {"seconds", seconds},       {"row_ordinals", row_ordinals}};
  if (agreement) j[std::string(kAgreementKeys.name(agreement_kind))] = *agreement;
  if (score_column()) j["compared"] = "the score column (one value per row)";
  return j;
}

std::string PrecisionCheck::summary() const {
  if (score_column()) {
    return fmt::format(
        "precision check: {} rows in {} vs fp32: cosine of the score column {:.6f}, rows ranked "
        "alike {:.2f}% (of pairs), max abs diff {:.2e}",
        rows, precision, min_cosine, 100 * agreement.value_or(1), max_abs_diff);
  }
  std::string s = fmt::format(
      "precision check: {} rows in {} vs fp32: cosine min {:.6f} mean {:.6f}, max abs diff {:.2e}",
      rows, precision, min_cosine, mean_cosine, max_abs_diff);
  if (agreement)
    s += fmt::format(", {} {:.2f}%", kAgreementWords.name(agreement_kind), 100 * *agreement);
  return s;
}

std::string unmet_bound(const PrecisionCheck& check, const PrecisionBounds& bounds) {
  if (bounds.min_cosine && check.min_cosine < *bounds.min_cosine) {
    return fmt::format("the lowest cosine to fp32 is {:.6f}, below --min-cosine {}",
                       check.min_cosine, *bounds.min_cosine);
  }
  if (bounds.min_agreement && check.agreement && *check.agreement < *bounds.min_agreement) {
    return fmt::format("the {} with fp32 is {:.4f}, below --min-agreement {}",
                       kAgreementWords.name(check.agreement_kind), *check.agreement,
                       *bounds.min_agreement);
  }
  if (bounds.max_abs_diff && check.max_abs_diff > *bounds.max_abs_diff) {
    return fmt::format("the largest difference from fp32 is {:.4f}, above int8's target {}",
                       check.max_abs_diff, *bounds.max_abs_diff);
  }
  return "";
}

void enforce(const PrecisionCheck& check, const PrecisionBounds& bounds) {
  const std::string failed = unmet_bound(check, bounds);
  if (failed.empty()) return;
  throw PrecisionCheckError(fmt::format(
      "precision check failed: {} ({}). Nothing was written; use --precision fp32 for exact "
      "results",
      failed, check.summary()));
}

}  // namespace mcinfer::sched
