#include "sched/precision_plan.h"

#include <fmt/format.h>

#include "core/error.h"
#include "model/gemm_plan.h"

namespace mcinfer::sched {
namespace {

void check_bound_value(const std::optional<double>& bound, double low, double high,
                       std::string_view flag) {
  if (bound && !(*bound >= low && *bound <= high))
    fail_usage("{} must be a number from {} to {}, not {}", flag, low, high, *bound);
}

// --min-cosine / --min-agreement: refused (exit 2) where the run could not enforce them, so that
// no bound is dropped without a word. A bound needs the precision check (reduced precision, rows
// to check) and a figure of its kind (an argmax needs classes). `auto` that resolves to fp32 on
// this CPU meets any bound by construction (fp32 is the reference): said, not refused, so that
// one command line serves every CPU.
// The figure's kind comes first, before the precision is resolved: a bound the task cannot have
// is the same mistake on every CPU, whatever this one supports.
void check_bound_kinds(const PrecisionGate& gate, const model::TaskSpec& task) {
  if (gate.min_agreement && task.kind != model::TaskKind::kClassify &&
      task.kind != model::TaskKind::kSparse) {
    fail_usage(
        "--min-agreement bounds the share of rows whose class (argmax) matches fp32, or the top-k "
        "overlap of sparse rows; an embedding run has neither (use --min-cosine)");
  }
}

void check_bounds(const PrecisionGate& gate, model::Precision requested,
                  const model::PrecisionChoice& resolved, std::vector<std::string>& warnings) {
  if (!gate.min_cosine && !gate.min_agreement) return;
  const std::string flags = gate.min_cosine && gate.min_agreement
                                ? "--min-cosine and --min-agreement"
                            : gate.min_cosine ? "--min-cosine"
                                              : "--min-agreement";
  if (resolved.precision == model::Precision::kFp32) {
    if (requested == model::Precision::kFp32) {
      fail_usage(
          "{} bound(s) a reduced-precision run against fp32; this run is fp32 (--precision fp32), "
          "the reference itself, so there is nothing to bound",
          flags);
    }
    warnings.push_back(fmt::format(
        "{} met by construction: --precision auto chose fp32 on this CPU (no native bf16), and "
        "fp32 is what the bound compares against",
        flags));
    return;
  }
  if (check_rows(gate) == 0) {
    fail_usage(
        "{} cannot be enforced: --check-precision 0 turns the precision check off; give rows to "
        "check (e.g. --check-precision 32) or drop the bound",
        flags);
  }
}

}  // namespace

void check_bound_values(const PrecisionGate& gate) {
  check_bound_value(gate.min_cosine, -1, 1, "--min-cosine");
  check_bound_value(gate.min_agreement, 0, 1, "--min-agreement");
}

model::PrecisionChoice check_gate(const PrecisionGate& gate, model::Precision requested,
                                  const model::TaskSpec& task, const backend::Backend& backend,
                                  std::int64_t layers, std::vector<std::string>& warnings) {
  check_bound_kinds(gate, task);
  const model::PrecisionChoice resolved = backend.resolve_precision(requested);
  check_bounds(gate, requested, resolved, warnings);
  if (gate.int8_keep) {
    if (resolved.precision != model::Precision::kInt8)
      fail_usage("--int8-keep applies to --precision int8 only");
    model::parse_gemm_list(*gate.int8_keep, layers);  // refused here, not after the fp32 pass
  }
  return resolved;
}

CheckedWeights prepare_checked(const PrecisionGate& gate, model::Precision precision,
                               const model::ModelDir& dir, const backend::Backend& backend,
                               const model::TaskSpec& task, const RowSampler& sample, int threads,
                               std::vector<std::string>* warnings) {
  const PrecisionBounds bounds{gate.min_cosine, gate.min_agreement, std::nullopt};
  CheckedWeights out;
  if (precision == model::Precision::kInt8) {
    Int8Request request;
    if (gate.int8_keep)
      request.keep = model::parse_gemm_list(*gate.int8_keep, dir.config().num_layers);
    request.check_rows = check_rows(gate);
    request.bounds = bounds;
    out.int8_plan = plan_int8(dir, backend, task, sample, threads, request, warnings);
    out.model = out.int8_plan->weights;
    out.check = out.int8_plan->check;
    return out;
  }
  const std::optional<PrecisionReference> reference =
      precision == model::Precision::kFp32
          ? std::nullopt
          : reference_before_run(dir, backend, task, sample, check_rows(gate), threads);
  backend::PrepareOptions options;
  options.precision = precision;
  out.model = backend.prepare(dir, options, warnings);
  if (reference) out.check = check_against(*reference, out.model, task, threads, bounds);
  return out;
}

}  // namespace mcinfer::sched
