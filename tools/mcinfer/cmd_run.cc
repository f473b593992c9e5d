// mcinfer run: predictions for every row of an input file, on every core.

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "commands.h"
#include "core/error.h"
#include "mcinfer/run.h"

namespace mcinfer::cli {
namespace {

// The first SIGINT/SIGTERM asks the replicas to stop after their current batch; a second one
// ends the process at once (the manifests keep --resume possible either way). Signal handlers
// can only reach process-wide state, hence these two variables.
std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_stop_signal{0};

extern "C" void on_stop_signal(int sig) {
  if (g_stop_requested.exchange(true)) _exit(128 + sig);
  g_stop_signal = sig;
  const char message[] =
      "\nmcinfer: stopping after the batches in progress (signal again to stop at once)\n";
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, message, sizeof(message) - 1);
}

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

struct RunFlags {
  RunFlags() { options.precision = "auto"; }  // the CLI's default; the library's is fp32
  RunOptions options;
  std::string format, task, pooling, normalize, replicas = "auto";
  std::string on_bad_row = "error";
  std::string shards_dir, report;
  std::string text_pair_col;
  TextFlags text;
  std::vector<std::string> argv;
};

int run_run(RunFlags& f) {
  RunOptions& o = f.options;
  if (!f.format.empty()) o.format = f.format;
  if (!f.text_pair_col.empty()) o.text_pair_col = f.text_pair_col;
  if (!f.task.empty()) o.task = f.task;
  o.prompt = f.text.prompt;
  o.prompt_name = f.text.prompt_name;
  o.tokenizer_compat = f.text.tokenizer_compat;
  if (!f.pooling.empty()) o.pooling = f.pooling;
  if (!f.normalize.empty()) o.normalize = f.normalize == "true";
  if (f.replicas != "auto") {
    try {
      std::size_t used = 0;
      o.replicas = std::stoi(f.replicas, &used);
      if (used != f.replicas.size() || o.replicas < 1) throw std::invalid_argument("");
    } catch (const std::exception&) {
      fail_usage("--replicas must be a positive number or 'auto', not '{}'", f.replicas);
    }
  }
  o.skip_bad_rows = f.on_bad_row == "skip";
  if (!f.shards_dir.empty()) o.shards_dir = f.shards_dir;
  if (!f.report.empty()) o.report_path = f.report;
  o.command_line = f.argv;
  o.stop = &g_stop_requested;
  install_stop_handlers();
  try {
    mcinfer::run(o);
  } catch (const StoppedError& e) {
    fmt::print(stderr, "mcinfer: {}\n", e.what());
    return 128 + g_stop_signal.load();
  } catch (const PrecisionCheckError& e) {
    fmt::print(stderr, "mcinfer: {}\n", e.what());
    return kExitPrecisionCheck;
  }
  return kExitOk;
}

// The flags of `run`, in the groups --help lists them in: the input, ...
void add_input_flags(CLI::App* sub, RunFlags* f) {
  sub->add_option("--format", f->format, "Input format when the extension does not say")
      ->check(CLI::IsMember(run_flag_choices("--format")));
  sub->add_option("--id-col", f->options.id_col, "Id column (absent: row numbers)")
      ->capture_default_str();
  sub->add_option("--text-col", f->options.text_col, "Text column")->capture_default_str();
  sub->add_option("--text-pair-col", f->text_pair_col, "Second text column, for sentence pairs");
}

// ... what the model computes and how long rows are handled, ...
void add_task_flags(CLI::App* sub, RunFlags* f) {
  sub->add_option("--task", f->task,
                  "classify, embed or sparse (default: sparse for a SparseEncoder, classify for "
                  "a model with a head, else embed)")
      ->check(CLI::IsMember(run_flag_choices("--task")));
  sub->add_option(
         "--pooling", f->pooling,
         "Sentence embedding: mean, cls (first token), max, mean_sqrt_len, weightedmean or "
         "lasttoken (default: the sentence-transformers Pooling module, else mean)")
      ->check(CLI::IsMember(run_flag_choices("--pooling")));
  sub->add_flag("--normalize{true},--no-normalize{false}", f->normalize,
                "L2-normalise embeddings, or not (default: yes when the sentence-transformers "
                "modules list Normalize); --normalize=false works too")
      ->check(CLI::IsMember({"true", "false"}));
  sub->add_option("--activation", f->options.activation,
                  "Classifier outputs (auto: a sentence-transformers cross-encoder's as "
                  "CrossEncoder.predict applies it, else from problem_type)")
      ->check(CLI::IsMember(run_flag_choices("--activation")))
      ->capture_default_str();
  sub->add_option("--outputs", f->options.outputs,
                  "Several outputs of one pass, in this order: classify: probs, logits, cls, "
                  "mean (pooled hidden states); embed: mean, cls, max, normalized. CSV columns "
                  "<output>.<label> / <output>.e<i>, one JSONL field per output");
  add_text_flags(sub, f->text);
  sub->add_option("--max-len", f->options.max_len,
                  "Tokens per sequence, special tokens included (default: the model's)")
      ->check(whole_number());
  sub->add_option("--sparse-top-k", f->options.sparse_top_k,
                  "sparse: keep each row's K largest token weights (sentence-transformers' "
                  "max_active_dims; default: the model's, else every nonzero)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--truncate-dim", f->options.truncate_dim,
                  "embed: keep the first N values of each embedding (Matryoshka), then normalise "
                  "if the model normalises (sentence-transformers' truncate_dim)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--long-input", f->options.long_input,
                  "Rows longer than --max-len: truncate (counted in the report), or chunk: cut "
                  "into windows as Hugging Face's return_overflowing_tokens does, every window "
                  "computed, one output per row reduced from them")
      ->check(CLI::IsMember(run_flag_choices("--long-input")))
      ->capture_default_str();
  sub->add_option("--stride", f->options.stride,
                  "chunk: tokens each window shares with the one before (HF's stride)")
      ->check(whole_number())
      ->capture_default_str();
  sub->add_option("--chunk-reduce", f->options.chunk_reduce,
                  "chunk: a row's output from its windows': mean, max, first, or token-weighted "
                  "(mean weighted by each window's tokens)")
      ->check(CLI::IsMember(run_flag_choices("--chunk-reduce")))
      ->capture_default_str();
  sub->add_option("--chunk-values", f->options.chunk_values,
                  "chunk, classifiers: reduce the windows' logits (then the activation) or their "
                  "probs")
      ->check(CLI::IsMember(run_flag_choices("--chunk-values")))
      ->capture_default_str();
}

// ... the precision and its check, ...
void add_precision_flags(CLI::App* sub, RunFlags* f) {
  sub->add_option("--precision", f->options.precision,
                  "fp32, bf16, int8, or auto: bf16 where the CPU has native bf16 dot products "
                  "(avx512_bf16, AMX), else fp32 (auto never picks int8)")
      ->check(CLI::IsMember(run_flag_choices("--precision")))
      ->capture_default_str();
  sub->add_option("--check-precision", f->options.check_precision_rows,
                  "Rows sampled evenly from the input and compared against fp32 before a "
                  "reduced-precision run (default 32; 0: no check); with int8 they also choose "
                  "which GEMMs stay out of int8");
  sub->add_option("--min-cosine", f->options.min_cosine,
                  "Stop before writing anything (exit 4) if a sampled row's cosine to fp32 is "
                  "lower")
      ->check(CLI::Range(-1.0, 1.0));
  sub->add_option("--min-agreement", f->options.min_agreement,
                  "Stop (exit 4) if the agreement with fp32 is lower: classifiers the share of "
                  "sampled rows with the fp32 argmax (rerankers: row pairs ranked alike), sparse "
                  "encoders the mean share of a row's fp32 nonzeros among its largest values")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--int8-keep", f->options.int8_keep,
                  "int8: GEMMs kept in bf16 (fp32 without native bf16), e.g. 11.ffn_out,3 (all of "
                  "layer 3) or none (default: chosen on the --check-precision rows)");
}

