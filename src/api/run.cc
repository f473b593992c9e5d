// mcinfer::run: the public options, spelled as the CLI's flags, checked and turned into the run
// pipeline's (sched/run.h).
#include "mcinfer/run.h"

#include "api/choices.h"
#include "core/error.h"
#include "data/rows.h"
#include "sched/run.h"
#include "sched/run_plan.h"

namespace mcinfer {
namespace {

sched::RunOptions to_sched(const RunOptions& o) {
  if (o.replicas < 0) fail_usage("--replicas must be positive (0: one per replica slot)");
  sched::RunOptions s;
  static_cast<RunSettings&>(s) = o;
  const api::ParsedChoices choices = api::parse_choices(o, OptionSurface::kCli);
  s.task = choices.task;
  s.pooling = choices.pooling;
  s.activation = choices.activation;
  s.precision = choices.precision;
  s.schedule = choices.schedule;
  s.chunk = choices.chunk;
  s.tokenizer_compat = choices.tokenizer_compat;
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
