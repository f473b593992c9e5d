// Placeholder until the subcommand lands; keeps the binary linkable while modules are built.
#include "commands.h"
#include "core/error.h"

namespace mcinfer::cli {

Action add_inspect_command(CLI::App& app) {
  app.add_subcommand("inspect", "(not built yet)")->allow_extras();
  return [] () -> int { fail("'inspect' is not built yet"); };
}

}  // namespace mcinfer::cli
