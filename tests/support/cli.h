#pragma once
// Runs the mcinfer binary as a user would, for end-to-end tests.

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "support/paths.h"

extern char** environ;

namespace mcinfer::testing {

struct CliResult {
  int exit_code = -1;  // exit status, or 128 + signal number
  std::string out;     // stdout
  std::string err;     // stderr
  // The child's peak resident memory (wait4's ru_maxrss). posix_spawn starts the child with
  // vfork, whose memory is this process's until the exec, and the kernel keeps that peak: the
  // figure is max(the child's peak, this process's peak at the spawn), an upper bound.
  std::uint64_t peak_rss_bytes = 0;
  // CliOptions::signal was sent: the child was still running after signal_after_ms.
  bool signalled = false;
};

inline std::filesystem::path cli_path() {
  if (const char* env = std::getenv("MCINFER_CLI")) return env;
  return MCINFER_CLI_PATH;
}

struct CliOptions {
  std::string stdin_path;        // default /dev/null
  std::vector<std::string> env;  // extra NAME=VALUE entries
  int signal_after_ms = 0;       // > 0: send `signal` after this long (if still running)
  int signal = 9;
  long file_size_limit = 0;  // > 0: RLIMIT_FSIZE in bytes for the child
  std::string program;       // another program to run than mcinfer (default: cli_path())
};

CliResult run_cli(const std::vector<std::string>& args, const CliOptions& options);

// Runs `mcinfer args...` with stdin from `stdin_path` (or /dev/null) and captures both outputs.
inline CliResult run_cli(const std::vector<std::string>& args, const std::string& stdin_path = "",
                         const std::vector<std::string>& extra_env = {}) {
  CliOptions options;
  options.stdin_path = stdin_path;
  options.env = extra_env;
  return run_cli(args, options);
}

inline CliResult run_cli(const std::vector<std::string>& args, const CliOptions& options) {
  const std::string& stdin_path = options.stdin_path;
  const std::vector<std::string>& extra_env = options.env;
  auto dir = std::filesystem::temp_directory_path() /
             ("mcinfer_cli_" + std::to_string(::getpid()) + "_" + std::to_string(std::rand()));
  std::filesystem::create_directories(dir);
  auto out_path = dir / "stdout", err_path = dir / "stderr";
  std::string cli = options.program.empty() ? cli_path().string() : options.program;
  std::vector<char*> argv;
  argv.push_back(cli.data());
  std::vector<std::string> copy = args;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  // An extra entry replaces the inherited one of its name (getenv would find the first), so that
  // a test can turn off what the test setup sets, e.g. MCINFER_EMULATED_BF16=0.
  auto overridden = [&](std::string_view entry) {
    const std::string_view name = entry.substr(0, entry.find('=') + 1);
    for (const auto& e : extra_env)
      if (std::string_view(e).substr(0, e.find('=') + 1) == name) return true;
    return false;
  };
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e)
    if (!overridden(*e)) env_strings.emplace_back(*e);
  for (const auto& e : extra_env) env_strings.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(
      &actions, 0, stdin_path.empty() ? "/dev/null" : stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid = 0;
  CliResult result;
  struct rlimit saved {};
  if (options.file_size_limit > 0) {
    // posix_spawn children inherit limits: set ours around the spawn.
    getrlimit(RLIMIT_FSIZE, &saved);
    struct rlimit limit = saved;
    limit.rlim_cur = static_cast<rlim_t>(options.file_size_limit);
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  const int spawned = posix_spawn(&pid, cli.c_str(), &actions, nullptr, argv.data(), envp.data());
  if (options.file_size_limit > 0) setrlimit(RLIMIT_FSIZE, &saved);
  if (spawned == 0) {
    int status = 0;
    struct rusage usage {};
    bool finished = false;
    if (options.signal_after_ms > 0) {
      // Poll so that a child that finishes early is not signalled after its pid is reused.
      for (int waited = 0; waited < options.signal_after_ms && !finished; ++waited) {
        finished = wait4(pid, &status, WNOHANG, &usage) == pid;
        if (!finished) usleep(1000);
      }
      if (!finished) result.signalled = kill(pid, options.signal) == 0;
    }
    if (!finished) wait4(pid, &status, 0, &usage);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.peak_rss_bytes = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;  // KiB on Linux
  }
  posix_spawn_file_actions_destroy(&actions);
  result.out = read_file(out_path);
  result.err = read_file(err_path);
  std::filesystem::remove_all(dir);
  return result;
}

// Whether the binary under test was built with AddressSanitizer (its --version says so): CI runs
// a Release tree's CLI tests against the sanitized binary, whose memory peaks are higher.
inline bool cli_has_address_sanitizer() {
  static const bool asan =
      run_cli({"--version"}).out.find("sanitizers: address") != std::string::npos;
  return asan;
}

}  // namespace mcinfer::testing
