// mcinfer run: predictions for every row of an input file, on every core.

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "cli.h"
#include "commands.h"
#include "core/error.h"
#include "mcinfer/options.h"
#include "mcinfer/run.h"
#include "table_flags.h"

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
  TableFlags table;
  std::vector<std::string> argv;
};

int run_run(const RunFlags& f) {
  RunOptions o = cli_run_defaults();
  f.table.apply(o);
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

}  // namespace

// The flags are the option table's (mcinfer/options.h), in its order: the job, the input's
// columns, what the model computes, the precision and its check, where and how the rows run.
RunOptions parse_run_command(const std::vector<std::string>& args) {
  CLI::App app;
  RunFlags flags;
  flags.table.add(app.add_subcommand("run"), kUseRun);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 pops from the back
  reversed.push_back("run");
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    fail_usage("{}", e.what());
  }
  RunOptions o = cli_run_defaults();
  flags.table.apply(o);
  return o;
}

Action add_run_command(CLI::App& app, const Invocation& invocation) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* sub = app.add_subcommand("run", "Run a model over every row of a CSV or JSONL file");
  f->table.add(sub, kUseRun);
  f->argv = invocation.argv;
  return [f] { return run_run(*f); };
}

}  // namespace mcinfer::cli
