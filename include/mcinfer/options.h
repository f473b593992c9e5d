#pragma once
// Every option of `mcinfer run`, mcinfer.run() and mcinfer.Model(), declared once. The CLI builds
// its flags from this table (run's, and the text and backend flags of tokenize and inspect), the
// Python package its keywords; all of them hand each value over as text, as the command line
// spells it, to set_option(), which parses it and refuses a wrong one in the same words whichever
// surface it came from (naming it as that surface does: --min-cosine or min_cosine).
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mcinfer/model.h"
#include "mcinfer/run.h"

namespace mcinfer {

enum class OptionKind {
  kPath,      // a file or directory
  kText,      // any text ("" included)
  kChoice,    // one of option_choices()
  kCount,     // a whole number, 0 or more
  kPositive,  // a whole number, 1 or more
  kNumber,    // a finite number in [low, high]
  kSwitch,    // true or false; the CLI's flag alone says which (--resume: true, --no-pin: false)
  kToggle,    // true, false or unset (the model directory decides): --normalize / --no-normalize
  kReplicas,  // auto (the backend's slots) or a whole number, 1 or more
};

// Where an option is offered (a bit set).
enum OptionUse : unsigned {
  kUseRun = 1,        // mcinfer run, mcinfer.run()
  kUseModel = 2,      // mcinfer.Model(), mcinfer::ModelOptions
  kUseText = 4,       // mcinfer tokenize and inspect: what a text becomes before the model
  kUseInspect = 8,    // mcinfer inspect: the backend it reports on
  kUseTokenize = 16,  // mcinfer tokenize: the rows it reads and where it cuts them
};

struct OptionSpec {
  std::string_view name;  // the keyword; the CLI's flag is --name with '-' for '_'
  OptionKind kind;
  unsigned uses;
  std::string_view help;
  // The CLI's spelling where it is not --name: a positional argument ("model_dir"), or the
  // switch that sets the option false ("--no-pin").
  std::string_view cli = {};
  bool required = false;  // run: a value must be given
  // kNumber: the closed range; kCount, kPositive: `high` > 0 raises the limit above INT_MAX.
  double low = 0, high = 0;
};

// How an option is named in a refusal.
enum class OptionSurface { kCli, kPython };

// The table, in the order `mcinfer run --help` lists the flags.
std::span<const OptionSpec> option_table();
// The option of that name; nullptr for none.
const OptionSpec* find_option(std::string_view name);
// The CLI's name for it: --min-cosine, --no-pin, model_dir.
std::string cli_name(const OptionSpec& option);
// The option as `surface` spells it in a refusal: --min-cosine on the command line, min_cosine
// from Python.
std::string option_name(const OptionSpec& option, OptionSurface surface);
// kChoice and kToggle: the values accepted.
std::vector<std::string> option_choices(const OptionSpec& option);
// The CLI's default, as text (nullopt: unset, the model directory or the run decides).
std::optional<std::string> option_default(const OptionSpec& option);

// Parses `text` as the option's kind and stores it; UsageError naming the option as `surface`
// names it. A Model refuses an option it does not have (uses without kUseModel).
void set_option(RunOptions& options, const OptionSpec& option, std::string_view text,
                OptionSurface surface);
void set_option(ModelOptions& options, const OptionSpec& option, std::string_view text,
                OptionSurface surface);
// The option's value, as set_option() would take it back; nullopt when unset.
std::optional<std::string> get_option(const RunOptions& options, const OptionSpec& option);
std::optional<std::string> get_option(const ModelOptions& options, const OptionSpec& option);

// RunOptions as the CLI starts from them (precision auto; the library's default is fp32).
RunOptions cli_run_defaults();

}  // namespace mcinfer
