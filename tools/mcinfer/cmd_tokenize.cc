// Placeholder until the subcommand lands; keeps the binary linkable while modules are built.
#include "commands.h"
#include "core/error.h"

namespace mcinfer::cli {

Action add_tokenize_command(CLI::App& app) {
  app.add_subcommand("tokenize", "(not built yet)")->allow_extras();
  return [] () -> int { fail("'tokenize' is not built yet"); };
}

}  // namespace mcinfer::cli
