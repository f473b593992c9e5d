#include "sched/run.h"

#include <unistd.h>

#include <chrono>

#include "backend/registry.h"
#include "core/error.h"
#include "core/file_writer.h"
#include "core/system.h"
#include "merge/merge.h"
#include "sched/fingerprint.h"
#include "sched/int8_plan.h"
#include "sched/precision_check.h"
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

// Rows a reduced-precision run compares against fp32 unless --check-precision says otherwise:
// enough to catch a broken path or a model that bf16 hurts, at about 1% of a 20,000-row run.
constexpr std::size_t kDefaultCheckRows = 32;

struct PreparedRun {
  std::shared_ptr<const backend::PreparedModel> model;
  std::optional<PrecisionCheck> check;
  std::optional<Int8Plan> int8_plan;
};

// The model in the run's precision, with the evidence for a reduced precision gathered before
// anything is written: the fp32 side first, its own weights freed before the run's are loaded
// (int8: its GEMMs chosen on the same rows).
PreparedRun prepare_model(const RunOptions& o, const RunPlan& plan, const model::ModelDir& dir,
                          const backend::Backend& backend, model::Precision precision,
                          std::vector<std::string>& warnings) {
  const int check_threads = plan.replicas * o.threads_per_replica;
  const std::size_t check_rows = o.check_precision_rows.value_or(kDefaultCheckRows);
  const PrecisionBounds bounds{o.min_cosine, o.min_agreement, std::nullopt};
  if (o.int8_keep && precision != model::Precision::kInt8)
    fail_usage("--int8-keep applies to --precision int8 only");
  PreparedRun run;
  if (precision == model::Precision::kInt8) {
    Int8Request request;
    if (o.int8_keep) request.keep = model::parse_gemm_list(*o.int8_keep, dir.config().num_layers);
    request.check_rows = check_rows;
    request.bounds = bounds;
    run.int8_plan = plan_int8(dir, backend, plan.task, plan.feed, plan.tokenizer.get(),
                              check_threads, request, &warnings);
    run.model = run.int8_plan->weights;
    run.check = run.int8_plan->check;
  } else {
    const std::optional<PrecisionReference> reference =
        precision == model::Precision::kFp32
            ? std::nullopt
            : reference_before_run(dir, backend, plan.task, plan.feed, plan.tokenizer.get(),
                                   check_rows, check_threads);
    backend::PrepareOptions options;
    options.precision = precision;
    run.model = backend.prepare(dir, options, &warnings);
    if (reference)
      run.check = check_against(*reference, run.model, plan.task, check_threads, bounds);
  }
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
                     const PreparedRun& prepared) {
  Json flags = {
      {"backend", o.backend},
      {"task", model::task_name(plan.task.kind)},
      {"max_len", plan.max_len},
      {"strip_text", dir.strips_text()},
      {"id_col", o.columns.id_col},
      {"text_col", o.columns.text_col},
      {"text_pair_col", o.columns.text_pair_col.value_or("")},
      {"input_format", data::format_name(plan.in_format)},
      {"output_format", data::format_name(plan.out_format)},
      {"on_bad_row", o.skip_bad_rows ? "skip" : "error"},
      {"schedule", schedule_name(o.schedule)},
      {"precision", model::precision_name(prepared.model->precision())},
  };
  if (prepared.int8_plan) flags["int8_plan"] = prepared.int8_plan->to_json()["kept"];
  if (plan.embedding) {
    flags["pooling"] = plan.embedding->pooling.value.name();
    flags["normalize"] = plan.embedding->normalize.value;
    flags["dense"] = plan.embedding->to_json()["dense"];
  } else {
    flags["activation"] = model::output_activation_name(
        model::resolve_activation(dir.config(), plan.task.activation));
  }
  if (o.schedule == Schedule::kStatic) {
    // The sampler's index lists and batches depend on both.
    flags["replicas"] = plan.replicas;
    flags["batch_size"] = o.batch_size;
  }
  return {{"model", model_fingerprint(o.model_dir, dir.module_dirs())},
          {"input", input_fingerprint(o.input)},
          {"flags", flags}};
}

