#pragma once
// Each subcommand lives in its own cmd_*.cc and registers itself here: it declares its flags
// on a CLI11 subcommand and returns the action that runs once the flags are parsed.

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "mcinfer/run.h"
#include "model/precision.h"

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

// What each text becomes before the model: the same flags for run, tokenize and inspect.
struct TextFlags {
  std::optional<std::string> prompt, prompt_name;
  std::string tokenizer_compat = "auto";
};

inline void add_text_flags(CLI::App* sub, TextFlags& flags) {
  sub->add_option("--prompt", flags.prompt,
                  "Text prepended to every text (to the first of a pair), as "
                  "sentence-transformers' encode(prompt=...); \"\": no prompt");
  sub->add_option("--prompt-name", flags.prompt_name,
                  "The prompt of that name in config_sentence_transformers.json, as encode("
                  "prompt_name=...) (default: its default_prompt_name, if any)");
  sub->add_option("--tokenizer-compat", flags.tokenizer_compat,
                  "auto: transformers 5's tokenizer when config.json was written by transformers "
                  "5, else the files'; file: as tokenizer.json says; transformers5: as "
                  "transformers 5 rebuilds it from the tokenizer class")
      ->check(CLI::IsMember(run_flag_choices("--tokenizer-compat")))
      ->capture_default_str();
}

Action add_run_command(CLI::App& app, const Invocation& invocation);
Action add_merge_command(CLI::App& app, const Invocation& invocation);
Action add_tokenize_command(CLI::App& app, const Invocation& invocation);
Action add_inspect_command(CLI::App& app, const Invocation& invocation);
Action add_bench_command(CLI::App& app, const Invocation& invocation);

}  // namespace mcinfer::cli
