#include "sched/int8_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace mcinfer::sched {
namespace {

// The plan of a model prepared in int8 (its backend reports one).
backend::Int8Facts int8_facts_of(const backend::PreparedModel& model) {
  std::optional<backend::Int8Facts> facts = model.int8_facts();
  if (!facts) fail("internal: an int8 model without int8 facts");
  return *std::move(facts);
}

std::size_t index_of(model::GemmId id) {
  return static_cast<std::size_t>(id.layer) * model::kGemmSlots + static_cast<std::size_t>(id.slot);
}

// Squared error and squared norm per GEMM, one accumulator per part of the reference pass (each
// part runs on its own thread, with its own replica of the int8 model).
class ErrorMeter {
 public:
  ErrorMeter(std::shared_ptr<const backend::PreparedModel> int8, std::size_t parts)
      : int8_(std::move(int8)), parts_(parts) {
    for (auto& p : parts_)
      p.sums.assign(static_cast<std::size_t>(int8_->config().num_layers) * model::kGemmSlots, {});
  }

  backend::GemmObserver observer(std::size_t part) {
    Part& p = parts_.at(part);
    p.replica = int8_->make_replica(1);
    return [&p](const backend::GemmCall& call) {
      p.y.resize(static_cast<std::size_t>(call.rows * call.out));
      backend::int8_calibration_of(*p.replica).run_gemm(call.id, call.x, call.rows, p.y.data());
      auto& [err, norm] = p.sums[index_of(call.id)];
      for (std::int64_t i = 0; i < call.rows * call.out; ++i) {
        const double d = static_cast<double>(p.y[i]) - call.y[i];
        err += d * d;
        norm += static_cast<double>(call.y[i]) * call.y[i];
      }
    };
  }

  std::vector<GemmError> ranked() const {
    std::vector<GemmError> out;
    const std::int64_t layers = int8_->config().num_layers;
    for (std::int64_t l = 0; l < layers; ++l) {
      for (int s = 0; s < model::kGemmSlots; ++s) {
        const model::GemmId id{l, static_cast<model::GemmSlot>(s)};
        double err = 0, norm = 0;
        for (const Part& p : parts_) {
          err += p.sums[index_of(id)].first;
          norm += p.sums[index_of(id)].second;
        }
        out.push_back({id, norm > 0 ? std::sqrt(err / norm) : 0.0});
      }
    }
    std::stable_sort(out.begin(), out.end(), [](const GemmError& a, const GemmError& b) {
      return a.relative_error > b.relative_error;
    });
    return out;
  }

 private:
  struct Part {
    std::unique_ptr<backend::Replica> replica;
    std::vector<float> y;
    std::vector<std::pair<double, double>> sums;
  };
  std::shared_ptr<const backend::PreparedModel> int8_;
  std::vector<Part> parts_;
};

}  // namespace

PrecisionBounds default_int8_targets(const model::TaskSpec& task) {
  PrecisionBounds b;
  if (task.kind == model::TaskKind::kEmbed) {
    b.min_cosine = 0.99;
  } else if (task.kind == model::TaskKind::kSparse) {
    // Token weights reach tens (sum pooling): an absolute bound would not scale with them. The
    // row's vector and the tokens it keeps are what an index sees.
    b.min_cosine = 0.99;
    b.min_agreement = 0.95;
  } else {
    b.max_abs_diff = 0.05;
  }
  return b;
}

PrecisionBounds int8_targets(const model::TaskSpec& task, const PrecisionBounds& user) {
  PrecisionBounds targets = default_int8_targets(task);
  if (user.min_cosine) targets.min_cosine = user.min_cosine;
  if (user.min_agreement) targets.min_agreement = user.min_agreement;
  if (user.max_abs_diff) targets.max_abs_diff = user.max_abs_diff;
  return targets;
}

