#include "api/choices.h"

#include <fmt/format.h>

#include "core/error.h"

namespace mcinfer::api {
namespace {

// The option's value by its name, in the table's words when it is not one of `names`.
template <typename Enum, std::size_t N>
Enum parse_name(const EnumNames<Enum, N>& names, std::string_view option, const std::string& text,
                OptionSurface surface) {
  if (const std::optional<Enum> value = names.parse(text)) return *value;
  const OptionSpec& spec = *find_option(option);
  fail_usage("{} must be {}, not '{}'", option_name(spec, surface),
             fmt::join(option_choices(spec), ", "), text);
}

// RunOptions says unset with nullopt, ModelOptions with "".
const std::string* given(const std::optional<std::string>& text) { return text ? &*text : nullptr; }
const std::string* given(const std::string& text) { return text.empty() ? nullptr : &text; }

template <typename Options>
ParsedChoices parse_shared(const Options& o, OptionSurface surface) {
  ParsedChoices p;
  if (const std::string* task = given(o.task))
    p.task = parse_name(model::kTaskNames, "task", *task, surface);
  if (const std::string* pooling = given(o.pooling))
    p.pooling = model::PoolingModes(parse_name(model::kPoolingNames, "pooling", *pooling, surface));
  p.activation = parse_name(model::kOutputActivationNames, "activation", o.activation, surface);
  p.precision = parse_name(model::kPrecisionNames, "precision", o.precision, surface);
  p.chunk = {
      .mode = parse_name(sched::kLongInputNames, "long_input", o.long_input, surface),
      .reduce = parse_name(sched::kChunkReduceNames, "chunk_reduce", o.chunk_reduce, surface),
      .values = parse_name(sched::kChunkValuesNames, "chunk_values", o.chunk_values, surface)};
  if (o.tokenizer_compat != "auto") {
    p.tokenizer_compat =
        parse_name(tokenizer::kCompatNames, "tokenizer_compat", o.tokenizer_compat, surface);
  }
  return p;
}

}  // namespace

ParsedChoices parse_choices(const RunOptions& options, OptionSurface surface) {
  ParsedChoices p = parse_shared(options, surface);
  p.schedule = parse_name(sched::kScheduleNames, "schedule", options.schedule, surface);
  return p;
}

ParsedChoices parse_choices(const ModelOptions& options, OptionSurface surface) {
  return parse_shared(options, surface);
}

}  // namespace mcinfer::api