// The rows of the input through the pool, batch after batch, each appended to its replica's
// shard; then the shards merged into the output. Throws StoppedError when options.stop was set.
void compute_and_merge(const RunOptions& o, const RunPlan& plan,
                       std::shared_ptr<const backend::PreparedModel> model, ShardsDir& shards,
                       RunTally& tally) {
  const std::string shard_header = data::prediction_header(plan.schema, plan.out_format);
  RunCounters& counters = tally.counters;
  std::unique_ptr<WorkSource> source;
  const StaticSource* static_source = nullptr;
  RowFeeder feeder(plan.feed, plan.tokenizer.get());
  counters.input_size = feeder.file_size();
  counters.rows_done = shards.done_rows();
  std::vector<bool> done = shards.done();
  if (o.schedule == Schedule::kStatic) {
    // The sampler needs the row count up front: one validating pass without tokenising.
    FeedOptions count = plan.feed;
    count.tokenize = false;
    RowFeeder counter(count, nullptr);
    WorkItem item;
    std::uint64_t rows = 0;
    while (counter.next(item)) ++rows;
    auto s = std::make_unique<StaticSource>(feeder, rows, plan.replicas, o.batch_size, done);
    counters.rows_total = s->padded_total();
    static_source = s.get();
    source = std::move(s);
  } else {
    feeder.skip_done(&done);
    source = std::make_unique<DynamicSource>(feeder, DynamicOptions{o.window_rows, o.batch_tokens},
                                             plan.replicas);
  }
  // What the progress line needs to know of the input, from the feeder (safe from any thread).
  auto publish_input_progress = [&] {
    counters.input_bytes = feeder.bytes_read();
    const std::uint64_t read = feeder.tokens_read();
    const std::uint64_t skipped = static_source ? static_source->skipped_tokens() : 0;
    counters.tokens_read = read - std::min(read, skipped);
    if (!static_source) {
      counters.rows_read = feeder.rows_read();
      if (auto rows = feeder.rows_in_input()) counters.rows_total = *rows;
    }
  };
  std::atomic<bool> signalled{false};
  {
    std::unique_ptr<ProgressPrinter> progress;
    if (!o.quiet)
      progress = std::make_unique<ProgressPrinter>(counters, ::isatty(STDERR_FILENO) == 1);
    ReplicaPool pool(std::move(model), {plan.replicas, o.threads_per_replica, o.pin_threads});
    auto replica_loop = [&](int r, backend::Replica& replica) {
      const auto i = static_cast<std::size_t>(r);
      if (o.profile) replica.attach_profile(&tally.profiles[i]);
      ShardWriter shard(shards.path(), r, plan.out_format, plan.schema);
      std::vector<model::SequenceInput> inputs;
      std::vector<float> values;
      ReplicaCounters& mine = counters.replica[i];
      while (!pool.stopping()) {
        if (o.stop && o.stop->load()) {
          signalled = true;
          source->stop();
          break;
        }
        std::optional<Batch> batch = source->next(r);
        publish_input_progress();
        if (!batch) break;
        const auto t0 = Clock::now();
        inputs.clear();
        for (const WorkItem& item : batch->items)
          inputs.push_back({item.ids, item.type_ids, item.mask});
        replica.predict(inputs, plan.task, values);
        const auto written = Clock::now();
        shard.write_batch(*batch, values, plan.dim);
        tally.write_seconds[i] += std::chrono::duration<double>(Clock::now() - written).count();
        mine.busy_ns += static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
        mine.rows += batch->items.size();
        ++mine.batches;
        counters.rows_done += batch->items.size();
        counters.real_tokens += static_cast<std::uint64_t>(batch->real_tokens);
        counters.padded_tokens += static_cast<std::uint64_t>(batch->padded_tokens);
      }
      shard.close();
    };
    pool.run(replica_loop, [&] { source->stop(); });
  }
  if (signalled) {
    throw StoppedError(
        fmt::format("stopped before the end of the input: {} rows are durable in {} and nothing "
                    "was written at {}. To finish, {}",
                    counters.rows_done.load(), shards.path().string(), o.output.string(),
                    shards.resume_hint()));
  }
  tally.computed = Clock::now();
  tally.feed = feeder.stats();
  tally.bad_rows = feeder.bad_rows();
  if (tally.feed.rows == 0) {
    fail("{}: no rows to run ({}); nothing written at {}", o.input.string(),
         tally.feed.bad_rows
             ? fmt::format("all {} rows were bad and skipped", tally.feed.bad_rows)
             : std::string(plan.in_format == data::Format::kCsv ? "only a header" : "no objects"),
         o.output.string());
  }
  merge::Options mo;
  mo.reduce = merge::Reduce::kMean;
  mo.order = merge::Order::kInput;
  mo.output_format = plan.out_format;
  mo.expected_ids = std::move(feeder.ids());
  try {
    tally.merged = merge::merge_files(shards.shards(), o.output, mo);
  } catch (const merge::MissingIdsError& e) {
    fail("internal: the shards lack {} of the input's ids ({}); nothing written at {}",
         e.report().missing, e.what(), o.output.string());
  }
}

}  // namespace

Json run_job(const RunOptions& o) {
  const auto started = Clock::now();
  const auto backend = backend::make_backend({o.backend});
  const model::ModelDir dir = model::ModelDir::open(o.model_dir);
  const RunPlan plan = plan_run(o, dir, *backend);
  const model::PrecisionChoice precision = backend->resolve_precision(o.precision);
  if (!o.quiet) fmt::print(stderr, "mcinfer: {}\n", precision.reason);

  std::vector<std::string> warnings;
  const PreparedRun prepared = prepare_model(o, plan, dir, *backend, precision.precision, warnings);
  const MemoryPlan memory = check_memory(o, plan, *backend, *prepared.model);

  ShardsDir shards(o, run_fingerprint(o, plan, dir, prepared),
                   data::prediction_header(plan.schema, plan.out_format), plan.replicas, warnings);
  RunTally tally(plan.replicas, started);
  try {
    compute_and_merge(o, plan, prepared.model, shards, tally);
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
                        warnings};
  const Json report = make_report(in, tally);
  if (o.report_path) {
    AtomicFile file(*o.report_path);
    file.writer().write(report.dump(2) + "\n");
    file.commit();
  }
  if (!o.quiet) print_summary(o, tally);
  return report;
}

}  // namespace mcinfer::sched
