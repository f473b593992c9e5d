// mcinfer run: predictions for every row of an input file, on every core.

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "commands.h"
#include "core/error.h"
#include "sched/precision_check.h"
#include "sched/run.h"

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
  sched::RunOptions options;
  std::string model_dir, input, output;
  std::string format, task, pooling, normalize, activation = "auto", replicas = "auto",
                                                schedule = "dynamic";
  std::string on_bad_row = "error";
  std::string shards_dir, report;
  std::string text_pair_col;
  std::optional<std::size_t> max_len;  // absent: the model's (0 is refused, not "the default")
  std::string precision = "auto";
  std::optional<std::size_t> check_precision;
  std::optional<double> min_cosine, min_agreement;
  std::vector<std::string> argv;
};

int run_run(RunFlags& f) {
  sched::RunOptions& o = f.options;
  o.model_dir = f.model_dir;
  o.input = f.input;
  o.output = f.output;
  if (!f.format.empty()) o.format = f.format;
  if (!f.text_pair_col.empty()) o.columns.text_pair_col = f.text_pair_col;
  if (!f.task.empty()) o.task = model::parse_task(f.task);
  if (!f.pooling.empty()) o.pooling = model::PoolingModes(*model::parse_pooling(f.pooling));
  if (f.normalize == "true") o.normalize = true;
  if (f.normalize == "false") o.normalize = false;
  o.activation =
      model::parse_output_activation(f.activation).value_or(model::OutputActivation::kAuto);
  o.max_len = f.max_len;
  o.precision = parse_precision_flag(f.precision);
  o.check_precision_rows = f.check_precision;
  o.min_cosine = f.min_cosine;
  o.min_agreement = f.min_agreement;
  if (f.replicas != "auto") {
    try {
      std::size_t used = 0;
      o.replicas = std::stoi(f.replicas, &used);
      if (used != f.replicas.size() || o.replicas < 1) throw std::invalid_argument("");
    } catch (const std::exception&) {
      fail_usage("--replicas must be a positive number or 'auto', not '{}'", f.replicas);
    }
  }
  o.schedule = sched::kScheduleNames.parse(f.schedule).value_or(sched::Schedule::kDynamic);
  o.skip_bad_rows = f.on_bad_row == "skip";
  if (!f.shards_dir.empty()) o.shards_dir = f.shards_dir;
  if (!f.report.empty()) o.report_path = f.report;
  o.command_line = f.argv;
  o.stop = &g_stop_requested;
  install_stop_handlers();
  try {
    sched::run_job(o);
  } catch (const sched::StoppedError& e) {
    fmt::print(stderr, "mcinfer: {}\n", e.what());
    return 128 + g_stop_signal.load();
  } catch (const sched::PrecisionCheckError& e) {
    fmt::print(stderr, "mcinfer: {}\n", e.what());
    return kExitPrecisionCheck;
  }
  return kExitOk;
}

}  // namespace

Action add_run_command(CLI::App& app, const Invocation& invocation) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* sub = app.add_subcommand("run", "Run a model over every row of a CSV or JSONL file");
  sub->add_option("model_dir", f->model_dir,
                  "Hugging Face model directory (config.json, *.safetensors, tokenizer)")
      ->required();
  sub->add_option("--input", f->input, "Input rows: .csv (with a header) or .jsonl")->required();
  sub->add_option("--output", f->output,
                  "Predictions: .csv or .jsonl, written atomically at the end")
      ->required();
  sub->add_option("--format", f->format, "Input format when the extension does not say")
      ->check(CLI::IsMember({"csv", "jsonl"}));
  sub->add_option("--id-col", f->options.columns.id_col, "Id column (absent: row numbers)")
      ->capture_default_str();
  sub->add_option("--text-col", f->options.columns.text_col, "Text column")->capture_default_str();
  sub->add_option("--text-pair-col", f->text_pair_col, "Second text column, for sentence pairs");
  sub->add_option("--task", f->task,
                  "classify or embed (default: classify when the model has a head)")
      ->check(CLI::IsMember({"classify", "embed"}));
  sub->add_option(
         "--pooling", f->pooling,
         "Sentence embedding: mean, cls (first token), max, mean_sqrt_len, weightedmean or "
         "lasttoken (default: the sentence-transformers Pooling module, else mean)")
      ->check(CLI::IsMember({"mean", "cls", "max", "mean_sqrt_len", "weightedmean", "lasttoken"}));
  sub->add_flag("--normalize{true},--no-normalize{false}", f->normalize,
                "L2-normalise embeddings, or not (default: yes when the sentence-transformers "
                "modules list Normalize); --normalize=false works too")
      ->check(CLI::IsMember({"true", "false"}));
  sub->add_option("--activation", f->activation, "Classifier outputs (auto: from problem_type)")
      ->check(CLI::IsMember({"auto", "softmax", "sigmoid", "none"}))
      ->capture_default_str();
  sub->add_option("--max-len", f->max_len,
                  "Tokens per sequence, special tokens included (default: the model's)")
      ->check(whole_number());
  sub->add_option("--precision", f->precision,
                  "fp32, bf16, int8, or auto: bf16 where the CPU has native bf16 dot products "
                  "(avx512_bf16, AMX), else fp32 (auto never picks int8)")
      ->check(CLI::IsMember({"auto", "fp32", "bf16", "int8"}))
      ->capture_default_str();
  sub->add_option("--check-precision", f->check_precision,
                  "Rows sampled evenly from the input and compared against fp32 before a "
                  "reduced-precision run (default 32; 0: no check); with int8 they also choose "
                  "which GEMMs stay out of int8");
  sub->add_option("--min-cosine", f->min_cosine,
                  "Stop before writing anything (exit 4) if a sampled row's cosine to fp32 is "
                  "lower")
      ->check(CLI::Range(-1.0, 1.0));
  sub->add_option("--min-agreement", f->min_agreement,
                  "Classifiers: stop (exit 4) if the share of sampled rows with the fp32 argmax is "
                  "lower")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--int8-keep", f->options.int8_keep,
                  "int8: GEMMs kept in bf16 (fp32 without native bf16), e.g. 11.ffn_out,3 (all of "
                  "layer 3) or none (default: chosen on the --check-precision rows)");
  sub->add_option("--replicas", f->replicas,
                  "Model replicas (threads), or auto: one per physical core")
      ->capture_default_str();
  sub->add_option("--threads-per-replica", f->options.threads_per_replica,
                  "Threads inside each replica")
      ->capture_default_str();
  sub->add_option("--backend", f->options.backend,
                  "Device family: cpu (the default and the only one of this build)")
      ->capture_default_str();
  sub->add_option("--schedule", f->schedule,
                  "dynamic (length-sorted, token budget) or static (DistributedSampler)")
      ->check(CLI::IsMember({"dynamic", "static"}))
      ->capture_default_str();
  sub->add_option("--batch-size", f->options.batch_size, "Rows per batch (static)")
      ->capture_default_str();
  sub->add_option("--batch-tokens", f->options.batch_tokens, "Padded tokens per batch (dynamic)")
      ->capture_default_str();
  sub->add_option("--shards-dir", f->shards_dir,
                  "Keep the per-replica shards here (default: temporary)");
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
  f->argv = invocation.argv;
  return [f] { return run_run(*f); };
}

}  // namespace mcinfer::cli
