#include "run_options.h"

#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <functional>
#include <map>
#include <type_traits>
#include <typeinfo>

namespace nb = nanobind;

namespace mcinfer::python {
namespace {

using Setter = std::function<void(RunOptions&, nb::handle)>;

// A field of RunOptions or of one of its bases (RunSettings, PrecisionGate).
template <typename Field, typename Owner>
requires std::is_base_of_v<Owner, RunOptions> Setter set(Field Owner::*member) {
  return [member](RunOptions& o, nb::handle value) { o.*member = nb::cast<Field>(value); };
}

const std::map<std::string, Setter, std::less<>>& setters() {
  static const std::map<std::string, Setter, std::less<>> table = {
      {"model_dir", set(&RunSettings::model_dir)},
      {"input", set(&RunSettings::input)},
      {"output", set(&RunSettings::output)},
      {"format", set(&RunSettings::format)},
      {"id_col", set(&RunSettings::id_col)},
      {"text_col", set(&RunSettings::text_col)},
      {"text_pair_col", set(&RunSettings::text_pair_col)},
      {"task", set(&RunOptions::task)},
      {"pooling", set(&RunOptions::pooling)},
      {"normalize", set(&RunSettings::normalize)},
      {"activation", set(&RunOptions::activation)},
      {"outputs", set(&RunSettings::outputs)},
      {"max_len", set(&RunSettings::max_len)},
      {"prompt", set(&RunSettings::prompt)},
      {"prompt_name", set(&RunSettings::prompt_name)},
      {"truncate_dim", set(&RunSettings::truncate_dim)},
      {"tokenizer_compat", set(&RunOptions::tokenizer_compat)},
      {"long_input", set(&RunOptions::long_input)},
      {"stride", set(&RunSettings::stride)},
      {"chunk_reduce", set(&RunOptions::chunk_reduce)},
      {"chunk_values", set(&RunOptions::chunk_values)},
      {"precision", set(&RunOptions::precision)},
      {"check_precision", set(&RunSettings::check_precision_rows)},
      {"min_cosine", set(&RunSettings::min_cosine)},
      {"min_agreement", set(&RunSettings::min_agreement)},
      {"int8_keep", set(&RunSettings::int8_keep)},
      {"backend", set(&RunSettings::backend)},
      {"plugin", set(&RunSettings::plugin)},
      {"devices", set(&RunSettings::devices)},
      {"replicas",
       [](RunOptions& o, nb::handle v) {
         // "auto" or None: the backend's slots, as --replicas auto.
         if (v.is_none() || (nb::isinstance<nb::str>(v) && nb::cast<std::string>(v) == "auto"))
           o.replicas = 0;
         else
           o.replicas = nb::cast<int>(v);
         if (o.replicas < 0) throw nb::value_error("replicas must be 1 or more, or 'auto'");
       }},
      {"threads_per_replica", set(&RunSettings::threads_per_replica)},
      {"schedule", set(&RunOptions::schedule)},
      {"batch_size", set(&RunSettings::batch_size)},
      {"batch_tokens", set(&RunSettings::batch_tokens)},
      {"shards_dir", set(&RunSettings::shards_dir)},
      {"resume", set(&RunSettings::resume)},
      {"rank", set(&RunSettings::rank)},
      {"world", set(&RunSettings::world)},
      {"on_bad_row",
       [](RunOptions& o, nb::handle v) {
         const auto value = nb::cast<std::string>(v);
         if (value != "error" && value != "skip")
           throw nb::value_error(
               ("on_bad_row must be 'error' or 'skip', not '" + value + "'").c_str());
         o.skip_bad_rows = value == "skip";
       }},
      {"report", set(&RunSettings::report_path)},
      {"quiet", set(&RunSettings::quiet)},
      {"pin_threads", set(&RunSettings::pin_threads)},
      {"profile", set(&RunSettings::profile)},
  };
  return table;
}

}  // namespace

std::vector<std::string> run_option_names() {
  std::vector<std::string> names;
  for (const auto& entry : setters()) names.push_back(entry.first);
  return names;
}

RunOptions run_options_from(const nb::dict& options) {
  RunOptions o;
  o.command_line = {"mcinfer.run()"};
  for (auto [key, value] : options) {
    const auto name = nb::cast<std::string>(key);
    const auto setter = setters().find(name);
    if (setter == setters().end()) {
      std::string known;
      for (const std::string& n : run_option_names()) known += (known.empty() ? "" : ", ") + n;
      throw nb::type_error(
          ("run() got an unknown option '" + name + "' (known: " + known + ")").c_str());
    }
    try {
      setter->second(o, value);
    } catch (const std::bad_cast&) {
      throw nb::type_error(
          ("run(): option '" + name + "' cannot be " + nb::type_name(value.type()).c_str())
              .c_str());
    }
  }
  return o;
}

}  // namespace mcinfer::python
