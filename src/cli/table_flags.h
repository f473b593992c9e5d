#pragma once
// CLI11 flags built from the option table (mcinfer/options.h): each option's text is kept as
// given and handed to set_option() after parsing, so that the command line parses and refuses
// a value exactly as mcinfer.run() and mcinfer.Model() do.

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

#include "mcinfer/options.h"

namespace mcinfer::cli {

class TableFlags {
 public:
  // Adds the flags of the options whose uses include `use`, in the table's order.
  void add(CLI::App* sub, unsigned use);
  // The options given on the command line, parsed into `options` (UsageError naming the flag).
  void apply(RunOptions& options) const;
  // Whether the option of that name was given (tokenize's --stride: windows only when asked).
  bool given(std::string_view name) const;

 private:
  std::map<std::string, std::string, std::less<>> texts_;  // node-based: CLI11 keeps pointers
  std::vector<std::pair<const OptionSpec*, CLI::Option*>> flags_;
};

}  // namespace mcinfer::cli
