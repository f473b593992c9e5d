#include "sched/run.h"

#include <unistd.h>

#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/file_writer.h"
#include "core/system.h"
#include "merge/merge.h"
#include "model/model_dir.h"
#include "sched/fingerprint.h"
#include "sched/int8_plan.h"
#include "sched/manifest.h"
#include "sched/precision_check.h"
#include "sched/progress.h"
#include "sched/row_feeder.h"
#include "sched/shard_writer.h"
#include "sched/sources.h"

namespace mcinfer::sched {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Rows a reduced-precision run compares against fp32 unless --check-precision says otherwise:
// enough to catch a broken path or a model that bf16 hurts, at about 1% of a 20,000-row run.
constexpr std::size_t kDefaultCheckRows = 32;

}  // namespace

namespace {

data::Format output_format(const fs::path& output) {
  const std::string ext = output.extension().string();
  return (ext == ".jsonl" || ext == ".ndjson" || ext == ".json") ? data::Format::kJsonl
                                                                 : data::Format::kCsv;
}

std::string human_bytes(std::uint64_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

// Column names for the output: labels (made unique) or e0..e{d-1}.
data::PredictionSchema make_schema(const model::ModelConfig& config, model::TaskKind kind,
                                   std::int64_t embedding_dim) {
  data::PredictionSchema schema;
  if (kind == model::TaskKind::kEmbed) {
    schema.embedding = true;
    for (std::int64_t i = 0; i < embedding_dim; ++i)
      schema.columns.push_back(fmt::format("e{}", i));
    return schema;
  }
  std::set<std::string> seen = {"id"};
  for (std::size_t i = 0; i < config.labels.size(); ++i) {
    std::string name = config.labels[i];
    if (!seen.insert(name).second) {
      name = fmt::format("{}_{}", name, i);
      seen.insert(name);
    }
    schema.columns.push_back(name);
  }
  return schema;
}

std::string_view activation_name(model::OutputActivation activation) {
  switch (activation) {
    case model::OutputActivation::kAuto:
      return "auto";
    case model::OutputActivation::kSoftmax:
      return "softmax";
    case model::OutputActivation::kSigmoid:
      return "sigmoid";
    case model::OutputActivation::kNone:
      return "none";
  }
  return "?";
}

// shard_<N>.csv / shard_<N>.jsonl files in a directory, by N.
std::vector<fs::path> existing_shards(const fs::path& dir) {
  std::vector<std::pair<long, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string ext = entry.path().extension().string();
    if (name.rfind("shard_", 0) != 0 || (ext != ".csv" && ext != ".jsonl")) continue;
    const std::string number = name.substr(6, name.size() - 6 - ext.size());
    if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos ||
        number.size() > 9)
      continue;
    found.emplace_back(std::stol(number), entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

}  // namespace

Json run_job(const RunOptions& o) {
  const auto started = Clock::now();
  const data::Format in_format = data::resolve_format(o.input, o.format);
  const data::Format out_format = output_format(o.output);
  const int replicas = o.replicas > 0 ? o.replicas : sys::physical_cores();
  if (o.threads_per_replica < 1) fail_usage("--threads-per-replica must be at least 1");
  if (o.schedule == Schedule::kStatic && o.batch_size < 1)
    fail_usage("--batch-size must be at least 1");
  if (o.schedule == Schedule::kDynamic && o.batch_tokens < 1)
    fail_usage("--batch-tokens must be at least 1");
  {
    std::error_code ec;
    const fs::path parent = o.output.parent_path().empty() ? fs::path(".") : o.output.parent_path();
    if (!fs::is_directory(parent, ec))
      fail("{}: the output's directory does not exist", o.output.string());
    if (fs::exists(o.output, ec) && fs::equivalent(o.output, o.input, ec)) {
      fail_usage("--output {} is the input file", o.output.string());
    }
  }

  std::vector<std::string> warnings;
  auto device = ops::Device::cpu();
  const ops::PrecisionChoice precision = ops::resolve_precision(o.precision);
  if (!o.quiet) fmt::print(stderr, "mcinfer: {}\n", precision.reason);
  const model::ModelDir dir = model::ModelDir::open(o.model_dir);
  const model::ModelConfig& config = dir.config();
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  if (dir.has_tokenizer()) tokenizer = tokenizer::Tokenizer::load(o.model_dir);

  model::TaskSpec task;
  task.kind = o.task.value_or(dir.default_task().value);
  if (task.kind == model::TaskKind::kClassify &&
      config.head != model::Head::kSequenceClassification) {
    fail_usage("{}: {} has no classification head; use --task embed", o.model_dir.string(),
               config.architecture.empty() ? config.family_name() : config.architecture);
  }
  task.activation = o.activation;
  std::optional<model::EmbeddingPlan> plan;
  if (task.kind == model::TaskKind::kEmbed) {
    plan = dir.embedding_plan(o.pooling, o.normalize);
    task.pooling = plan->pooling.value;
    task.normalize = plan->normalize.value;
    task.dense = dir.load_dense(*plan);
  }

  const std::size_t max_len =
      dir.max_len(tokenizer ? tokenizer->model_max_length() : std::nullopt, o.max_len).value;

  FeedOptions feed;
  feed.input = o.input;
  feed.format = in_format;
  feed.columns = o.columns;
  feed.skip_bad_rows = o.skip_bad_rows;
  feed.max_len = max_len;
  feed.vocab_size = config.vocab_size;
  feed.type_vocab_size = config.type_vocab_size;
  feed.strip_text = dir.strips_text();

  // Evidence for a reduced-precision run, before anything is written: the fp32 side first, with
  // its own weights freed before the run's are loaded (int8: its GEMMs chosen on the same rows).
  const int check_threads = replicas * o.threads_per_replica;
  const std::size_t check_rows = o.check_precision_rows.value_or(kDefaultCheckRows);
  const PrecisionBounds bounds{o.min_cosine, o.min_agreement, std::nullopt};
  if (o.int8_keep && precision.precision != ops::Precision::kInt8)
    fail_usage("--int8-keep applies to --precision int8 only");
  std::shared_ptr<const model::Weights> weights;
  std::optional<PrecisionCheck> precision_check;
  std::optional<Int8Plan> int8_plan;
  if (precision.precision == ops::Precision::kInt8) {
    Int8Request request;
    if (o.int8_keep) request.keep = model::parse_gemm_list(*o.int8_keep, config.num_layers);
    request.check_rows = check_rows;
    request.bounds = bounds;
    int8_plan =
        plan_int8(dir, *device, task, feed, tokenizer.get(), check_threads, request, &warnings);
    weights = int8_plan->weights;
    precision_check = int8_plan->check;
  } else {
    const std::optional<PrecisionReference> reference =
        precision.precision == ops::Precision::kFp32
            ? std::nullopt
            : reference_before_run(dir, *device, task, feed, tokenizer.get(), check_rows,
                                   check_threads);
    weights = model::Weights::load(dir, *device, &warnings, precision.precision);
    if (reference)
      precision_check = check_against(*reference, weights, *device, task, check_threads, bounds);
  }
  if (!o.quiet && precision_check) fmt::print(stderr, "mcinfer: {}\n", precision_check->summary());
  if (!o.quiet && int8_plan) {
    fmt::print(stderr, "mcinfer: {} ({})\n", int8_plan->summary,
               int8_plan->automatic
                   ? (int8_plan->check
                          ? "checked on the check rows"
                          : "--check-precision 0: not checked, and no input smoothing calibrated")
                   : "--int8-keep");
  }

  // Memory plan: one copy of the weights + every replica's activations for the largest batch.
  const std::int64_t batch_rows_tokens =
      o.schedule == Schedule::kStatic
          ? static_cast<std::int64_t>(o.batch_size) * static_cast<std::int64_t>(max_len)
          : std::max<std::int64_t>(o.batch_tokens, static_cast<std::int64_t>(max_len));
  const std::uint64_t per_replica = model::Encoder::activation_bytes(
      config, batch_rows_tokens, static_cast<std::int64_t>(max_len), o.threads_per_replica,
      precision.precision);
  const std::uint64_t weight_bytes = weights->stats().resident_bytes();
  const std::uint64_t input_bytes = static_cast<std::uint64_t>(o.window_rows) * max_len * 12;
  const std::uint64_t planned = static_cast<std::uint64_t>(replicas) * per_replica + input_bytes;
  const std::uint64_t available = sys::available_memory_bytes();
  if (available > 0 && planned > available) {
    fail(
        "memory plan does not fit: {} replicas x {} of activations (batches of up to {} tokens) + "
        "{} of "
        "input read-ahead = {}, but only {} is available (the {} of weights are already loaded). "
        "Lower "
        "--replicas or {}",
        replicas, human_bytes(per_replica), batch_rows_tokens, human_bytes(input_bytes),
        human_bytes(planned), human_bytes(available), human_bytes(weight_bytes),
        o.schedule == Schedule::kStatic ? "--batch-size or --max-len" : "--batch-tokens");
  }

  const data::PredictionSchema schema = make_schema(config, task.kind, plan ? plan->output_dim : 0);
  const std::int64_t dim = static_cast<std::int64_t>(schema.columns.size());
  const std::string shard_header = data::prediction_header(schema, out_format);

  // Shards go to --shards-dir, or a private directory beside the output (same filesystem).
  if (o.resume && !o.shards_dir) {
    fail_usage(
        "--resume needs --shards-dir: the directory that holds the interrupted run's shards");
  }
  const bool temporary_shards = !o.shards_dir.has_value();
  fs::path shards_dir =
      o.shards_dir.value_or(o.output.string() + fmt::format(".shards-{}", ::getpid()));
  std::error_code ec;
  fs::create_directories(shards_dir, ec);
  if (ec) fail("{}: cannot create the shards directory: {}", shards_dir.string(), ec.message());

  // What the results depend on; --resume refuses to mix runs that differ in any of it.
  Json flags = {
      {"task", model::task_name(task.kind)},
      {"max_len", max_len},
      {"strip_text", dir.strips_text()},
      {"id_col", o.columns.id_col},
      {"text_col", o.columns.text_col},
      {"text_pair_col", o.columns.text_pair_col.value_or("")},
      {"input_format", in_format == data::Format::kJsonl ? "jsonl" : "csv"},
      {"output_format", out_format == data::Format::kJsonl ? "jsonl" : "csv"},
      {"on_bad_row", o.skip_bad_rows ? "skip" : "error"},
      {"schedule", o.schedule == Schedule::kStatic ? "static" : "dynamic"},
      {"precision", ops::precision_name(precision.precision)},
  };
  if (int8_plan) flags["int8_plan"] = int8_plan->to_json()["kept"];
  if (plan) {
    flags["pooling"] = plan->pooling.value.name();
    flags["normalize"] = plan->normalize.value;
    flags["dense"] = plan->to_json()["dense"];
  } else {
    flags["activation"] = activation_name(model::resolve_activation(config, task.activation));
  }
  if (o.schedule == Schedule::kStatic) {
    // The sampler's index lists and batches depend on both.
    flags["replicas"] = replicas;
    flags["batch_size"] = o.batch_size;
  }
  const Json fingerprint = {{"model", model_fingerprint(o.model_dir, dir.module_dirs())},
                            {"input", input_fingerprint(o.input)},
                            {"flags", flags}};
  const fs::path run_record = shards_dir / "run.json";
  std::vector<bool> done;  // positions already durable in the shards
  std::uint64_t done_rows = 0;
  bool resume = o.resume;
  if (resume && !fs::exists(run_record, ec)) {
    // Killed before the run was recorded: nothing was computed, so start from the beginning.
    if (!existing_shards(shards_dir).empty()) {
      fail("{}: shards without a run.json: not the shards directory of an mcinfer run",
           shards_dir.string());
    }
    warnings.push_back("nothing to resume in " + shards_dir.string() +
                       ": started from the beginning");
    resume = false;
  }
  if (resume) {
    Json recorded = read_json_file(run_record);
    auto differences =
        fingerprint_differences(recorded.value("fingerprint", Json::object()), fingerprint);
    if (!differences.empty()) {
      std::string list;
      for (const auto& d : differences) list += "\n  - " + d;
      fail("cannot resume the run in {}: its results would differ from this command's:{}",
           shards_dir.string(), list);
    }
    // Remains of an output whose writing was interrupted.
    const std::string prefix = o.output.filename().string() + ".tmp-";
    const fs::path out_dir =
        o.output.parent_path().empty() ? fs::path(".") : o.output.parent_path();
    for (const auto& entry : fs::directory_iterator(out_dir, ec)) {
      if (entry.path().filename().string().rfind(prefix, 0) == 0) fs::remove(entry.path(), ec);
    }
    for (const auto& shard : existing_shards(shards_dir)) {
      RecoveredShard recovered = recover_shard(shard, shard_header);
      if (recovered.discarded_bytes || recovered.discarded_records) {
        warnings.push_back(fmt::format(
            "{}: discarded a torn tail of {} bytes ({} manifest records)",
            shard.filename().string(), recovered.discarded_bytes, recovered.discarded_records));
      }
      for (const auto& record : recovered.records) {
        for (std::uint64_t p : record.positions) {
          if (p >= done.size()) done.resize(p + 1, false);
          if (!done[p]) ++done_rows;
          done[p] = true;
        }
      }
    }
  } else {
    if (fs::exists(run_record, ec) || !existing_shards(shards_dir).empty()) {
      fail(
          "{} already holds the shards of a run: add --resume to continue it, or use an empty "
          "directory",
          shards_dir.string());
    }
    AtomicFile record(run_record);
    record.writer().write(Json({{"fingerprint", fingerprint}, {"replicas", replicas}}).dump(2) +
                          "\n");
    record.commit();
  }
  struct Cleanup {
    fs::path dir;
    bool remove = false;
    ~Cleanup() {
      std::error_code e;
      if (remove) fs::remove_all(dir, e);
    }
  } cleanup{shards_dir, temporary_shards};
  // Whether anything durable is in the shards, so that --resume is worth suggesting.
  auto resumable = [&] {
    for (const auto& shard : existing_shards(shards_dir)) {
      std::error_code e;
      if (fs::file_size(manifest_path(shard), e) > 0) return true;
    }
    return false;
  };
  auto resume_hint = [&] {
    std::string cmd;
    for (const auto& a : o.command_line) cmd += (cmd.empty() ? "" : " ") + a;
    if (o.shards_dir)
      return fmt::format("rerun the same command with --resume:\n  {}{}", cmd,
                         o.resume ? "" : " --resume");
    return fmt::format(
        "rerun the same command with --shards-dir {} --resume:\n  {} --shards-dir {} --resume",
        shards_dir.string(), cmd, shards_dir.string());
  };

  RunCounters counters(replicas);
  std::vector<ops::OpProfile> profiles(static_cast<std::size_t>(replicas));
  // Per replica: appending its batches to its shard and fsyncing shard and manifest.
  std::vector<double> write_seconds(static_cast<std::size_t>(replicas), 0.0);
  Clock::time_point computed;
  FeedStats feed_stats;
  std::vector<BadRowRecord> bad_rows;
  merge::Report merged;
  try {
    std::unique_ptr<WorkSource> source;
    const StaticSource* static_source = nullptr;
    RowFeeder feeder(feed, tokenizer.get());
    counters.input_size = feeder.file_size();
    counters.rows_done = done_rows;
    std::uint64_t static_rows = 0;
    if (o.schedule == Schedule::kStatic) {
      // The sampler needs the row count up front: one validating pass without tokenising.
      FeedOptions count = feed;
      count.tokenize = false;
      RowFeeder counter(count, nullptr);
      WorkItem item;
      while (counter.next(item)) ++static_rows;
      auto s = std::make_unique<StaticSource>(feeder, static_rows, replicas, o.batch_size, done);
      counters.rows_total = s->padded_total();
      static_source = s.get();
      source = std::move(s);
    } else {
      feeder.skip_done(&done);
      source = std::make_unique<DynamicSource>(
          feeder, DynamicOptions{o.window_rows, o.batch_tokens}, replicas);
    }

    // The first failure in time is the cause; one that follows may be its consequence (a
    // replica stopped by it, or reading on after it), so only the first is reported.
    std::mutex failure_mutex;
    std::exception_ptr first_failure;
    std::atomic<bool> signalled{false};
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
    {
      std::unique_ptr<ProgressPrinter> progress;
      if (!o.quiet)
        progress = std::make_unique<ProgressPrinter>(counters, ::isatty(STDERR_FILENO) == 1);
      const std::vector<int> cpus = sys::cpus_by_core();
      std::vector<std::thread> pool;
      for (int r = 0; r < replicas; ++r) {
        pool.emplace_back([&, r] {
          try {
            if (o.pin_threads && replicas > 1 && o.threads_per_replica == 1) {
              sys::pin_current_thread(cpus[static_cast<std::size_t>(r) % cpus.size()]);
            }
            model::Encoder encoder(weights, *device, o.threads_per_replica);
            if (o.profile) encoder.context().attach_profile(&profiles[static_cast<std::size_t>(r)]);
            ShardWriter shard(shards_dir, r, out_format, schema);
            std::vector<model::SequenceInput> inputs;
            std::vector<float> values;
            ReplicaCounters& mine = counters.replica[static_cast<std::size_t>(r)];
            while (true) {
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
              encoder.predict(inputs, task, values);
              const auto written = Clock::now();
              shard.write_batch(*batch, values, dim);
              write_seconds[static_cast<std::size_t>(r)] +=
                  std::chrono::duration<double>(Clock::now() - written).count();
              mine.busy_ns += static_cast<std::uint64_t>(
                  std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
              mine.rows += batch->items.size();
              ++mine.batches;
              counters.rows_done += batch->items.size();
              counters.real_tokens += static_cast<std::uint64_t>(batch->real_tokens);
              counters.padded_tokens += static_cast<std::uint64_t>(batch->padded_tokens);
            }
            shard.close();
          } catch (...) {
            {
              std::lock_guard lock(failure_mutex);
              if (!first_failure) first_failure = std::current_exception();
            }
            source->stop();
          }
        });
      }
      for (auto& t : pool) t.join();
    }
    if (first_failure) std::rethrow_exception(first_failure);
    if (signalled) {
      throw StoppedError(fmt::format(
          "stopped before the end of the input: {} rows are durable in {} and nothing "
          "was written at {}. To finish, {}",
          counters.rows_done.load(), shards_dir.string(), o.output.string(), resume_hint()));
    }

    computed = Clock::now();
    feed_stats = feeder.stats();
    bad_rows = feeder.bad_rows();
    if (feed_stats.rows == 0) {
      fail("{}: no rows to run ({}); nothing written at {}", o.input.string(),
           feed_stats.bad_rows
               ? fmt::format("all {} rows were bad and skipped", feed_stats.bad_rows)
               : std::string(in_format == data::Format::kCsv ? "only a header" : "no objects"),
           o.output.string());
    }
    merge::Options mo;
    mo.reduce = merge::Reduce::kMean;
    mo.order = merge::Order::kInput;
    mo.output_format = out_format;
    mo.expected_ids = std::move(feeder.ids());
    try {
      merged = merge::merge_files(existing_shards(shards_dir), o.output, mo);
    } catch (const merge::MissingIdsError& e) {
      fail("internal: the shards lack {} of the input's ids ({}); nothing written at {}",
           e.report().missing, e.what(), o.output.string());
    }
  } catch (const StoppedError&) {
    cleanup.remove = false;
    throw;
  } catch (const std::exception& e) {
    if (!resumable()) throw;
    cleanup.remove = false;
    throw Error(fmt::format(
        "{}\nmcinfer: nothing was written at {}; the batches finished so far are kept in {}. "
        "After fixing the cause, {}",
        e.what(), o.output.string(), shards_dir.string(), resume_hint()));
  }
  const auto finished = Clock::now();
  auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };

  Json replicas_json = Json::array();
  for (int r = 0; r < replicas; ++r) {
    const auto& c = counters.replica[static_cast<std::size_t>(r)];
    replicas_json.push_back({{"replica", r},
                             {"rows", c.rows.load()},
                             {"batches", c.batches.load()},
                             {"busy_seconds", static_cast<double>(c.busy_ns.load()) / 1e9},
                             {"shard", shard_path(shards_dir, r, out_format).filename().string()}});
  }
  Json bad = Json::array();
  for (const auto& b : bad_rows) bad.push_back({{"line", b.line}, {"reason", b.reason}});
  const double wall = seconds(started, finished);
  Json report = {
      {"mcinfer_version", MCINFER_VERSION_STRING},
      {"command_line", o.command_line},
      {"model_dir", o.model_dir.string()},
      {"architecture", config.architecture.empty() ? config.family_name() : config.architecture},
      {"input", o.input.string()},
      {"output", o.output.string()},
      {"task", model::task_name(task.kind)},
      {"schedule", o.schedule == Schedule::kStatic ? "static" : "dynamic"},
      {"replicas", replicas},
      {"threads_per_replica", o.threads_per_replica},
      {"max_len", max_len},
      {"device", device->description()},
      {"precision", ops::precision_name(precision.precision)},
      {"precision_reason", precision.reason},
      {"precision_check", precision_check ? precision_check->to_json() : Json(nullptr)},
      {"int8_plan", int8_plan ? int8_plan->to_json() : Json(nullptr)},
      {"rows", feed_stats.rows},
      {"distinct_ids", merged.distinct_ids},
      {"duplicate_ids", feed_stats.rows - merged.distinct_ids},
      {"resumed", o.resume},
      {"rows_from_earlier_run", done_rows},
      {"rows_computed", counters.rows_done.load() - done_rows},
      {"padding_rows", counters.rows_done.load() -
                           std::min<std::uint64_t>(counters.rows_done.load(), feed_stats.rows)},
      {"bad_rows", feed_stats.bad_rows},
      {"bad_row_list", bad},
      {"invalid_utf8_replacements", feed_stats.invalid_utf8},
      {"truncated_rows", feed_stats.truncated},
      {"real_tokens", counters.real_tokens.load()},
      {"padded_tokens", counters.padded_tokens.load()},
      {"padding_fraction",
       counters.padded_tokens.load() > 0
           ? 1.0 - static_cast<double>(counters.real_tokens.load()) / counters.padded_tokens.load()
           : 0.0},
      {"wall_seconds", wall},
      {"compute_seconds", seconds(started, computed)},
      {"merge_seconds", seconds(computed, finished)},
      {"rows_per_second", wall > 0 ? feed_stats.rows / wall : 0.0},
      {"replica_stats", replicas_json},
      {"peak_rss_bytes", sys::peak_rss_bytes()},
      {"weights_resident_bytes", weight_bytes},
      {"planned_activation_bytes_per_replica", per_replica},
      {"warnings", warnings},
  };
  if (plan) report["embedding"] = plan->to_json();
  for (const auto& w : merged.warnings) report["warnings"].push_back(w);
  if (o.profile) {
    // Where the time went, summed over every thread that did the work.
    Json seconds_by = Json::object();
    for (std::size_t k = 0; k < static_cast<std::size_t>(ops::OpKind::kCount); ++k) {
      double total = 0;
      for (const auto& p : profiles) total += p.seconds[k];
      seconds_by[std::string(ops::op_kind_name(static_cast<ops::OpKind>(k)))] = total;
    }
    double writes = 0;
    for (double w : write_seconds) writes += w;
    seconds_by["tokenization"] = feed_stats.tokenize_seconds;
    seconds_by["input_io"] = feed_stats.read_seconds;
    seconds_by["shard_io"] = writes;
    seconds_by["merge_io"] = seconds(computed, finished);
    double all = 0;
    for (const auto& [k, v] : seconds_by.items()) all += v.get<double>();
    Json share = Json::object();
    for (const auto& [k, v] : seconds_by.items()) share[k] = all > 0 ? v.get<double>() / all : 0.0;
    report["time_seconds"] = seconds_by;
    report["time_share"] = share;
  }
  if (o.report_path) {
    AtomicFile file(*o.report_path);
    file.writer().write(report.dump(2) + "\n");
    file.commit();
  }
  if (!o.quiet) {
    fmt::print(stderr,
               "mcinfer: wrote {} rows ({} distinct ids) to {} in {:.1f} s ({:.1f} rows/s)\n",
               merged.rows_written, merged.distinct_ids, o.output.string(), wall,
               wall > 0 ? feed_stats.rows / wall : 0.0);
    if (feed_stats.bad_rows)
      fmt::print(stderr, "mcinfer: skipped {} bad rows (see --report)\n", feed_stats.bad_rows);
  }
  return report;
}

}  // namespace mcinfer::sched
