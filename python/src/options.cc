#include "options.h"

#include <nanobind/stl/string.h>

#include <mcinfer/options.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include "cli.h"

namespace nb = nanobind;

namespace mcinfer::python {
namespace {

std::string python_type_of(nb::handle value) { return nb::type_name(value.type()).c_str(); }

[[noreturn]] void wrong_type(const OptionSpec& option, nb::handle value, const char* expected) {
  throw nb::type_error(
      (std::string(option.name) + " must be " + expected + ", not " + python_type_of(value))
          .c_str());
}

// The text the command line would give for this value; nullopt for None (the default).
std::optional<std::string> option_text(const OptionSpec& option, nb::handle value) {
  if (value.is_none()) return std::nullopt;
  const bool is_bool = PyBool_Check(value.ptr());
  const bool is_int = PyLong_Check(value.ptr()) && !is_bool;
  switch (option.kind) {
    case OptionKind::kSwitch:
    case OptionKind::kToggle:
      if (!is_bool) wrong_type(option, value, "True or False");
      return value.ptr() == Py_True ? "true" : "false";
    case OptionKind::kReplicas:
      if (nb::isinstance<nb::str>(value)) return nb::cast<std::string>(value);
      if (!is_int) wrong_type(option, value, "an int or 'auto'");
      return nb::str(value).c_str();
    case OptionKind::kCount:
    case OptionKind::kPositive:
      if (!is_int) wrong_type(option, value, "an int");
      return nb::str(value).c_str();
    case OptionKind::kNumber:
      if (!is_int && !PyFloat_Check(value.ptr())) wrong_type(option, value, "a number");
      // repr() of a float reads back as the same double (the CLI's text does too).
      return nb::repr(nb::float_(value)).c_str();
    case OptionKind::kPath: {
      nb::object path = nb::borrow(value);
      if (!nb::isinstance<nb::str>(value)) {
        if (!nb::hasattr(value, "__fspath__")) wrong_type(option, value, "a str or os.PathLike");
        path = value.attr("__fspath__")();
        if (!nb::isinstance<nb::str>(path)) wrong_type(option, path, "a str path");
      }
      return nb::cast<std::string>(path);
    }
    case OptionKind::kText:
    case OptionKind::kChoice:
      if (!nb::isinstance<nb::str>(value)) wrong_type(option, value, "a str");
      return nb::cast<std::string>(value);
  }
  return std::nullopt;
}

template <typename Options>
Options options_from(const nb::dict& given, unsigned use, const char* call) {
  Options o{};
  if constexpr (std::is_same_v<Options, RunOptions>) o = cli_run_defaults();
  for (auto [key, value] : given) {
    const std::string name = nb::cast<std::string>(key);
    const OptionSpec* option = find_option(name);
    if (option == nullptr || (option->uses & use) == 0) {
      std::string known;
      for (const OptionSpec& s : option_table())
        if (s.uses & use) known += (known.empty() ? "" : ", ") + std::string(s.name);
      throw nb::type_error(
          (std::string(call) + " got an unknown option '" + name + "' (known: " + known + ")")
              .c_str());
    }
    if (const std::optional<std::string> text = option_text(*option, value))
      set_option(o, *option, *text, OptionSurface::kPython);
  }
  return o;
}

const char* kind_name(OptionKind kind) {
  switch (kind) {
    case OptionKind::kPath:
      return "path";
    case OptionKind::kText:
      return "text";
    case OptionKind::kChoice:
      return "choice";
    case OptionKind::kCount:
      return "count";
    case OptionKind::kPositive:
      return "positive";
    case OptionKind::kNumber:
      return "number";
    case OptionKind::kSwitch:
      return "switch";
    case OptionKind::kToggle:
      return "toggle";
    case OptionKind::kReplicas:
      return "replicas";
  }
  return "";
}

}  // namespace

RunOptions run_options_from(const nb::dict& options) {
  RunOptions o = options_from<RunOptions>(options, kUseRun, "run()");
  o.command_line = {"mcinfer.run()"};
  return o;
}

ModelOptions model_options_from(const nb::dict& options) {
  return options_from<ModelOptions>(options, kUseModel, "Model()");
}

nb::list option_table_for_python() {
  nb::list table;
  for (const OptionSpec& s : option_table()) {
    nb::dict d;
    d["name"] = std::string(s.name);
    d["kind"] = kind_name(s.kind);
    d["run"] = (s.uses & kUseRun) != 0;
    d["model"] = (s.uses & kUseModel) != 0;
    d["help"] = std::string(s.help);
    d["cli"] = cli_name(s);
    d["required"] = s.required;
    nb::list choices;
    for (const std::string& c : option_choices(s)) choices.append(c);
    d["choices"] = choices;
    const std::optional<std::string> fallback = option_default(s);
    d["default"] = fallback ? nb::object(nb::str(fallback->c_str())) : nb::none();
    if (s.kind == OptionKind::kNumber) {
      d["low"] = s.low;
      d["high"] = s.high;
    }
    table.append(d);
  }
  return table;
}

template <typename Options>
nb::dict rendered(const Options& o, unsigned use) {
  nb::dict d;
  for (const OptionSpec& s : option_table()) {
    if ((s.uses & use) == 0) continue;
    const std::optional<std::string> value = get_option(o, s);
    d[std::string(s.name).c_str()] = value ? nb::object(nb::str(value->c_str())) : nb::none();
  }
  return d;
}

nb::dict parsed_run_options(const nb::dict& options) {
  return rendered(run_options_from(options), kUseRun);
}

nb::dict parsed_model_options(const nb::dict& options) {
  return rendered(model_options_from(options), kUseModel);
}

nb::dict parsed_cli_run_options(const std::vector<std::string>& args) {
  return rendered(cli::parse_run_command(args), kUseRun);
}

}  // namespace mcinfer::python
