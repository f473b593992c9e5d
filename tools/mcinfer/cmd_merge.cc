// Placeholder until the subcommand lands; keeps the binary linkable while modules are built.
#include "commands.h"
#include "core/error.h"

namespace mcinfer::cli {

Action add_merge_command(CLI::App& app) {
  app.add_subcommand("merge", "(not built yet)")->allow_extras();
  return [] () -> int { fail("'merge' is not built yet"); };
}

}  // namespace mcinfer::cli
