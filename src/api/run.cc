// mcinfer::run: the public options, spelled as the CLI's flags, checked and turned into the run
// pipeline's (sched/run.h).
#include "mcinfer/run.h"

#include "core/error.h"
#include "sched/run.h"
#include "sched/run_plan.h"

namespace mcinfer {
namespace {

template <typename Enum, std::size_t N>
Enum parse_flag(const EnumNames<Enum, N>& names, const std::string& value, std::string_view flag) {
  if (auto parsed = names.parse(value)) return *parsed;
  fail_usage("{} must be {}, not '{}'", flag, names.choices(), value);
}

model::PoolingModes parse_pooling_flag(const std::string& value) {
  if (auto mode = model::parse_pooling(value)) return *mode;
  fail_usage("--pooling must be mean, cls, max, mean_sqrt_len, weightedmean or lasttoken, not '{}'",
             value);
}

sched::RunOptions to_sched(const RunOptions& o) {
  if (o.replicas < 0) fail_usage("--replicas must be positive (0: one per replica slot)");
  sched::RunOptions s;
  static_cast<RunSettings&>(s) = o;
  if (o.task) s.task = parse_flag(model::kTaskNames, *o.task, "--task");
  if (o.pooling) s.pooling = parse_pooling_flag(*o.pooling);
  s.activation = parse_flag(model::kOutputActivationNames, o.activation, "--activation");
  s.precision = parse_flag(model::kPrecisionNames, o.precision, "--precision");
  s.schedule = parse_flag(sched::kScheduleNames, o.schedule, "--schedule");
  s.chunk = {.mode = parse_flag(sched::kLongInputNames, o.long_input, "--long-input"),
             .reduce = parse_flag(sched::kChunkReduceNames, o.chunk_reduce, "--chunk-reduce"),
             .values = parse_flag(sched::kChunkValuesNames, o.chunk_values, "--chunk-values")};
  s.tokenizer_compat = sched::parse_tokenizer_compat(o.tokenizer_compat, "--tokenizer-compat");
  return s;
}

}  // namespace

std::string run(const RunOptions& options) { return sched::run_job(to_sched(options)).dump(2); }

}  // namespace mcinfer
