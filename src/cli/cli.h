#pragma once
// The mcinfer command line, callable from a host program (the executable, the Python package).

#include <string>
#include <vector>

namespace mcinfer {
struct RunOptions;  // mcinfer/run.h
}  // namespace mcinfer

namespace mcinfer::cli {

// Parses argv as `mcinfer ...` does, runs the subcommand and returns the exit status; prints
// errors to stderr. Called from one thread at a time (a run sets SIGINT/SIGTERM handlers).
int run_cli(int argc, char** argv);

// run_cli() in a process that exists for it (the executable, the Python console script): ignores
// SIGXFSZ and sets malloc's mmap threshold first, policies a library leaves to its host.
int run_as_process(int argc, char** argv);

// The options `mcinfer run ARGS...` would run with, parsed as the command line parses them but
// not run: for the tests that hold the CLI, mcinfer.run() and mcinfer.Model() to one table.
// Throws UsageError for what the command line refuses.
RunOptions parse_run_command(const std::vector<std::string>& args);

}  // namespace mcinfer::cli
