#pragma once
// A reduced precision's weights with their evidence, the same for `mcinfer run` and for
// mcinfer::Model: the gate's bounds checked against the task and the resolved precision, then the
// fp32 side of the check on sampled rows (its weights freed before the run's are loaded), int8's
// GEMMs calibrated and chosen on those rows, the bounds enforced.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mcinfer/precision_gate.h"
#include "model/precision.h"
#include "sched/int8_plan.h"
#include "sched/precision_check.h"

namespace mcinfer::sched {

// Rows a reduced-precision run compares against fp32 unless the gate says otherwise: enough to
// catch a broken path or a model that bf16 hurts, at about 1% of a 20,000-row run.
inline constexpr std::size_t kDefaultCheckRows = 32;

inline std::size_t check_rows(const PrecisionGate& gate) {
  return gate.check_precision_rows.value_or(kDefaultCheckRows);
}

// A bound is a number in its range (NaN would be accepted and never enforced). Checked with the
// flags, before the model is read.
void check_bound_values(const PrecisionGate& gate);
// The gate against the task and the precision `backend` resolves `requested` to, which it
// returns: a bound of a kind the task's output has (an argmax needs classes), whatever the CPU;
// a bound the run can enforce (refused for --precision fp32 and for 0 check rows; `auto` that
// resolved to fp32 meets it by construction, a warning says so); --int8-keep only with int8 and
// naming GEMMs of the model's `layers`. Run and Model call it before any weight is read.
model::PrecisionChoice check_gate(const PrecisionGate& gate, model::Precision requested,
                                  const model::TaskSpec& task, const backend::Backend& backend,
                                  std::int64_t layers, std::vector<std::string>& warnings);

struct CheckedWeights {
  std::shared_ptr<const backend::PreparedModel> model;
  std::optional<PrecisionCheck> check;  // none: fp32, or no check rows
  std::optional<Int8Plan> int8_plan;
};

// The weights of `dir` in `precision` (resolved) for `task`'s own output, checked on the rows
// `sample` gives. Throws PrecisionCheckError (exit 4) when a bound or int8's targets are missed.
CheckedWeights prepare_checked(const PrecisionGate& gate, model::Precision precision,
                               const model::ModelDir& dir, const backend::Backend& backend,
                               const model::TaskSpec& task, const RowSampler& sample, int threads,
                               std::vector<std::string>* warnings);

}  // namespace mcinfer::sched
