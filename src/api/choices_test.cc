// The names a run and a Model take (task, pooling, precision, ...) are parsed by one function
// for both: every choice the option table accepts is taken, and a value set straight into the
// options (bypassing the table) is refused in the table's own words for that surface.
#include "api/choices.h"

#include <gtest/gtest.h>

#include <functional>

namespace mcinfer::api {
namespace {

template <typename Options>
std::string refusal(const Options& options, OptionSurface surface) {
  try {
    parse_choices(options, surface);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

std::string table_refusal(std::string_view name, std::string_view text, OptionSurface surface) {
  RunOptions o;
  try {
    set_option(o, *find_option(name), text, surface);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(ParseChoices, TakesEveryChoiceTheTableTakes) {
  for (const OptionSpec& spec : option_table()) {
    if (spec.kind != OptionKind::kChoice || spec.name == "format" || spec.name == "on_bad_row")
      continue;  // the input's format and bad rows are the run's reader's, not names parsed here
    for (const std::string& choice : option_choices(spec)) {
      SCOPED_TRACE(std::string(spec.name) + " " + choice);
      RunOptions run;
      set_option(run, spec, choice, OptionSurface::kCli);
      EXPECT_EQ(refusal(run, OptionSurface::kCli), "");
      if (spec.uses & kUseModel) {
        ModelOptions model;
        set_option(model, spec, choice, OptionSurface::kPython);
        EXPECT_EQ(refusal(model, OptionSurface::kPython), "");
      }
    }
  }
}

TEST(ParseChoices, RefusesAValueSetAroundTheTableInTheTablesWords) {
  using Set = std::function<void(RunOptions&, ModelOptions&)>;
  const std::vector<std::pair<std::string_view, Set>> fields = {
      {"task", [](RunOptions& r, ModelOptions& m) { r.task = m.task = "sparse-ish"; }},
      {"pooling", [](RunOptions& r, ModelOptions& m) { r.pooling = m.pooling = "sparse-ish"; }},
      {"activation", [](RunOptions& r, ModelOptions& m) { r.activation = m.activation = "x"; }},
      {"precision", [](RunOptions& r, ModelOptions& m) { r.precision = m.precision = "fp16"; }},
      {"long_input", [](RunOptions& r, ModelOptions& m) { r.long_input = m.long_input = "x"; }},
      {"chunk_reduce",
       [](RunOptions& r, ModelOptions& m) { r.chunk_reduce = m.chunk_reduce = "x"; }},
      {"chunk_values",
       [](RunOptions& r, ModelOptions& m) { r.chunk_values = m.chunk_values = "x"; }},
      {"tokenizer_compat",
       [](RunOptions& r, ModelOptions& m) { r.tokenizer_compat = m.tokenizer_compat = "x"; }},
  };
  for (const auto& [name, set] : fields) {
    SCOPED_TRACE(name);
    RunOptions run;
    ModelOptions model;
    set(run, model);
    const std::string text = name == "task" || name == "pooling" ? "sparse-ish"
                             : name == "precision"               ? "fp16"
                                                                 : "x";
    EXPECT_EQ(refusal(run, OptionSurface::kCli), table_refusal(name, text, OptionSurface::kCli));
    EXPECT_EQ(refusal(model, OptionSurface::kPython),
              table_refusal(name, text, OptionSurface::kPython));
    EXPECT_NE(refusal(model, OptionSurface::kPython), "");
  }
  RunOptions run;
  run.schedule = "x";
  EXPECT_EQ(refusal(run, OptionSurface::kCli), table_refusal("schedule", "x", OptionSurface::kCli));
}

TEST(ParseChoices, GivesThePipelinesValues) {
  ModelOptions model;
  model.task = "sparse";
  model.pooling = "lasttoken";
  model.precision = "int8";
  model.long_input = "chunk";
  model.chunk_reduce = "max";
  model.tokenizer_compat = "file";
  const ParsedChoices p = parse_choices(model, OptionSurface::kPython);
  EXPECT_EQ(p.task, model::TaskKind::kSparse);
  ASSERT_TRUE(p.pooling.has_value());
  EXPECT_EQ(p.pooling->modes, std::vector<model::Pooling>{model::Pooling::kLastToken});
  EXPECT_EQ(p.precision, model::Precision::kInt8);
  EXPECT_EQ(p.chunk.mode, sched::LongInput::kChunk);
  EXPECT_EQ(p.chunk.reduce, sched::ChunkReduce::kMax);
  EXPECT_EQ(p.tokenizer_compat, tokenizer::Compat::kFile);
  EXPECT_FALSE(parse_choices(ModelOptions{}, OptionSurface::kPython).task.has_value());
  EXPECT_FALSE(parse_choices(ModelOptions{}, OptionSurface::kPython).tokenizer_compat);
}

}  // namespace
}  // namespace mcinfer::api
