#pragma once
// Each subcommand lives in its own cmd_*.cc and registers itself here: it declares its flags
// on a CLI11 subcommand and returns the action that runs once the flags are parsed.

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "mcinfer/options.h"
#include "mcinfer/run.h"
#include "model/precision.h"
#include "table_flags.h"

namespace mcinfer::cli {

using Action = std::function<int()>;  // returns the process exit status

// The process's command line, for reports.
struct Invocation {
  std::vector<std::string> argv;
};

// Exit statuses shared by all subcommands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitMissingIds = 3;      // merge --expect found ids with no prediction
inline constexpr int kExitPrecisionCheck = 4;  // run: --min-cosine / --min-agreement not met

// --precision's value, checked.
inline model::Precision parse_precision_flag(const std::string& value) {
  auto p = model::parse_precision(value);
  if (!p) fail_usage("--precision must be fp32, bf16, int8 or auto, not '{}'", value);
  return *p;
}

// For count flags parsed into unsigned types: CLI11 would read "-1" as 2^64 - 1.
inline CLI::Validator whole_number() {
  return CLI::Validator(
      [](const std::string& value) {
        return !value.empty() && value.find_first_not_of("0123456789") == std::string::npos
                   ? std::string()
                   : "must be a whole number, not '" + value + "'";
      },
      "N");
}

// What each text becomes before the model (--prompt, --prompt-name, --tokenizer-compat): the option
// table's text flags, the same for run, tokenize and inspect.
struct TextFlags {
  TableFlags table;
  // The options as given, the CLI's defaults elsewhere.
  RunOptions options() const {
    RunOptions o = cli_run_defaults();
    table.apply(o);
    return o;
  }
};

inline void add_text_flags(CLI::App* sub, TextFlags& flags, unsigned more_uses = 0) {
  flags.table.add(sub, kUseText | more_uses);
}

Action add_run_command(CLI::App& app, const Invocation& invocation);
Action add_merge_command(CLI::App& app, const Invocation& invocation);
Action add_tokenize_command(CLI::App& app, const Invocation& invocation);
Action add_inspect_command(CLI::App& app, const Invocation& invocation);
Action add_bench_command(CLI::App& app, const Invocation& invocation);

}  // namespace mcinfer::cli
