// mcinfer::run: the public options, spelled as the CLI's flags, checked and turned into the run
// pipeline's (sched/run.h).
#include "mcinfer/run.h"

#include "core/error.h"
#include "sched/run.h"

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
  sched::RunOptions s;
  s.model_dir = o.model_dir;
  s.input = o.input;
  s.output = o.output;
  s.format = o.format;
  s.columns.id_col = o.id_col;
  s.columns.text_col = o.text_col;
  s.columns.text_pair_col = o.text_pair_col;
  if (o.task) s.task = parse_flag(model::kTaskNames, *o.task, "--task");
  if (o.pooling) s.pooling = parse_pooling_flag(*o.pooling);
  s.normalize = o.normalize;
  s.activation = parse_flag(model::kOutputActivationNames, o.activation, "--activation");
  s.max_len = o.max_len;
  s.backend = o.backend;
  s.precision = parse_flag(model::kPrecisionNames, o.precision, "--precision");
  s.check_precision_rows = o.check_precision_rows;
  s.min_cosine = o.min_cosine;
  s.min_agreement = o.min_agreement;
  s.int8_keep = o.int8_keep;
  if (o.replicas < 0) fail_usage("--replicas must be positive (0: one per replica slot)");
  s.replicas = o.replicas;
  s.threads_per_replica = o.threads_per_replica;
  s.schedule = parse_flag(sched::kScheduleNames, o.schedule, "--schedule");
  s.batch_size = o.batch_size;
  s.batch_tokens = o.batch_tokens;
  s.shards_dir = o.shards_dir;
  s.resume = o.resume;
  s.skip_bad_rows = o.skip_bad_rows;
  s.report_path = o.report_path;
  s.quiet = o.quiet;
  s.pin_threads = o.pin_threads;
  s.profile = o.profile;
  s.command_line = o.command_line;
  s.stop = o.stop;
  return s;
}

}  // namespace

std::string run(const RunOptions& options) { return sched::run_job(to_sched(options)).dump(2); }

}  // namespace mcinfer
