#include "table_flags.h"

#include <fmt/format.h>

namespace mcinfer::cli {
namespace {

// The help line: the table's text, then the default where one is worth showing.
std::string help_of(const OptionSpec& option) {
  std::string help(option.help);
  const std::optional<std::string> fallback = option_default(option);
  if (fallback && !fallback->empty() && option.kind != OptionKind::kSwitch)
    help += fmt::format(" [default: {}]", *fallback);
  return help;
}

std::string type_of(const OptionSpec& option) {
  switch (option.kind) {
    case OptionKind::kChoice:
      return fmt::format("{{{}}}", fmt::join(option_choices(option), ","));
    case OptionKind::kPath:
      return "PATH";
    case OptionKind::kCount:
    case OptionKind::kPositive:
      return "N";
    case OptionKind::kReplicas:
      return "N|auto";
    case OptionKind::kNumber:
      return fmt::format("X in [{},{}]", option.low, option.high);
    default:
      return "TEXT";
  }
}

}  // namespace

void TableFlags::add(CLI::App* sub, unsigned use) {
  for (const OptionSpec& option : option_table()) {
    if ((option.uses & use) == 0) continue;
    std::string& text = texts_[std::string(option.name)];
    const std::string name = cli_name(option);
    CLI::Option* flag = nullptr;
    if (option.kind == OptionKind::kSwitch) {
      // --resume sets true; a switch spelled --no-... sets false.
      const std::string value = name.rfind("--no-", 0) == 0 ? "false" : "true";
      flag = sub->add_flag_callback(
          name, [&text, value] { text = value; }, help_of(option));
    } else if (option.kind == OptionKind::kToggle) {
      flag = sub->add_flag(fmt::format("{0}{{true}},--no-{1}{{false}}", name, name.substr(2)), text,
                           help_of(option));
    } else {
      flag = sub->add_option(name, text, help_of(option))->type_name(type_of(option));
    }
    if (option.required) flag->required();
    flags_.emplace_back(&option, flag);
  }
}

void TableFlags::apply(RunOptions& options) const {
  for (const auto& [option, flag] : flags_) {
    if (flag->count() == 0) continue;
    set_option(options, *option, texts_.find(option->name)->second, OptionSurface::kCli);
  }
}

bool TableFlags::given(std::string_view name) const {
  for (const auto& [option, flag] : flags_)
    if (option->name == name) return flag->count() > 0;
  return false;
}

}  // namespace mcinfer::cli
