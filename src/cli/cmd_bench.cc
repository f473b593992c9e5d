// mcinfer bench: forward-pass throughput of a model (or a well-known shape with random weights)
// on fixed-size batches, next to what the GEMM library alone reaches on the same GEMM shapes.

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <random>

#include "backends/registry.h"
#include "commands.h"
#include "core/error.h"
#include "core/json.h"
#include "core/system.h"
#include "mcinfer/run.h"
#include "model/model_dir.h"
#include "sched/int8_plan.h"
#include "sched/replica_pool.h"
#include "sched/run_plan.h"

namespace mcinfer::cli {
namespace {

struct BenchOptions {
  std::string model_dir;
  std::string input;         // end-to-end mode: a whole run over this file, profiled
  std::string calibrate_on;  // int8: the check rows of this file build the model a run would
  std::string shape;
  std::int64_t batch = 32;
  std::int64_t seq = 128;
  int threads = 1;
  int replicas = 1;
  int warmup = 1;
  int iters = 3;
  std::string isa;
  std::string epilogue = "gemm";
  std::string task = "classify";
  std::string precision = "auto";
  std::string backend = "cpu";
  std::string plugin = "cpu";
  int devices = 0;
  bool profile = false;
  bool json = false;
  bool pin = true;
};

// A profiled `run` over a real input: where the time goes end to end, tokenization and I/O
// included.
int run_end_to_end(const BenchOptions& o) {
  if (o.model_dir.empty()) fail_usage("--input needs MODEL_DIR (a model with its tokenizer)");
  const std::filesystem::path out_dir =
      std::filesystem::temp_directory_path() / fmt::format("mcinfer_bench_{}", ::getpid());
  std::filesystem::create_directories(out_dir);
  RunOptions ro;
  ro.model_dir = o.model_dir;
  ro.input = o.input;
  ro.output = out_dir / "out.csv";
  ro.replicas = o.replicas;
  ro.threads_per_replica = o.threads;
  ro.quiet = true;
  ro.profile = true;
  ro.pin_threads = o.pin;
  ro.precision = o.precision;
  ro.backend = o.backend;
  ro.plugin = o.plugin;
  ro.devices = o.devices;
  Json report;
  try {
    report = Json::parse(mcinfer::run(ro));
  } catch (...) {
    std::filesystem::remove_all(out_dir);
    throw;
  }
  std::filesystem::remove_all(out_dir);
  Json summary = {
      {"model", o.model_dir},
      {"input", o.input},
      {"replicas", report["replicas"]},
      {"rows", report["rows"]},
      {"rows_per_s", report["rows_per_second"]},
      {"tokens_per_s", report["real_tokens"].get<double>() / report["wall_seconds"].get<double>()},
      {"wall_seconds", report["wall_seconds"]},
      {"time_share", report["time_share"]}};
  if (o.json) {
    fmt::print("{}\n", summary.dump());
    return kExitOk;
  }
  fmt::print(
      "end to end   {} rows of {} in {:.2f} s: {:.1f} rows/s, {:.0f} tokens/s, {} replica(s)\n",
      summary["rows"].get<std::uint64_t>(), o.input, summary["wall_seconds"].get<double>(),
      summary["rows_per_s"].get<double>(), summary["tokens_per_s"].get<double>(),
      report["replicas"].get<int>());
  fmt::print("time per stage and op (all threads):\n");
  for (const auto& [name, share] : report["time_share"].items()) {
    if (share.get<double>() > 0)
      fmt::print("  {:<13} {:5.1f}%\n", name, 100.0 * share.get<double>());
  }
  return kExitOk;
}

// Random ids (never the pad id, so RoBERTa positions run 2..seq+1 as for real text), `batch`
// sequences of `seq` tokens; `ids` holds them.
std::vector<model::SequenceInput> random_batch(const model::ModelConfig& c, std::int64_t batch,
                                               std::int64_t seq, std::vector<std::int32_t>& ids) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<std::int32_t> token(0, static_cast<std::int32_t>(c.vocab_size - 1));
  ids.resize(static_cast<std::size_t>(batch * seq));
  for (auto& id : ids) {
    do id = token(rng);
    while (id == c.pad_token_id);
  }
  std::vector<model::SequenceInput> out;
  for (std::int64_t b = 0; b < batch; ++b) {
    out.push_back({std::span<const std::int32_t>(ids).subspan(static_cast<std::size_t>(b * seq),
                                                              static_cast<std::size_t>(seq)),
                   {},
                   {}});
  }
  return out;
}

struct BenchResult {
  double seq_per_s = 0, gflops = 0, flops_per_batch = 0, seconds = 0;
  std::optional<double> gemm_gflops;  // the library alone; nullopt where not measurable
  // The model's GEMM FLOPs over the model's time, ÷ the library's speed on the same GEMMs: the
  // same FLOPs on both sides (the time the GEMMs alone would take ÷ the model's time).
  std::optional<double> gemm_share;
  backend::OpProfile profile;  // summed over the replicas
};

// The model on fixed batches, every replica at once; then the GEMM library alone on the same
// shapes, with the replicas' buffers gone first so that the process's peak RSS is the model's
// (weights + activations), not the two added together.
BenchResult measure(const BenchOptions& o, const backend::Backend& be,
                    std::shared_ptr<const backend::PreparedModel> model,
                    const model::TaskSpec& task) {
  std::vector<std::int32_t> ids;
  const auto batch = random_batch(model->config(), o.batch, o.seq, ids);
  BenchResult result;
  std::vector<backend::OpProfile> profiles(static_cast<std::size_t>(o.replicas));
  {
    sched::ReplicaPool pool(model, {o.replicas, o.threads, o.pin});
    std::vector<std::vector<float>> outputs(static_cast<std::size_t>(o.replicas));
    pool.run([&](int r, backend::Replica& replica) {
      for (int i = 0; i < o.warmup; ++i) replica.predict(batch, task, outputs[r]);
      if (o.profile) replica.attach_profile(&profiles[r]);
    });
    result.seconds = pool.run([&](int r, backend::Replica& replica) {
      for (int i = 0; i < o.iters; ++i) replica.predict(batch, task, outputs[r]);
    });
    result.flops_per_batch = pool.replica(0).last_flops();
  }
  for (const auto& p : profiles) result.profile.add(p);
  const double total_batches = static_cast<double>(o.iters) * o.replicas;
  result.seq_per_s = total_batches * static_cast<double>(o.batch) / result.seconds;
  result.gflops = total_batches * result.flops_per_batch / result.seconds / 1e9;

  std::vector<std::unique_ptr<backend::GemmProbe>> probes;
  for (int r = 0; r < o.replicas; ++r) {
    auto probe = be.library_gemm_probe(*model, o.batch * o.seq, o.threads);
    if (!probe) return result;
    probes.push_back(std::move(probe));
  }
  sched::ReplicaPool pool(model, {o.replicas, o.threads, o.pin});
  pool.run([&](int r, backend::Replica&) { probes[r]->run(); });
  const int gemm_iters = std::max(2, o.iters);
  const double gemm_seconds = pool.run([&](int r, backend::Replica&) {
    for (int i = 0; i < gemm_iters; ++i) probes[r]->run();
  });
  result.gemm_gflops = probes[0]->flops() * gemm_iters * o.replicas / gemm_seconds / 1e9;
  // The probe runs one layer's four dense GEMMs; the model runs them in every layer (its head's
  // few rows are left out: under 0.1% of the FLOPs).
  const double layers = static_cast<double>(model->config().num_layers);
  const double model_gemm_gflops =
      total_batches * layers * probes[0]->flops() / result.seconds / 1e9;
  result.gemm_share = model_gemm_gflops / *result.gemm_gflops;
  return result;
}

// int8 exactly as `mcinfer run --input FILE --precision int8` builds it: the precision check's
// rows of FILE calibrate the input smoothing and choose the GEMMs kept out of int8, so that the
// speed measured is that of the model whose accuracy a run reports. `summary`: the plan.
std::shared_ptr<const backend::PreparedModel> calibrated_int8(const BenchOptions& o,
                                                              const backend::Backend& be,
                                                              std::string& summary) {
  if (o.model_dir.empty())
    fail_usage("--calibrate-on needs MODEL_DIR (a model with its tokenizer)");
  sched::RunOptions ro;
  ro.model_dir = o.model_dir;
  ro.input = o.calibrate_on;
  ro.output = std::filesystem::temp_directory_path() / "mcinfer_bench_unused.csv";
  ro.precision = model::Precision::kInt8;
  if (o.task == "embed") ro.task = model::TaskKind::kEmbed;
  const model::ModelDir dir = model::ModelDir::open(o.model_dir);
  const sched::RunPlan plan = sched::plan_run(ro, dir, be, sched::RankInfo{});
  sched::Int8Request request;  // the run's defaults: 32 check rows, int8's default targets
  const sched::Int8Plan int8 = sched::plan_int8(
      dir, be, plan.task,
      [&](std::size_t n) { return sched::sample_rows(plan.feed, plan.tokenizer.get(), n); },
      o.replicas * o.threads, request, nullptr);
  summary = int8.summary + (int8.check ? "; " + int8.check->summary() : "");
  return int8.weights;
}

int run_bench(const BenchOptions& o) {
  if (!o.input.empty()) return run_end_to_end(o);
  if (o.model_dir.empty() == o.shape.empty()) fail_usage("give either MODEL_DIR or --shape NAME");
  if (o.batch < 1 || o.seq < 2 || o.threads < 1 || o.replicas < 1 || o.iters < 1 || o.warmup < 0) {
    fail_usage("--batch, --threads, --replicas and --iters must be positive, --seq at least 2");
  }
  backend::BackendOptions bo =
      sched::backend_options({.backend = o.backend, .plugin = o.plugin, .devices = o.devices});
  if (!o.isa.empty()) bo.cpu.isa = o.isa;
  bo.cpu.epilogue_in_kernel = o.epilogue == "kernel";
  const auto be = backend::make_backend(bo);
  const model::PrecisionChoice precision = be->resolve_precision(parse_precision_flag(o.precision));
  backend::PrepareOptions prepare;
  prepare.precision = precision.precision;
  if (!o.calibrate_on.empty() && precision.precision != model::Precision::kInt8)
    fail_usage("--calibrate-on builds int8 as a run does: it needs --precision int8");
  std::string int8_plan = precision.precision == model::Precision::kInt8
                              ? "uncalibrated, every GEMM in int8 (--calibrate-on FILE: as a run)"
                              : "";
  auto model = !o.calibrate_on.empty() ? calibrated_int8(o, *be, int8_plan)
               : o.shape.empty()
                   ? be->prepare(model::ModelDir::open(o.model_dir), prepare, nullptr)
                   : be->synthetic(model::ModelConfig::shape(o.shape), precision.precision);
  const model::ModelConfig& c = model->config();
  if (o.seq > c.max_sequence_length()) {
    fail_usage("--seq {} is longer than the model allows ({})", o.seq, c.max_sequence_length());
  }
  model::TaskSpec task;
  task.kind = (o.task == "classify" && c.head == model::Head::kSequenceClassification)
                  ? model::TaskKind::kClassify
                  : model::TaskKind::kEmbed;
  const BenchResult b = measure(o, *be, model, task);
  const backend::OpProfile& total = b.profile;
  double profiled = 0;
  for (double s : total.seconds) profiled += s;

  Json report = {
      {"model", o.shape.empty() ? o.model_dir : o.shape},
      {"architecture", c.architecture},
      {"backend", be->name()},
      {"device", be->description()},
      {"precision", model::precision_name(precision.precision)},
      {"precision_reason", precision.reason},
      {"int8_plan", int8_plan.empty() ? Json(nullptr) : Json(int8_plan)},
      {"batch", o.batch},
      {"seq", o.seq},
      {"threads_per_replica", o.threads},
      {"replicas", o.replicas},
      {"iters", o.iters},
      {"epilogue", o.epilogue},
      {"seq_per_s", b.seq_per_s},
      {"gflops", b.gflops},
      {"gemm_gflops", b.gemm_gflops ? Json(*b.gemm_gflops) : Json(nullptr)},
      // GEMM FLOPs on both sides (issue 30: the whole model's FLOPs over the GEMMs' alone counted
      // attention on one side only).
      {"efficiency_vs_gemm", b.gemm_share ? Json(*b.gemm_share) : Json(nullptr)},
      {"gflop_per_batch", b.flops_per_batch / 1e9},
      {"seconds", b.seconds},
  };
  if (o.profile) {
    Json shares = Json::object();
    for (std::size_t i = 0; i < total.seconds.size(); ++i) {
      shares[std::string(backend::op_kind_name(static_cast<backend::OpKind>(i)))] =
          profiled > 0 ? total.seconds[i] / profiled : 0.0;
    }
    report["op_share"] = shares;
    report["gemm_achieved_gflops_in_model"] =
        total.seconds[0] > 0 ? total.flops[0] / total.seconds[0] / 1e9 : 0.0;
  }
  if (o.json) {
    fmt::print("{}\n", report.dump());
    return kExitOk;
  }
  fmt::print("model        {} ({}, {} layers, hidden {}, {} heads)\n",
             report["model"].get<std::string>(), c.architecture, c.num_layers, c.hidden_size,
             c.num_heads);
  fmt::print("device       {}\n", be->description());
  fmt::print("precision    {}\n", precision.reason);
  if (!int8_plan.empty()) fmt::print("int8 plan    {}\n", int8_plan);
  fmt::print(
      "workload     {} replica(s) x {} thread(s), batch {} x {} tokens, {} timed batches each\n",
      o.replicas, o.threads, o.batch, o.seq, o.iters);
  fmt::print("throughput   {:.2f} sequences/s, {:.1f} GFLOP/s ({:.2f} GFLOP per batch)\n",
             b.seq_per_s, b.gflops, b.flops_per_batch / 1e9);
  if (b.gemm_gflops) {
    fmt::print(
        "GEMM alone   {:.1f} GFLOP/s on the same shapes -> the model's GEMM FLOPs run at {:.1f}% "
        "of it (the GEMMs alone would take that share of the model's time)\n",
        *b.gemm_gflops, 100.0 * *b.gemm_share);
  }
  if (o.profile) {
    fmt::print("time per op (all replicas):\n");
    for (std::size_t i = 0; i < total.seconds.size(); ++i) {
      if (total.seconds[i] == 0) continue;
      fmt::print("  {:<13} {:5.1f}%", backend::op_kind_name(static_cast<backend::OpKind>(i)),
                 100.0 * total.seconds[i] / profiled);
      if (total.flops[i] > 0)
        fmt::print("  {:7.1f} GFLOP/s", total.flops[i] / total.seconds[i] / 1e9);
      fmt::print("\n");
    }
  }
  return kExitOk;
}

}  // namespace

