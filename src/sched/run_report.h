#pragma once
// The last part of a run: what it did, as the JSON report (--report) and the closing line.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/json.h"
#include "merge/merge.h"
#include "sched/int8_plan.h"
#include "sched/launch.h"
#include "sched/precision_check.h"
#include "sched/progress.h"
#include "sched/run_plan.h"
#include "sched/run_record.h"

namespace mcinfer::sched {

// What the computing part of a run counted; the replica threads write their own slots.
struct RunTally {
  using Clock = std::chrono::steady_clock;
  RunTally(int replicas, Clock::time_point start)
      : started(start),
        counters(replicas),
        profiles(static_cast<std::size_t>(replicas)),
        write_seconds(static_cast<std::size_t>(replicas), 0.0) {}

  // Started; ready to compute (model loaded, input counted for the static schedule); every row
  // computed; output written (or, for a rank that does not merge, its part done).
  Clock::time_point started, ready, computed, finished;
  RunCounters counters;
  std::vector<backend::OpProfile> profiles;  // per replica, with --profile
  // Per replica: appending its batches to its shard and fsyncing shard and manifest.
  std::vector<double> write_seconds;
  FeedStats feed;
  std::vector<BadRowRecord> bad_rows;
  merge::Report merged;
  bool wrote_output = false;  // false for the ranks of a distributed run that do not merge
  bool rank0_merges = false;  // a distributed run joined through MPI: rank 0 writes the output
};

struct ReportInputs {
  const RunOptions& options;
  const RunPlan& plan;
  const model::ModelDir& dir;
  const backend::Backend& backend;
  const model::PrecisionChoice& precision;
  const std::optional<PrecisionCheck>& check;
  const Int8Plan* int8_plan;  // null unless int8
  const MemoryPlan& memory;
  const ShardsDir& shards;
  const RankInfo& rank;
  const std::vector<std::string>& warnings;
  const backend::PreparedModel& model;
};

Json make_report(const ReportInputs& in, const RunTally& tally);

// What the text of each row becomes before the tokenizer, and how the tokenizer was built:
// {"prompt": {"value", "source", "tokens_not_pooled"}, "tokenizer_compat": {"value",
// "source"}, "strip_text"}. For the report and `inspect --json`.
Json text_plan_json(const TaskPlan& plan);

// "mcinfer: wrote N rows (M distinct ids) to OUT in S s (R rows/s)" and skipped rows; for a
// rank that does not merge, what it computed and the command that finishes the run.
void print_summary(const ReportInputs& in, const RunTally& tally);

}  // namespace mcinfer::sched
