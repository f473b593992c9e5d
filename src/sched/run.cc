#include "sched/run.h"

#include <unistd.h>

#include <chrono>

#include "backends/registry.h"
#include "core/error.h"
#include "core/file_writer.h"
#include "core/system.h"
#include "merge/merge.h"
#include "sched/fingerprint.h"
#include "sched/finish.h"
#include "sched/int8_plan.h"
#include "sched/launch.h"
#include "sched/mpi_world.h"
#include "sched/precision_check.h"
#include "sched/precision_plan.h"
#include "sched/progress.h"
#include "sched/replica_pool.h"
#include "sched/run_plan.h"
#include "sched/run_record.h"
#include "sched/run_report.h"
#include "sched/shard_writer.h"
#include "sched/sources.h"

namespace mcinfer::sched {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The ranks' collective word on success, once per rank: under MPI every rank must reach it, on
// success or failure, or the others would wait forever. A no-op without MPI.
class RankBarrier {
 public:
  explicit RankBarrier(const RankInfo& rank) : world_(join_mpi_world(rank)) {}
  bool joined() const { return world_ != nullptr; }
  std::vector<int> failed_ranks(bool succeeded) {
    if (!world_ || reported_) return {};
    reported_ = true;
    return world_->failed_ranks(succeeded);
  }
  void fail() { failed_ranks(false); }