Action add_bench_command(CLI::App& app, const Invocation& invocation) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand(
      "bench", "Measure forward-pass throughput against the GEMM library's own speed");
  sub->add_option("model_dir", o->model_dir, "Hugging Face model directory");
  sub->add_option(
      "--input", o->input,
      "Profile a whole run over this CSV/JSONL instead (tokenization and I/O included)");
  sub->add_option("--calibrate-on", o->calibrate_on,
                  "int8: build the model as `run --input FILE` does (its check rows calibrate the "
                  "input smoothing and choose the GEMMs kept out of int8), then time it");
  sub->add_option("--shape", o->shape,
                  "Random weights of a known shape instead of a model directory")
      ->check(CLI::IsMember(model::ModelConfig::shape_names()));
  sub->add_option("--batch", o->batch, "Sequences per batch")->capture_default_str();
  sub->add_option("--seq", o->seq, "Tokens per sequence")->capture_default_str();
  sub->add_option("--threads", o->threads, "Threads per replica")->capture_default_str();
  sub->add_option("--replicas", o->replicas,
                  "Replicas running at once (one thread each by default)")
      ->capture_default_str();
  sub->add_option("--warmup", o->warmup, "Untimed batches per replica")->capture_default_str();
  sub->add_option("--iters", o->iters, "Timed batches per replica")->capture_default_str();
  sub->add_option("--isa", o->isa, "Force the kernels' instruction set (generic, avx2, avx512)");
  sub->add_option("--epilogue", o->epilogue,
                  "Bias+activation in the GEMM epilogue or in our own kernel")
      ->check(CLI::IsMember({"gemm", "kernel"}))
      ->capture_default_str();
  sub->add_option("--task", o->task, "classify (when the model has a head) or embed")
      ->check(CLI::IsMember({"classify", "embed"}))
      ->capture_default_str();
  sub->add_option("--precision", o->precision,
                  "fp32, bf16, int8, or auto (bf16 where the CPU has native bf16 dot products)")
      ->capture_default_str();
  sub->add_option("--backend", o->backend, "Device family: cpu or pjrt")->capture_default_str();
  sub->add_option("--plugin", o->plugin, "--backend pjrt: the plugin, a .so file or cpu, cuda, tpu")
      ->capture_default_str();
  sub->add_option("--devices", o->devices, "--backend pjrt: devices to use (default: all)");
  sub->add_flag("--profile", o->profile, "Print the share of time per op");
  sub->add_flag("--json", o->json, "Print one JSON object");
  sub->add_flag("!--no-pin", o->pin, "Do not pin replica threads to cores");
  return [o] {
    try {
      return run_bench(*o);
    } catch (const PrecisionCheckError& e) {  // --calibrate-on: int8 misses its targets
      fmt::print(stderr, "mcinfer: {}\n", e.what());
      return kExitPrecisionCheck;
    }
  };
}

}  // namespace mcinfer::cli