Int8Plan plan_int8(const model::ModelDir& dir, const backend::Backend& backend,
                   const model::TaskSpec& task, const RowSampler& sample, int threads,
                   const Int8Request& request, std::vector<std::string>* warnings) {
  Int8Plan plan;
  plan.automatic = !request.keep.has_value();
  plan.kept_precision = std::string(model::precision_name(backend.int8_fallback_precision()));
  const std::int64_t layers = dir.config().num_layers;
  // The fp32 pass over the check rows: the reference outputs, and the range of every input
  // channel of every GEMM, which the int8 weights are smoothed with.
  const std::size_t parts = reference_parts(request.check_rows, threads);
  std::vector<model::InputRanges> part_ranges(parts);
  const std::optional<PrecisionReference> reference = reference_before_run(
      dir, backend, task, sample, request.check_rows, threads, [&](std::size_t part) {
        return [&ranges = part_ranges.at(part)](const backend::GemmCall& call) {
          ranges.add(call.id, call.x, call.rows, call.in);
        };
      });
  model::InputRanges ranges;
  for (const auto& r : part_ranges) ranges.merge(r);
  part_ranges.clear();
  auto load = [&](const std::vector<model::GemmId>& keep) {
    plan.weights.reset();  // one int8 copy at a time
    backend::PrepareOptions options;
    options.precision = model::Precision::kInt8;
    options.int8_keep = keep;
    options.int8_ranges = reference ? &ranges : nullptr;
    plan.weights = backend.prepare(dir, options, warnings);
    plan.summary =
        model::int8_plan_summary(int8_facts_of(*plan.weights).kept, layers, plan.kept_precision);
  };
  load(request.keep.value_or(std::vector<model::GemmId>{}));
  if (!reference) return plan;  // no check rows: nothing to calibrate, measure or choose with
  auto check = [&] {
    ++plan.attempts;
    plan.check = check_against(*reference, plan.weights, task, threads, PrecisionBounds{});
  };
  check();
  if (!plan.automatic) {
    enforce(*plan.check, request.bounds);
    return plan;
  }
  const PrecisionBounds targets = int8_targets(task, request.bounds);
  std::string missed = unmet_bound(*plan.check, targets);
  if (missed.empty()) return plan;
  // Which GEMMs to keep: the same rows through fp32 again, each GEMM's input also through its
  // int8 twin.
  {
    ErrorMeter meter(plan.weights, parts);
    observe_fp32(*reference, dir, backend, task, threads,
                 [&](std::size_t part) { return meter.observer(part); });
    plan.errors = meter.ranked();
  }
  const std::size_t total = plan.errors.size();
  for (std::size_t kept = 1; !missed.empty() && kept <= total / 2; kept *= 2) {
    std::vector<model::GemmId> keep;
    for (std::size_t i = 0; i < kept; ++i) keep.push_back(plan.errors[i].id);
    load(keep);
    check();
    missed = unmet_bound(*plan.check, targets);
  }
  if (!missed.empty()) {
    throw PrecisionCheckError(fmt::format(
        "precision check failed: int8 misses its targets on the check rows even with {} ({}; {}). "
        "Nothing was written; use --precision bf16 or fp32, choose the kept GEMMs with "
        "--int8-keep, or relax --min-cosine / --min-agreement",
        plan.summary, missed, plan.check->summary()));
  }
  return plan;
}

Json Int8Plan::to_json() const {
  Json kept = Json::array();
  const backend::Int8Facts facts = int8_facts_of(*weights);
  for (const model::GemmId& id : facts.kept) kept.push_back(model::gemm_key(id));
  Json worst = Json::array();
  for (std::size_t i = 0; i < errors.size() && i < 8; ++i)
    worst.push_back(
        {{"gemm", model::gemm_key(errors[i].id)}, {"relative_error", errors[i].relative_error}});
  return {{"summary", summary},
          {"input_smoothing", facts.smoothed},
          {"kept", kept},
          {"kept_precision", kept_precision},
          {"chosen", automatic ? "automatic (check rows)" : "--int8-keep"},
          {"weight_sets_checked", attempts},
          {"largest_gemm_errors", worst}};
}

}  // namespace mcinfer::sched