 private:
  std::unique_ptr<MpiWorld> world_;
  bool reported_ = false;
};

using PreparedRun = CheckedWeights;

// The model in the run's precision, with the evidence for a reduced precision gathered before
// anything is written: the fp32 side first, its own weights freed before the run's are loaded
// (int8: its GEMMs chosen on the same rows).
PreparedRun prepare_model(const RunOptions& o, const RunPlan& plan, const model::ModelDir& dir,
                          const backend::Backend& backend, model::Precision precision,
                          std::vector<std::string>& warnings) {
  // The evidence is about the task's own output (probabilities or the embedding), whatever
  // --outputs adds.
  model::TaskSpec task = plan.task;
  task.outputs.clear();
  PreparedRun run = prepare_checked(
      o, precision, dir, backend, task,
      [&](std::size_t n) { return sample_rows(plan.feed, plan.tokenizer.get(), n); },
      plan.replicas * o.threads_per_replica, &warnings);
  if (!o.quiet && run.check) fmt::print(stderr, "mcinfer: {}\n", run.check->summary());
  if (!o.quiet && run.int8_plan) {
    const Int8Plan& p = *run.int8_plan;
    fmt::print(stderr, "mcinfer: {} ({})\n", p.summary,
               p.automatic ? (p.check ? "checked on the check rows"
                                      : "--check-precision 0: not checked, and no input "
                                        "smoothing calibrated")
                           : "--int8-keep");
  }
  return run;
}

// What the results depend on; --resume refuses to mix runs that differ in any of it. Every
// value by name.
Json run_fingerprint(const RunOptions& o, const RunPlan& plan, const model::ModelDir& dir,
                     const PreparedRun& prepared, const RankInfo& rank) {
  Json flags = {
      {"backend", o.backend},
      {"task", model::task_name(plan.task.kind)},
      {"max_len", plan.max_len},
      {"strip_text", plan.strip_text},
      {"id_col", o.id_col},
      {"text_col", o.text_col},
      {"text_pair_col", o.text_pair_col.value_or("")},
      {"input_format", data::format_name(plan.in_format)},
      {"output_format", data::format_name(plan.out_format)},
      {"on_bad_row", o.skip_bad_rows ? "skip" : "error"},
      {"schedule", schedule_name(o.schedule)},
      {"precision", model::precision_name(prepared.model->precision())},
  };
  if (prepared.int8_plan) flags["int8_plan"] = prepared.int8_plan->to_json()["kept"];
  // Recorded only when in use, so that runs recorded before these existed still resume.
  if (!plan.prompt.value.empty()) {
    flags["prompt"] = plan.prompt.value;
    flags["prompt_tokens_not_pooled"] = plan.task.pool_skip;
  }
  if (plan.tokenizer_compat.value != tokenizer::Compat::kFile)
    flags["tokenizer_compat"] = tokenizer::kCompatNames.name(plan.tokenizer_compat.value);
  if (!plan.task.outputs.empty()) {
    Json outputs = Json::array();
    for (model::OutputKind kind : plan.task.outputs)
      outputs.push_back(model::output_kind_name(kind));
    flags["outputs"] = outputs;
  }
  if (plan.task.kind == model::TaskKind::kSparse) {
    // The rows kept, and the shards' rows: sparse JSONL (a directory of the first sparse
    // runs, whose shards held dense rows, is refused rather than appended to).
    flags["sparse_top_k"] = plan.task.sparse.top_k;
    flags["shard_rows"] = "sparse";
  }
  if (o.chunk.mode == LongInput::kChunk) {
    // Which windows exist and how they make a row; a truncating record stays as it was.
    flags["long_input"] = kLongInputNames.name(o.chunk.mode);
    flags["stride"] = o.stride;
    flags["chunk_reduce"] = kChunkReduceNames.name(o.chunk.reduce);
    flags["chunk_values"] = kChunkValuesNames.name(o.chunk.values);
  }
  if (plan.embedding) {
    flags["pooling"] = plan.embedding->pooling.value.name();
    flags["normalize"] = plan.embedding->normalize.value;
    flags["dense"] = plan.embedding->to_json()["dense"];
  } else {
    flags["activation"] = model::output_activation_name(
        model::resolve_activation(dir.config(), plan.task.activation));
  }
  if (o.schedule == Schedule::kStatic) {
    // The sampler's index lists and batches depend on both (and on the world).
    flags["replicas"] = plan.replicas;
    flags["batch_size"] = o.batch_size;
  }
  // Which rows each rank computes depends on it; a single-process record stays as it was.
  if (rank.distributed()) flags["world"] = rank.world;
  return {{"model", model_fingerprint(o.model_dir, dir.module_dirs())},
          {"input", input_fingerprint(o.input)},
          {"flags", flags}};
}

// Where the replicas take their batches from: the schedule over the feeder's rows, the rows a
// resumed run has done (`done`, by stream position; the feeder keeps a pointer to it) left out.
struct Source {
  std::unique_ptr<WorkSource> work;
  const StaticSource* static_schedule = nullptr;  // null for the dynamic schedule
};

Source make_source(const RunOptions& o, const RunPlan& plan, const RankInfo& rank,
                   RowFeeder& feeder, std::vector<bool>& done, RunCounters& counters) {
  Source source;
  if (o.schedule == Schedule::kStatic) {
    feeder.set_share(RowShare::static_sampler(rank.rank, rank.world, plan.replicas));
    const StaticLayout layout{.global_replicas = rank.world * plan.replicas,
                              .first_replica = rank.rank * plan.replicas,
                              .local_replicas = plan.replicas};
    auto s = std::make_unique<StaticSource>(feeder, layout, o.batch_size, std::move(done));
    source.static_schedule = s.get();
    source.work = std::move(s);
  } else {
    feeder.set_share(RowShare::dynamic_blocks(rank.rank, rank.world, feeder.file_size()));
    feeder.skip_done(&done);
    DynamicOptions options{read_ahead_rows(o, plan), o.batch_tokens};
    if (plan.batch_shape.kind == backend::BatchShape::Kind::kBuckets) {
      options.padded_length = plan.batch_shape.padded_length;
      options.row_multiple = plan.batch_shape.row_multiple;
    }
    source.work = std::make_unique<DynamicSource>(feeder, options, plan.replicas);
  }
  return source;
}

// What the progress line needs to know of the input, from the feeder (safe from any thread).
void publish_input_progress(const RowFeeder& feeder, const Source& source, RunCounters& counters) {
  counters.input_bytes = feeder.bytes_read();
  const std::uint64_t read = feeder.tokens_read();
  const std::uint64_t skipped =
      source.static_schedule ? source.static_schedule->skipped_tokens() : 0;
  counters.tokens_read = read - std::min(read, skipped);
  counters.rows_read = feeder.rows_read();
  counters.truncated_rows = feeder.truncated_rows();
  if (source.static_schedule) {
    counters.rows_total = source.static_schedule->padded_total();
  } else if (auto rows = feeder.rows_in_input()) {
    counters.rows_total = *rows;
  }
}

// Every batch of `source` through the pool, each appended to its replica's shard. Returns false
// when options.stop ended it before the end of the input.
bool compute_shards(const RunOptions& o, const RunPlan& plan,
                    std::shared_ptr<const backend::PreparedModel> model, const ShardsDir& shards,
                    const RowFeeder& feeder, Source& source, RunTally& tally) {
  RunCounters& counters = tally.counters;
  std::atomic<bool> signalled{false};
  std::unique_ptr<ProgressPrinter> progress;
  if (!o.quiet)
    progress = std::make_unique<ProgressPrinter>(counters, ::isatty(STDERR_FILENO) == 1);
  ReplicaPool pool(std::move(model), {.replicas = plan.replicas,
                                      .threads_per_replica = o.threads_per_replica,
                                      .pin = o.pin_threads,
                                      .first_cpu = plan.first_cpu});
  // Chunked runs: window outputs wait here for the rest of their row, whichever replica has it.
  std::optional<WindowMerger> merger;
  if (o.chunk.mode == LongInput::kChunk)
    merger.emplace(o.chunk.reduce, plan.dim, plan.window.finish);
  auto replica_loop = [&](int r, backend::Replica& replica) {
    const auto i = static_cast<std::size_t>(r);
    if (o.profile) replica.attach_profile(&tally.profiles[i]);
    ShardWriter shard(shards.shard_path(r, plan.shard_format), plan.shard_format, plan.schema);
    std::vector<model::SequenceInput> inputs;
    std::vector<float> values;
    Batch rows;  // chunked runs: the rows a batch completes
    std::vector<float> row_values;
    ReplicaCounters& mine = counters.replica[i];
    while (!pool.stopping()) {
      if (o.stop && o.stop->load()) {
        signalled = true;
        source.work->stop();
        break;
      }
      std::optional<Batch> batch = source.work->next(r);
      publish_input_progress(feeder, source, counters);
      if (!batch) break;
      const auto t0 = Clock::now();
      inputs.clear();
      for (const WorkItem& item : batch->items)
        inputs.push_back({item.ids, item.type_ids, item.mask});
      replica.predict(inputs, plan.window.task, values);
      const std::int64_t computed = replica.last_computed_tokens();
      counters.computed_tokens +=
          static_cast<std::uint64_t>(computed >= 0 ? computed : batch->real_tokens);
      const auto written = Clock::now();
      if (merger) merger->add(*batch, values, rows, row_values);
      const Batch& done = merger ? rows : *batch;
      if (!done.items.empty()) shard.write_batch(done, merger ? row_values : values, plan.dim);
      tally.write_seconds[i] += std::chrono::duration<double>(Clock::now() - written).count();
      mine.busy_ns += static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
      mine.rows += batch->items.size();
      ++mine.batches;
      counters.rows_done += done.items.size();
      counters.real_tokens += static_cast<std::uint64_t>(batch->real_tokens);
      counters.padded_tokens += static_cast<std::uint64_t>(batch->padded_tokens);
    }
    shard.close();
  };
  pool.run(replica_loop, [&] { source.work->stop(); });
  if (merger && !signalled && merger->pending_rows() > 0)
    fail("internal: {} chunked rows lack some of their windows", merger->pending_rows());
  return !signalled;
}

// Why an input without bad rows had no rows, by format.
std::string_view no_rows_reason(data::InputFormat format) {
  switch (format) {
    case data::InputFormat::kCsv:
      return "only a header";
    case data::InputFormat::kJsonl:
      return "no objects";
    case data::InputFormat::kParquet:
      return "no rows in its row groups";
  }
  return "no rows";
}

// The input had rows to run; else an error naming it (nothing is written).
void check_some_rows(const RunOptions& o, const RunPlan& plan, const FeedStats& feed) {
  if (feed.rows > 0) return;
  fail("{}: no rows to run ({}); nothing written at {}", o.input.string(),
       feed.bad_rows ? fmt::format("all {} rows were bad and skipped", feed.bad_rows)
                     : std::string(no_rows_reason(plan.in_format)),
       o.output.string());
}

// `shards` merged into the output: every input id, in input order, atomically.
void merge_shards(const RunOptions& o, const RunPlan& plan,
                  const std::vector<std::filesystem::path>& shards, RowFeeder& feeder,
                  RunTally& tally) {
  merge::Options mo;
  mo.reduce = merge::Reduce::kMean;
  mo.order = merge::Order::kInput;
  mo.output_format = plan.out_format;
  mo.expected_ids = std::move(feeder.ids());
  try {
    tally.merged = merge::merge_files(shards, o.output, mo);
    tally.wrote_output = true;
  } catch (const merge::MissingIdsError& e) {
    fail("internal: the shards lack {} of the input's ids ({}); nothing written at {}",
         e.report().missing, e.what(), o.output.string());
  }
}

// A distributed rank's end: its record marked complete; then, under MPI, every rank's word that
// it succeeded, and rank 0 merges every rank's shards. Without MPI the ranks end here and the
// merge is `mcinfer merge --shards-dir`.
void finish_rank(const RunOptions& o, const RunPlan& plan, const RankInfo& rank,
                 RankBarrier& barrier, ShardsDir& shards, RowFeeder& feeder, RunTally& tally) {
  shards.mark_complete({{"rows", tally.counters.rows_done.load()},
                        {"real_tokens", tally.counters.real_tokens.load()},
                        {"padded_tokens", tally.counters.padded_tokens.load()}});
  if (!barrier.joined()) return;
  tally.rank0_merges = true;
  const std::vector<int> failed = barrier.failed_ranks(true);
  if (rank.rank != 0) return;
  if (!failed.empty()) {
    fail(
        "rank(s) {} of {} failed (see their messages); this rank's shards are complete in {} "
        "and nothing was written at {}. Rerun the whole job with --resume: finished ranks skip "
        "their rows",
        fmt::format("{}", fmt::join(failed, ", ")), rank.world, shards.path().string(),
        o.output.string());
  }
  const DistributedRun run = read_distributed_run(shards.path());
  if (static_cast<int>(run.complete.size()) != rank.world)
    fail("internal: every rank succeeded but {} records are complete", run.complete.size());
  merge_shards(o, plan, merge::shard_files(shards.path()), feeder, tally);
}

// The rows of the input through the pool into the shards, then the shards into the output.
// Throws StoppedError when options.stop was set.
void compute_and_finish(const RunOptions& o, const RunPlan& plan, const RankInfo& rank,
                        RankBarrier& barrier, std::shared_ptr<const backend::PreparedModel> model,
                        ShardsDir& shards, RunTally& tally) {
  RunCounters& counters = tally.counters;
  RowFeeder feeder(plan.feed, plan.tokenizer.get());
  counters.input_size = feeder.file_size();
  counters.max_len = plan.max_len;
  counters.rows_done = shards.done_rows();
  std::vector<bool> done = shards.done();
  Source source = make_source(o, plan, rank, feeder, done, counters);
  tally.ready = Clock::now();
  if (!compute_shards(o, plan, std::move(model), shards, feeder, source, tally)) {
    throw StoppedError(
        fmt::format("stopped before the end of the input: {} rows are durable in {} and nothing "
                    "was written at {}. To finish, {}",
                    counters.rows_done.load(), shards.path().string(), o.output.string(),
                    shards.resume_hint()));
  }
  tally.computed = Clock::now();
  tally.feed = feeder.stats();
  tally.bad_rows = feeder.bad_rows();
  check_some_rows(o, plan, tally.feed);
  if (rank.distributed()) {
    finish_rank(o, plan, rank, barrier, shards, feeder, tally);
  } else {
    merge_shards(o, plan, shards.shards(), feeder, tally);
  }
}

// Where rank K of a distributed run writes its report: REPORT for rank 0 (the one that merges
// under MPI), REPORT's name with ".rank<K>" before its extension for the others, so that ranks
// sharing a filesystem do not overwrite each other's.
std::filesystem::path report_path_for(const std::filesystem::path& path, const RankInfo& rank) {
  if (!rank.distributed() || rank.rank == 0) return path;
  return path.parent_path() /
         fmt::format("{}.rank{}{}", path.stem().string(), rank.rank, path.extension().string());
}

Json run_rank(const RunOptions& o, const RankInfo& rank, RankBarrier& barrier,
              Clock::time_point started) {
  const auto backend = backend::make_backend(backend_options(o));
  const model::ModelDir dir = model::ModelDir::open(o.model_dir);
  const RunPlan plan = plan_run(o, dir, *backend, rank);
  std::vector<std::string> warnings;
  const model::PrecisionChoice precision =
      check_gate(o, o.precision, plan.task, *backend, dir.config().num_layers, warnings);
  if (!o.quiet) {
    fmt::print(stderr, "mcinfer: {}\n", describe_text_plan(plan));
    fmt::print(stderr, "mcinfer: {}\n", precision.reason);
  }

  const PreparedRun prepared = prepare_model(o, plan, dir, *backend, precision.precision, warnings);
  const MemoryPlan memory = check_memory(o, plan, *backend, *prepared.model);

  ShardsDir shards(o, run_fingerprint(o, plan, dir, prepared, rank),
                   data::prediction_header(plan.schema, plan.shard_format), plan.replicas, rank,
                   warnings);
  RunTally tally(plan.replicas, started);
  try {
    compute_and_finish(o, plan, rank, barrier, prepared.model, shards, tally);
  } catch (const StoppedError&) {
    shards.keep();
    throw;
  } catch (const std::exception& e) {
    if (!shards.resumable()) throw;
    shards.keep();
    throw Error(fmt::format(
        "{}\nmcinfer: nothing was written at {}; the batches finished so far are kept in {}. "
        "After fixing the cause, {}",
        e.what(), o.output.string(), shards.path().string(), shards.resume_hint()));
  }
  tally.finished = Clock::now();

  const ReportInputs in{o,
                        plan,
                        dir,
                        *backend,
                        precision,
                        prepared.check,
                        prepared.int8_plan ? &*prepared.int8_plan : nullptr,
                        memory,
                        shards,
                        rank,
                        warnings,
                        *prepared.model};
  const Json report = make_report(in, tally);
  if (o.report_path) {
    AtomicFile file(report_path_for(*o.report_path, rank));
    file.writer().write(report.dump(2) + "\n");
    file.commit();
  }
  if (!o.quiet) print_summary(in, tally);
  return report;
}

}  // namespace

Json run_job(const RunOptions& o) {
  const auto started = Clock::now();
  const RankInfo rank = detect_rank(process_environment(), o.rank, o.world);
  if (rank.distributed() && !o.quiet) fmt::print(stderr, "mcinfer: {}\n", rank.describe());
  RankBarrier barrier(rank);
  try {
    return run_rank(o, rank, barrier, started);
  } catch (...) {
    // Every rank reaches the collective once, so that no rank waits forever for a failed one.
    barrier.fail();
    throw;
  }
}

}  // namespace mcinfer::sched
