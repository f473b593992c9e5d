// mcinfer::run: the public options, spelled as the CLI's flags, checked and turned into the run
// pipeline's (sched/run.h).
#include "mcinfer/run.h"

#include "core/error.h"
#include "data/rows.h"
#include "sched/run.h"
#include "sched/run_plan.h"

namespace mcinfer {
namespace {

template <typename Enum, std::size_t N>
Enum parse_flag(const EnumNames<Enum, N>& names, const std::string& value, std::string_view flag) {
  if (auto parsed = names.parse(value)) return *parsed;
  fail_usage("{} must be {}, not '{}'", flag, names.choices(), value);
}

sched::RunOptions to_sched(const RunOptions& o) {
  if (o.replicas < 0) fail_usage("--replicas must be positive (0: one per replica slot)");
  sched::RunOptions s;
  static_cast<RunSettings&>(s) = o;
  if (o.task) s.task = parse_flag(model::kTaskNames, *o.task, "--task");
  if (o.pooling) s.pooling = parse_flag(model::kPoolingNames, *o.pooling, "--pooling");
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

std::vector<std::string> run_flag_choices(std::string_view flag) {
  if (flag == "--format") return data::kInputFormatNames.names();
  if (flag == "--task") return model::kTaskNames.names();
  if (flag == "--pooling") return model::kPoolingNames.names();
  if (flag == "--activation") return model::kOutputActivationNames.names();
  if (flag == "--precision") return model::kPrecisionNames.names();
  if (flag == "--schedule") return sched::kScheduleNames.names();
  if (flag == "--long-input") return sched::kLongInputNames.names();
  if (flag == "--chunk-reduce") return sched::kChunkReduceNames.names();
  if (flag == "--chunk-values") return sched::kChunkValuesNames.names();
  if (flag == "--on-bad-row") return {"error", "skip"};
  if (flag == "--tokenizer-compat") {
    std::vector<std::string> names = {"auto"};
    for (std::string& name : tokenizer::kCompatNames.names()) names.push_back(std::move(name));
    return names;
  }
  fail_usage("internal: {} is not a choice of RunOptions", flag);
}

}  // namespace mcinfer
