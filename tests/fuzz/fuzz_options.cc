// Option values (mcinfer::set_option, the one parser of the CLI's flags and the Python keywords):
// any text for any option of the table is either taken, and then reads back as a value the
// parser takes again unchanged, or refused with a UsageError naming the option; never a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "mcinfer/options.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto table = mcinfer::option_table();
  const mcinfer::OptionSpec& option = table[data[0] % table.size()];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  mcinfer::RunOptions run;
  try {
    mcinfer::set_option(run, option, text, mcinfer::OptionSurface::kCli);
  } catch (const mcinfer::UsageError& e) {
    if (std::string_view(e.what()).rfind(mcinfer::cli_name(option) + " ", 0) != 0) std::abort();
    return 0;
  }
  // Taken: its rendering parses back to the same value (on a Model too, where it has it).
  const std::optional<std::string> shown = mcinfer::get_option(run, option);
  if (!shown) std::abort();
  mcinfer::RunOptions again;
  mcinfer::set_option(again, option, *shown, mcinfer::OptionSurface::kPython);
  if (mcinfer::get_option(again, option) != shown) std::abort();
  if (option.uses & mcinfer::kUseModel) {
    mcinfer::ModelOptions model;
    mcinfer::set_option(model, option, *shown, mcinfer::OptionSurface::kPython);
    if (mcinfer::get_option(model, option) != shown) std::abort();
  }
  return 0;
}
