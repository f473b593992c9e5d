// The mcinfer command line as a function: the executable's main() and the Python package's
// console script both call it.
#include "cli.h"

#include <malloc.h>

#include <csignal>
#include <cstdio>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "core/error.h"
#include "data/parquet.h"
#include "sched/mpi_world.h"

namespace mcinfer::cli {
namespace {

const char* sanitizers_note() {
#if defined(MCINFER_SANITIZER_ADDRESS)
  return ", sanitizers: address,undefined";
#elif defined(MCINFER_SANITIZER_THREAD)
  return ", sanitizers: thread";
#else
  return "";
#endif
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"mcinfer: run Hugging Face encoder models over whole datasets on every core"};
  // The MPI library decides whether rank 0 of an mpirun job can merge for every rank.
  // Parquet needs the Arrow libraries the build found.
  // A sanitizer build says so: the CLI tests of a Release tree, run against this binary (CI's
  // sanitizer phases), read it for their memory bounds.
  app.set_version_flag("--version", std::string("mcinfer " MCINFER_VERSION " (MPI: ") +
                                        mcinfer::sched::mpi_library() + ", Parquet: " +
                                        mcinfer::data::parquet_library() + sanitizers_note() + ")");
  app.require_subcommand(1);
  Invocation invocation;
  for (int i = 0; i < argc; ++i) invocation.argv.emplace_back(argv[i]);
  std::vector<std::pair<CLI::App*, Action>> commands;
  auto add = [&](Action (*factory)(CLI::App&, const Invocation&)) {
    std::size_t before = app.get_subcommands({}).size();
    Action action = factory(app, invocation);
    commands.emplace_back(app.get_subcommands({})[before], std::move(action));
  };
  add(add_run_command);
  add(add_merge_command);
  add(add_tokenize_command);
  add(add_inspect_command);
  add(add_bench_command);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every other parse failure is a usage error (status 2).
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  try {
    for (auto& [sub, action] : commands) {
      if (sub->parsed()) return action();
    }
  } catch (const mcinfer::UsageError& e) {
    fmt::print(stderr, "mcinfer: error: {}\n", e.what());
    return kExitUsage;
  } catch (const mcinfer::Error& e) {
    fmt::print(stderr, "mcinfer: error: {}\n", e.what());
    return kExitError;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "mcinfer: error: out of memory\n");
    return kExitError;
  } catch (const std::exception& e) {
    // What the code did not turn into an Error (e.g. std::filesystem::filesystem_error, which
    // names the operation and the path) must still end as a message and status 1, not
    // std::terminate and an abort.
    fmt::print(stderr, "mcinfer: error: {}\n", e.what());
    return kExitError;
  } catch (...) {
    fmt::print(stderr, "mcinfer: error: unexpected failure (an exception of unknown type)\n");
    return kExitError;
  }
  return kExitUsage;
}

int run_as_process(int argc, char** argv) {
  // A file-size limit must surface as a write error naming the file, not kill the process.
  std::signal(SIGXFSZ, SIG_IGN);
  // glibc raises its mmap threshold each time a large block is freed (up to 32 MiB), after which
  // blocks of that size come from the heap and stay resident as holes once freed: the weight
  // loader's and the precision check's transient buffers did that. A fixed 128 KiB threshold
  // returns every large block on free. Measured (MiniLM bf16, 2 replicas, 4,000 rows, Zen 4):
  // peak RSS 172 -> 166 MiB; ~2 more mmap calls per batch (strace), compute time within the
  // noise of paired runs. The library leaves this policy to its host program (here: the
  // process this function owns); the precision
  // check's own malloc_trim calls cover hosts that do not set it.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);

  return run_cli(argc, argv);
}

}  // namespace mcinfer::cli
