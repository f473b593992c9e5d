#include "sched/run_report.h"

#include "core/system.h"
#include "sched/mpi_world.h"
#include "sched/run_record.h"

namespace mcinfer::sched {
namespace {

double seconds_between(RunTally::Clock::time_point a, RunTally::Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

Json replica_stats(const ReportInputs& in, const RunTally& tally) {
  Json out = Json::array();
  for (int r = 0; r < in.plan.replicas; ++r) {
    const auto& c = tally.counters.replica[static_cast<std::size_t>(r)];
    out.push_back({{"replica", r},
                   {"rows", c.rows.load()},
                   {"batches", c.batches.load()},
                   {"busy_seconds", static_cast<double>(c.busy_ns.load()) / 1e9},
                   {"shard", in.shards.shard_path(r, in.plan.shard_format).filename().string()}});
  }
  return out;
}

// Where the time went, summed over every thread that did the work, and each part's share.
void add_profile(Json& report, const RunTally& tally) {
  backend::OpProfile total;
  for (const auto& p : tally.profiles) total.add(p);
  Json seconds_by = Json::object();
  for (std::size_t k = 0; k < static_cast<std::size_t>(backend::OpKind::kCount); ++k)
    seconds_by[std::string(backend::op_kind_name(static_cast<backend::OpKind>(k)))] =
        total.seconds[k];
  double writes = 0;
  for (double w : tally.write_seconds) writes += w;
  seconds_by["tokenization"] = tally.feed.tokenize_seconds;
  seconds_by["input_io"] = tally.feed.read_seconds;
  seconds_by["shard_io"] = writes;
  seconds_by["merge_io"] = seconds_between(tally.computed, tally.finished);
  double all = 0;
  for (const auto& [k, v] : seconds_by.items()) all += v.get<double>();
  Json share = Json::object();
  for (const auto& [k, v] : seconds_by.items()) share[k] = all > 0 ? v.get<double>() / all : 0.0;
  report["time_seconds"] = seconds_by;
  report["time_share"] = share;
}

}  // namespace

Json make_report(const ReportInputs& in, const RunTally& tally) {
  const RunOptions& o = in.options;
  const model::ModelConfig& config = in.dir.config();
  const RunCounters& counters = tally.counters;
  const FeedStats& feed = tally.feed;
  Json bad = Json::array();
  for (const auto& b : tally.bad_rows) bad.push_back({{"line", b.line}, {"reason", b.reason}});
  const double wall = seconds_between(tally.started, tally.finished);
  const std::uint64_t rows_done = counters.rows_done.load();
  const std::uint64_t real = counters.real_tokens.load(), padded = counters.padded_tokens.load();
  const std::uint64_t computed = counters.computed_tokens.load();
  Json report = {
      {"mcinfer_version", MCINFER_VERSION_STRING},
      {"command_line", o.command_line},
      {"model_dir", o.model_dir.string()},
      {"architecture", config.architecture.empty() ? config.family_name() : config.architecture},
      {"input", o.input.string()},
      {"output", o.output.string()},
      {"task", model::task_name(in.plan.task.kind)},
      {"schedule", schedule_name(o.schedule)},
      {"backend", in.backend.name()},
      {"replicas", in.plan.replicas},
      {"threads_per_replica", o.threads_per_replica},
      {"max_len", in.plan.max_len},
      {"device", in.backend.description()},
      {"precision", model::precision_name(in.precision.precision)},
      {"precision_reason", in.precision.reason},
      {"precision_check", in.check ? in.check->to_json() : Json(nullptr)},
      {"int8_plan", in.int8_plan ? in.int8_plan->to_json() : Json(nullptr)},
      {"rank", in.rank.rank},
      {"world", in.rank.world},
      {"launcher", in.rank.source},
      {"wrote_output", tally.wrote_output},
      {"mpi", tally.rank0_merges ? mpi_library() : "none"},
      {"startup_seconds", seconds_between(tally.started, tally.ready)},
      {"rows", feed.rows},
      {"distinct_ids", tally.merged.distinct_ids},
      {"duplicate_ids", feed.rows - tally.merged.distinct_ids},
      {"resumed", o.resume},
      {"rows_from_earlier_run", in.shards.done_rows()},
      {"rows_computed", rows_done - in.shards.done_rows()},
      {"padding_rows", rows_done - std::min<std::uint64_t>(rows_done, feed.rows)},
      {"bad_rows", feed.bad_rows},
      {"bad_row_list", bad},
      {"invalid_utf8_replacements", feed.invalid_utf8},
      {"long_input", kLongInputNames.name(o.chunk.mode)},
      {"truncated_rows", feed.truncated},
      {"truncated_lost_tokens", feed.lost_tokens},
      {"chunked_rows", feed.chunked},
      {"windows", feed.windows},
      {"real_tokens", real},
      {"padded_tokens", padded},
      {"padding_fraction", padded > 0 ? 1.0 - static_cast<double>(real) / padded : 0.0},
      // What the backend computed: compiled backends pad each batch to a compiled shape.
      {"computed_tokens", computed},
      {"computed_padding_fraction",
       computed > 0 ? 1.0 - static_cast<double>(real) / static_cast<double>(computed) : 0.0},
      {"wall_seconds", wall},
      {"compute_seconds", seconds_between(tally.started, tally.computed)},
      {"rank_rows", rows_done},
      {"merge_seconds", seconds_between(tally.computed, tally.finished)},
      {"rows_per_second", wall > 0 ? feed.rows / wall : 0.0},
      {"replica_stats", replica_stats(in, tally)},
      {"peak_rss_bytes", sys::peak_rss_bytes()},
      {"weights_resident_bytes", in.memory.weight_bytes},
      {"planned_activation_bytes_per_replica", in.memory.per_replica},
      {"warnings", in.warnings},
  };
  if (in.plan.embedding) report["embedding"] = in.plan.embedding->to_json();
  report["text"] = text_plan_json(in.plan);
  const auto backend_counters = in.model.counters();
  if (!backend_counters.empty()) {
    report["backend_counters"] = Json::object();
    for (const auto& [name, value] : backend_counters) report["backend_counters"][name] = value;
  }
  if (!in.plan.schema.groups.empty()) {
    Json outputs = Json::array();
    for (const auto& g : in.plan.schema.groups)
      outputs.push_back({{"name", g.name}, {"values", g.count}});
    report["outputs"] = outputs;
  }
  if (o.chunk.mode == LongInput::kChunk) {
    report["chunking"] = {{"stride", o.stride}, {"reduce", kChunkReduceNames.name(o.chunk.reduce)}};
    if (!in.plan.embedding) report["chunking"]["values"] = kChunkValuesNames.name(o.chunk.values);
  }
  for (const auto& w : tally.merged.warnings) report["warnings"].push_back(w);
  if (o.profile) add_profile(report, tally);
  return report;
}

void print_summary(const ReportInputs& in, const RunTally& tally) {
  const RunOptions& o = in.options;
  const double wall = seconds_between(tally.started, tally.finished);
  if (tally.wrote_output) {
    fmt::print(stderr,
               "mcinfer: wrote {} rows ({} distinct ids) to {} in {:.1f} s ({:.1f} rows/s)\n",
               tally.merged.rows_written, tally.merged.distinct_ids, o.output.string(), wall,
               wall > 0 ? tally.feed.rows / wall : 0.0);
  } else {
    const std::string next =
        tally.rank0_merges
            ? std::string("rank 0 merges every rank's shards into ") + o.output.string()
            : fmt::format(
                  "when every rank is done: mcinfer merge --shards-dir {} --expect {} "
                  "--output {}",
                  in.shards.path().string(), o.input.string(), o.output.string());
    fmt::print(stderr, "mcinfer: {} done: {} rows of {} computed into {} in {:.1f} s; {}\n",
               in.rank.describe(), tally.counters.rows_done.load(), tally.feed.rows,
               in.shards.path().string(), wall, next);
  }
  if (tally.feed.bad_rows)
    fmt::print(stderr, "mcinfer: skipped {} bad rows (see --report)\n", tally.feed.bad_rows);
  if (tally.feed.truncated) {
    fmt::print(stderr,
               "mcinfer: {} rows were longer than --max-len {} and were truncated, losing {} "
               "tokens (--long-input chunk computes every token)\n",
               tally.feed.truncated, in.plan.max_len, tally.feed.lost_tokens);
  }
  if (tally.feed.chunked) {
    fmt::print(stderr, "mcinfer: {} rows were longer than --max-len {}: {} windows computed\n",
               tally.feed.chunked, in.plan.max_len, tally.feed.windows);
  }
}

Json text_plan_json(const TaskPlan& plan) {
  return {{"prompt",
           {{"value", plan.prompt.value},
            {"source", plan.prompt.source},
            {"tokens_not_pooled", plan.task.pool_skip}}},
          {"tokenizer_compat",
           {{"value", tokenizer::kCompatNames.name(plan.tokenizer_compat.value)},
            {"source", plan.tokenizer_compat.source}}},
          {"strip_text", plan.strip_text}};
}

}  // namespace mcinfer::sched
