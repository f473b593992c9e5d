#pragma once
// Which GEMMs an int8 run quantizes. Before anything is written, the check rows (--check-precision)
// go through the fp32 model; on the way, every dense GEMM's input also goes through its int8 twin,
// which measures each GEMM's own quantization error on real activations. If int8 as a whole
// misses the accuracy targets on those rows, the GEMMs with the largest errors are kept in the
// fallback precision (bf16 where the CPU has it, else fp32), 1, 2, 4, ... of them, until the
// targets hold (at most half of them: past that int8 is not worth it and the run stops, exit 4).
// `--int8-keep` replaces the choice.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "model/gemm_plan.h"
#include "sched/precision_check.h"

namespace mcinfer::sched {

struct GemmError {
  model::GemmId id;
  double relative_error = 0;  // ‖y_int8 − y_fp32‖ / ‖y_fp32‖ over the check rows
};

struct Int8Plan {
  std::shared_ptr<const backend::PreparedModel> weights;  // int8, with the kept GEMMs
  std::optional<PrecisionCheck> check;  // of those weights (nullopt: no check rows)
  std::vector<GemmError> errors;        // measured, largest first (empty: not measured)
  bool automatic = false;               // kept GEMMs chosen here, not by --int8-keep
  int attempts = 0;                     // weight sets checked
  std::string summary;                  // "int8: 46 of 48 GEMMs, bf16: layer 11 FFN out"
  std::string kept_precision;           // the backend's int8 fallback ("bf16", "fp32")
  Json to_json() const;
};

struct Int8Request {
  std::optional<std::vector<model::GemmId>> keep;  // --int8-keep
  std::size_t check_rows = 32;
  PrecisionBounds bounds;  // the user's: added to int8's default targets (int8_targets)
};

// The default targets: embeddings cosine ≥ 0.99 on every check row; sparse rows that cosine and
// a top-k overlap ≥ 0.95; classifiers |Δp| ≤ 0.05.
PrecisionBounds default_int8_targets(const model::TaskSpec& task);
// What the automatic plan must meet: the defaults, with the user's bounds added (a bound of a
// default's kind replaces it; another kind is checked besides it), never fewer.
PrecisionBounds int8_targets(const model::TaskSpec& task, const PrecisionBounds& user);

// Loads the int8 weights of `dir` as the request says. Throws PrecisionCheckError (exit 4) when
// the targets cannot be met.
Int8Plan plan_int8(const model::ModelDir& dir, const backend::Backend& backend,
                   const model::TaskSpec& task, const RowSampler& sample, int threads,
                   const Int8Request& request, std::vector<std::string>* warnings);

}  // namespace mcinfer::sched
