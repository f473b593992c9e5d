#pragma once
// `--check-precision N`: before a reduced-precision run writes anything, N rows sampled evenly
// from the input are computed in the run's precision and in fp32, and the two are compared. The
// figures go to the progress output and the report; bounds (--min-cosine, --min-agreement) stop
// the run before any output exists.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/error.h"
#include "core/json.h"
#include "model/model_dir.h"
#include "sched/row_feeder.h"

namespace mcinfer::sched {

// Thrown when a bound is not met; the CLI exits with status 4.
using mcinfer::PrecisionCheckError;

struct PrecisionBounds {
  std::optional<double> min_cosine;     // every sampled row's output vs fp32
  std::optional<double> min_agreement;  // PrecisionCheck::agreement (classify and sparse only)
  // Not a flag: int8's default target for classifiers (the largest |Δp| on a sampled row).
  std::optional<double> max_abs_diff;
  bool any() const { return min_cosine || min_agreement || max_abs_diff; }
};

struct PrecisionCheck {
  std::string precision;  // the precision checked against fp32
  std::size_t rows = 0;
  double min_cosine = 1, mean_cosine = 1;  // of each row's output vector
  double max_abs_diff = 0;                 // any output value (probabilities for classifiers)
  // What agreement means depends on the output: a classifier's share of rows with the fp32
  // argmax; for one value per row (rerankers, regression), where min_cosine is the score column's
  // cosine, the share of row pairs ranked alike; for sparse rows the mean share of the fp32 row's
  // nonzero indices found among the checked row's as many largest (the top-k overlap).
  enum class Agreement { kArgmax, kRank, kTopK };
  Agreement agreement_kind = Agreement::kArgmax;
  std::optional<double> agreement;  // none for embeddings
  bool score_column() const { return agreement_kind == Agreement::kRank; }
  // The checked rows' positions among the input's good rows (0-based): which rows int8's
  // calibration saw, so that accuracy can be judged on the others.
  std::vector<std::uint64_t> row_ordinals;
  double seconds = 0;
  Json to_json() const;
  std::string summary() const;  // one line for the progress output
};

// `n` of `rows` row indices (n <= rows) spread evenly, row i·rows/n + rows/2n: the rows a
// precision check samples, from a run's input or a Model call's rows.
std::vector<std::size_t> evenly_spaced(std::size_t rows, std::size_t n);

// Up to `n` good rows spread evenly over the input (evenly_spaced), tokenised; bad rows
// are passed over (the run itself applies --on-bad-row). Reads the input twice but tokenises
// only the rows it returns.
std::vector<WorkItem> sample_rows(const FeedOptions& feed, const tokenizer::Tokenizer* tokenizer,
                                  std::size_t n);

// Runs `rows` through both models (same task, `threads` threads each) and compares (no bounds).
PrecisionCheck compare_precision(const std::vector<WorkItem>& rows,
                                 std::shared_ptr<const backend::PreparedModel> checked,
                                 std::shared_ptr<const backend::PreparedModel> reference,
                                 const model::TaskSpec& task, int threads);

// Up to `n` rows to check, spread evenly over the rows at hand: a run's input (sample_rows), a
// Model call's texts (sample_texts).
using RowSampler = std::function<std::vector<WorkItem>(std::size_t n)>;

// The fp32 side of the pre-run check, computed before the run's own weights are loaded so that
// the fp32 and reduced-precision copies are never resident together (bert-base: 418 MiB of fp32
// packing on top of 256 MiB of bf16 otherwise): `n` rows sampled from the input and their outputs
// through the fp32 weights of `dir`, which are freed on return. Nothing (nullopt) when n is 0
// or the input has no good rows (the run itself reports that).
struct PrecisionReference {
  std::vector<WorkItem> rows;
  std::vector<float> outputs;  // [rows, dim]
  std::int64_t dim = 0;
  double seconds = 0;  // sampling, loading the fp32 weights and running them
};
// `observe`, when given, makes one observer per part of the rows (the parts run on their own
// threads, each through its own replica) that sees every GEMM of the fp32 pass.
using ObserverFactory = std::function<backend::GemmObserver(std::size_t part)>;
std::optional<PrecisionReference> reference_before_run(
    const model::ModelDir& dir, const backend::Backend& backend, const model::TaskSpec& task,
    const RowSampler& sample, std::size_t n, int threads, const ObserverFactory& observe = {});
// The reference's rows through the fp32 weights of `dir` again, for the observers only.
void observe_fp32(const PrecisionReference& reference, const model::ModelDir& dir,
                  const backend::Backend& backend, const model::TaskSpec& task, int threads,
                  const ObserverFactory& observe);
// How many parts (threads) the reference pass splits `rows` rows into.
std::size_t reference_parts(std::size_t rows, int threads);

// The same rows through `checked`, compared with the reference; `bounds` enforced.
PrecisionCheck check_against(const PrecisionReference& reference,
                             std::shared_ptr<const backend::PreparedModel> checked,
                             const model::TaskSpec& task, int threads,
                             const PrecisionBounds& bounds);

// Throws PrecisionCheckError naming the figure and the bound when one is not met.
void enforce(const PrecisionCheck& check, const PrecisionBounds& bounds);
// The first bound `check` does not meet, in words; empty when it meets them all.
std::string unmet_bound(const PrecisionCheck& check, const PrecisionBounds& bounds);

}  // namespace mcinfer::sched