// ... and where and how the rows run.
void add_execution_flags(CLI::App* sub, RunFlags* f) {
  sub->add_option("--replicas", f->replicas,
                  "Model replicas (threads), or auto: one per physical core")
      ->capture_default_str();
  sub->add_option("--threads-per-replica", f->options.threads_per_replica,
                  "Threads inside each replica")
      ->capture_default_str();
  sub->add_option("--backend", f->options.backend,
                  "Device family: cpu (every core of this machine) or pjrt (TPU, GPU or CPU "
                  "devices through a PJRT plugin)")
      ->capture_default_str();
  sub->add_option("--plugin", f->options.plugin,
                  "--backend pjrt: the plugin, a .so file or cpu, cuda, tpu")
      ->capture_default_str();
  sub->add_option("--devices", f->options.devices,
                  "--backend pjrt: devices to use (default: all; a CPU plugin makes that many, by "
                  "default one per physical core)");
  sub->add_option("--schedule", f->options.schedule,
                  "dynamic (length-sorted, token budget) or static (DistributedSampler)")
      ->check(CLI::IsMember(run_flag_choices("--schedule")))
      ->capture_default_str();
  sub->add_option("--batch-size", f->options.batch_size, "Rows per batch (static)")
      ->capture_default_str();
  sub->add_option("--batch-tokens", f->options.batch_tokens, "Padded tokens per batch (dynamic)")
      ->capture_default_str();
  sub->add_option("--shards-dir", f->shards_dir,
                  "Keep the per-replica shards here (default: temporary; a distributed run: a "
                  "directory every rank reaches)");
  sub->add_option("--rank", f->options.rank,
                  "This process's rank in a distributed run (default: from the launcher: Open "
                  "MPI, MPICH, Slurm, Kubernetes Indexed Job, torchrun)");
  sub->add_option("--world", f->options.world,
                  "Processes sharing the input (default: from the launcher; 1: one machine)");
  sub->add_flag("--resume", f->options.resume,
                "Continue the interrupted run whose shards are in --shards-dir: only rows not yet "
                "durable are run");
  sub->add_option("--on-bad-row", f->on_bad_row,
                  "error: stop at the first bad row; skip: count and go on")
      ->check(CLI::IsMember({"error", "skip"}))
      ->capture_default_str();
  sub->add_option("--report", f->report, "Write a JSON run report here");
  sub->add_flag("--quiet", f->options.quiet, "No progress or summary on stderr");
  sub->add_flag("!--no-pin", f->options.pin_threads, "Do not pin replica threads to cores");
  sub->add_flag("--profile", f->options.profile,
                "Time every op and stage; the report gets time_share");
}

}  // namespace

Action add_run_command(CLI::App& app, const Invocation& invocation) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* sub = app.add_subcommand("run", "Run a model over every row of a CSV or JSONL file");
  sub->add_option("model_dir", f->options.model_dir,
                  "Hugging Face model directory (config.json, *.safetensors, tokenizer)")
      ->required();
  sub->add_option("--input", f->options.input, "Input rows: .csv (with a header) or .jsonl")
      ->required();
  sub->add_option("--output", f->options.output,
                  "Predictions: .csv or .jsonl, written atomically at the end")
      ->required();
  add_input_flags(sub, f.get());
  add_task_flags(sub, f.get());
  add_precision_flags(sub, f.get());
  add_execution_flags(sub, f.get());
  f->argv = invocation.argv;
  return [f] { return run_run(*f); };
}

}  // namespace mcinfer::cli
