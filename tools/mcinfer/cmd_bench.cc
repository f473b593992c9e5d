// mcinfer bench: forward-pass throughput of a model (or a well-known shape with random weights)
// on fixed-size batches, next to what the GEMM library alone reaches on the same GEMM shapes.

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <thread>

#include "commands.h"
#include "core/error.h"
#include "core/json.h"
#include "core/system.h"
#include "model/encoder.h"
#include "sched/run.h"

namespace mcinfer::cli {
namespace {

struct BenchOptions {
  std::string model_dir;
  std::string input;  // end-to-end mode: a whole run over this file, profiled
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
  bool profile = false;
  bool json = false;
  bool pin = true;
};

using Clock = std::chrono::steady_clock;

// Runs body(replica) on `replicas` threads that start together; returns the wall seconds from
// the first worker's start to the last one's end. Each worker reads the clock itself: on a loaded
// machine the main thread may be scheduled after the workers have finished, and timing from its
// own wake-up once gave absurd rates (1e6 GFLOP/s on a tiny batch).
template <typename Body>
double run_concurrently(int replicas, bool pin, Body&& body) {
  std::vector<int> cpus = sys::cpus_by_core();
  std::barrier start(replicas + 1);
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(replicas));
  std::vector<Clock::time_point> began(static_cast<std::size_t>(replicas)),
      ended(static_cast<std::size_t>(replicas));
  for (int r = 0; r < replicas; ++r) {
    pool.emplace_back([&, r] {
      const auto i = static_cast<std::size_t>(r);
      if (pin && replicas > 1) sys::pin_current_thread(cpus[i % cpus.size()]);
      start.arrive_and_wait();
      began[i] = Clock::now();
      try {
        body(r);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      ended[i] = Clock::now();
    });
  }
  start.arrive_and_wait();
  for (auto& t : pool) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return std::chrono::duration<double>(*std::max_element(ended.begin(), ended.end()) -
                                       *std::min_element(began.begin(), began.end()))
      .count();
}

// A profiled `run` over a real input: where the time goes end to end, tokenization and I/O
// included.
int run_end_to_end(const BenchOptions& o) {
  if (o.model_dir.empty()) fail_usage("--input needs MODEL_DIR (a model with its tokenizer)");
  const std::filesystem::path out_dir =
      std::filesystem::temp_directory_path() / fmt::format("mcinfer_bench_{}", ::getpid());
  std::filesystem::create_directories(out_dir);
  sched::RunOptions ro;
  ro.model_dir = o.model_dir;
  ro.input = o.input;
  ro.output = out_dir / "out.csv";
  ro.replicas = o.replicas;
  ro.threads_per_replica = o.threads;
  ro.quiet = true;
  ro.profile = true;
  ro.pin_threads = o.pin;
  ro.precision = parse_precision_flag(o.precision);
  Json report;
  try {
    report = sched::run_job(ro);
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

int run_bench(const BenchOptions& o) {
  if (!o.input.empty()) return run_end_to_end(o);
  if (o.model_dir.empty() == o.shape.empty()) fail_usage("give either MODEL_DIR or --shape NAME");
  if (o.batch < 1 || o.seq < 2 || o.threads < 1 || o.replicas < 1 || o.iters < 1 || o.warmup < 0) {
    fail_usage("--batch, --threads, --replicas and --iters must be positive, --seq at least 2");
  }
  std::optional<cpu::Isa> isa;
  if (!o.isa.empty()) {
    isa = cpu::parse_isa(o.isa);
    if (!isa) fail_usage("--isa must be generic, avx2 or avx512");
  }
  auto device = ops::Device::cpu(isa);
  const ops::PrecisionChoice precision = ops::resolve_precision(parse_precision_flag(o.precision));
  auto weights = o.shape.empty()
                     ? model::Weights::load(o.model_dir, *device, nullptr, precision.precision)
                     : model::Weights::synthetic(model::ModelConfig::shape(o.shape), *device, 1,
                                                 precision.precision);
  const model::ModelConfig& c = weights->config();
  if (o.seq > c.max_sequence_length()) {
    fail_usage("--seq {} is longer than the model allows ({})", o.seq, c.max_sequence_length());
  }
  model::TaskSpec task;
  task.kind = (o.task == "classify" && weights->classifier()) ? model::TaskKind::kClassify
                                                              : model::TaskKind::kEmbed;
  const ops::EpilogueMode epilogue =
      o.epilogue == "kernel" ? ops::EpilogueMode::kOwnKernel : ops::EpilogueMode::kInGemm;

  // Random ids (never the pad id, so RoBERTa positions run 2..seq+1 as for real text).
  std::mt19937 rng(42);
  std::uniform_int_distribution<std::int32_t> token(0, static_cast<std::int32_t>(c.vocab_size - 1));
  std::vector<std::int32_t> ids(static_cast<std::size_t>(o.batch * o.seq));
  for (auto& id : ids) {
    do id = token(rng);
    while (id == c.pad_token_id);
  }
  std::vector<model::SequenceInput> batch;
  for (std::int64_t b = 0; b < o.batch; ++b) {
    batch.push_back({std::span(ids).subspan(static_cast<std::size_t>(b * o.seq),
                                            static_cast<std::size_t>(o.seq)),
                     {},
                     {}});
  }

  std::vector<std::unique_ptr<model::Encoder>> encoders;
  std::vector<ops::OpProfile> profiles(static_cast<std::size_t>(o.replicas));
  for (int r = 0; r < o.replicas; ++r) {
    encoders.push_back(std::make_unique<model::Encoder>(weights, *device, o.threads, epilogue));
  }
  std::vector<std::vector<float>> outputs(static_cast<std::size_t>(o.replicas));
  run_concurrently(o.replicas, o.pin, [&](int r) {
    for (int i = 0; i < o.warmup; ++i) encoders[r]->predict(batch, task, outputs[r]);
    if (o.profile) encoders[r]->context().attach_profile(&profiles[r]);
  });
  const double forward_seconds = run_concurrently(o.replicas, o.pin, [&](int r) {
    for (int i = 0; i < o.iters; ++i) encoders[r]->predict(batch, task, outputs[r]);
  });
  const double flops_per_batch = encoders[0]->last_flops();
  const double total_batches = static_cast<double>(o.iters) * o.replicas;
  const double seq_per_s = total_batches * static_cast<double>(o.batch) / forward_seconds;
  const double gflops = total_batches * flops_per_batch / forward_seconds / 1e9;
  // The replicas' buffers go before the GEMM-only measurement allocates its own, so that the
  // process's peak RSS is the model's (weights + activations), not the two added together.
  encoders.clear();
  outputs.clear();

  // The GEMM library alone on the model's four GEMM shapes, same threads and replicas, with the
  // element types the encoder uses (bf16: bf16 inputs, the FFN's first GEMM writes bf16; int8:
  // the library's s8 product with s32 results, without our scaling epilogue).
  const std::int64_t h = c.hidden_size, inter = c.intermediate_size, rows = o.batch * o.seq;
  const model::LayerWeights& layer = weights->layers()[0];
  const ops::Linear* shapes[] = {&layer.qkv, &layer.attn_out, &layer.ffn_in, &layer.ffn_out};
  const ops::DType in_type = layer.qkv.input_type();
  std::vector<AlignedBuffer<float>> in(static_cast<std::size_t>(o.replicas)),
      out(static_cast<std::size_t>(o.replicas));
  std::vector<std::unique_ptr<ops::Context>> gemm_ctx;
  for (int r = 0; r < o.replicas; ++r) {
    in[r].resize(static_cast<std::size_t>(ops::padded_rows(rows) * std::max(3 * h, inter)));
    out[r].resize(in[r].size());
    // Every input 0.00995, in f32 or in bf16 (bits 0x3C23): finite, realistic magnitudes.
    std::fill(in[r].data(), in[r].data() + in[r].size(), 0.00995f);
    if (in_type == ops::DType::kBf16) {
      std::vector<ops::Bf16> half(in[r].size() * 2, 0x3C23);
      std::memcpy(in[r].data(), half.data(), half.size() * sizeof(ops::Bf16));
    } else if (in_type == ops::DType::kS8) {
      std::memset(in[r].data(), 3, in[r].size() * sizeof(float));
    }
    gemm_ctx.push_back(std::make_unique<ops::Context>(*device, o.threads));
  }
  auto gemm_pass = [&](int r) {
    for (const ops::Linear* l : shapes) {
      if (in_type == ops::DType::kS8) {  // the library's s8 → s32 product alone, no epilogue
        gemm_ctx[r]->gemm().library_s8(l->cpu_weights(),
                                       reinterpret_cast<const std::int8_t*>(in[r].data()), rows,
                                       reinterpret_cast<std::int32_t*>(out[r].data()));
        continue;
      }
      const bool bf16_out = in_type == ops::DType::kBf16 && l == &layer.ffn_in;
      ops::linear(*gemm_ctx[r], *l, ops::ConstRows{in[r].data(), in_type}, rows,
                  ops::Rows{out[r].data(), bf16_out ? ops::DType::kBf16 : ops::DType::kF32});
    }
  };
  run_concurrently(o.replicas, o.pin, gemm_pass);
  const int gemm_iters = std::max(2, o.iters);
  const double gemm_seconds = run_concurrently(o.replicas, o.pin, [&](int r) {
    for (int i = 0; i < gemm_iters; ++i) gemm_pass(r);
  });
  const double gemm_flops = 2.0 * static_cast<double>(rows) * (4.0 * h * h + 2.0 * h * inter);
  const double gemm_gflops = gemm_flops * gemm_iters * o.replicas / gemm_seconds / 1e9;

  ops::OpProfile total;
  for (const auto& p : profiles) {
    for (std::size_t i = 0; i < total.seconds.size(); ++i) {
      total.seconds[i] += p.seconds[i];
      total.flops[i] += p.flops[i];
    }
  }
  double profiled = 0;
  for (double s : total.seconds) profiled += s;

  Json report = {
      {"model", o.shape.empty() ? o.model_dir : o.shape},
      {"architecture", c.architecture},
      {"device", device->description()},
      {"precision", ops::precision_name(precision.precision)},
      {"precision_reason", precision.reason},
      {"batch", o.batch},
      {"seq", o.seq},
      {"threads_per_replica", o.threads},
      {"replicas", o.replicas},
      {"iters", o.iters},
      {"epilogue", o.epilogue},
      {"seq_per_s", seq_per_s},
      {"gflops", gflops},
      {"gemm_gflops", gemm_gflops},
      {"efficiency_vs_gemm", gflops / gemm_gflops},
      {"gflop_per_batch", flops_per_batch / 1e9},
      {"seconds", forward_seconds},
  };
  if (o.profile) {
    Json shares = Json::object();
    for (std::size_t i = 0; i < total.seconds.size(); ++i) {
      shares[std::string(ops::op_kind_name(static_cast<ops::OpKind>(i)))] =
          profiled > 0 ? total.seconds[i] / profiled : 0.0;
    }
    report["op_share"] = shares;
    report["gemm_achieved_gflops_in_model"] =
        total.seconds[0] > 0 ? total.flops[0] / total.seconds[0] * o.replicas / 1e9 / o.replicas
                             : 0.0;
  }
  if (o.json) {
    fmt::print("{}\n", report.dump());
    return kExitOk;
  }
  fmt::print("model        {} ({}, {} layers, hidden {}, {} heads)\n",
             report["model"].get<std::string>(), c.architecture, c.num_layers, c.hidden_size,
             c.num_heads);
  fmt::print("device       {}\n", device->description());
  fmt::print("precision    {}\n", precision.reason);
  fmt::print(
      "workload     {} replica(s) x {} thread(s), batch {} x {} tokens, {} timed batches each\n",
      o.replicas, o.threads, o.batch, o.seq, o.iters);
  fmt::print("throughput   {:.2f} sequences/s, {:.1f} GFLOP/s ({:.2f} GFLOP per batch)\n",
             seq_per_s, gflops, flops_per_batch / 1e9);
  fmt::print("GEMM alone   {:.1f} GFLOP/s on the same shapes -> model runs at {:.1f}% of it\n",
             gemm_gflops, 100.0 * gflops / gemm_gflops);
  if (o.profile) {
    fmt::print("time per op (all replicas):\n");
    for (std::size_t i = 0; i < total.seconds.size(); ++i) {
      if (total.seconds[i] == 0) continue;
      fmt::print("  {:<13} {:5.1f}%", ops::op_kind_name(static_cast<ops::OpKind>(i)),
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
  sub->add_option("--shape", o->shape,
                  "Random weights of a known shape instead of a model directory")
      ->check(
          CLI::IsMember({"bert-base", "bert-large", "xlm-r-base", "distilbert-base", "minilm-l6"}));
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
  sub->add_flag("--profile", o->profile, "Print the share of time per op");
  sub->add_flag("--json", o->json, "Print one JSON object");
  sub->add_flag("!--no-pin", o->pin, "Do not pin replica threads to cores");
  return [o] { return run_bench(*o); };
}

}  // namespace mcinfer::cli
