// The option table's parser: each kind accepts and refuses as documented, the refusal names the
// option as the surface does, and RunOptions and ModelOptions take a shared option alike.
#include "mcinfer/options.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace mcinfer {
namespace {

const OptionSpec& option(std::string_view name) {
  const OptionSpec* found = find_option(name);
  if (found == nullptr) throw std::logic_error(std::string(name) + " is not in the table");
  return *found;
}

std::string refusal(std::string_view name, std::string_view text, OptionSurface surface) {
  RunOptions o;
  try {
    set_option(o, option(name), text, surface);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(OptionTable, NamesAreUniqueAndEveryChoiceHasChoices) {
  std::set<std::string_view> names;
  std::set<std::string> flags;
  for (const OptionSpec& o : option_table()) {
    EXPECT_TRUE(names.insert(o.name).second) << o.name;
    EXPECT_TRUE(flags.insert(cli_name(o)).second) << cli_name(o);
    EXPECT_FALSE(o.help.empty()) << o.name;
    if (o.kind == OptionKind::kChoice) {
      EXPECT_GE(option_choices(o).size(), 2u) << o.name;
    }
    if (o.kind == OptionKind::kNumber) {
      EXPECT_LT(o.low, o.high) << o.name;
    }
  }
  EXPECT_EQ(cli_name(option("min_cosine")), "--min-cosine");
  EXPECT_EQ(cli_name(option("pin_threads")), "--no-pin");
  EXPECT_EQ(cli_name(option("model_dir")), "model_dir");
}

TEST(OptionTable, EachKindParsesItsValues) {
  RunOptions o = cli_run_defaults();
  set_option(o, option("stride"), "0", OptionSurface::kCli);
  set_option(o, option("truncate_dim"), "64", OptionSurface::kCli);
  set_option(o, option("min_cosine"), "-0.5", OptionSurface::kCli);
  set_option(o, option("min_agreement"), "1e-3", OptionSurface::kCli);
  set_option(o, option("replicas"), "3", OptionSurface::kCli);
  set_option(o, option("normalize"), "false", OptionSurface::kCli);
  set_option(o, option("pin_threads"), "false", OptionSurface::kCli);
  set_option(o, option("on_bad_row"), "skip", OptionSurface::kCli);
  set_option(o, option("precision"), "int8", OptionSurface::kCli);
  set_option(o, option("prompt"), "", OptionSurface::kCli);
  EXPECT_EQ(o.stride, 0u);
  EXPECT_EQ(o.truncate_dim, 64);
  EXPECT_EQ(o.min_cosine, -0.5);
  EXPECT_EQ(o.min_agreement, 1e-3);
  EXPECT_EQ(o.replicas, 3);
  EXPECT_EQ(o.normalize, false);
  EXPECT_FALSE(o.pin_threads);
  EXPECT_TRUE(o.skip_bad_rows);
  EXPECT_EQ(o.precision, "int8");
  EXPECT_EQ(o.prompt, "");  // "" is a prompt: none, as encode(prompt="")
  set_option(o, option("batch_tokens"), "100000000000", OptionSurface::kCli);  // 64-bit
  EXPECT_EQ(o.batch_tokens, 100000000000);
  set_option(o, option("replicas"), "auto", OptionSurface::kCli);
  EXPECT_EQ(o.replicas, 0);
  EXPECT_EQ(get_option(o, option("replicas")), "auto");
  EXPECT_EQ(get_option(o, option("min_agreement")), "0.001");
  EXPECT_EQ(get_option(o, option("on_bad_row")), "skip");
  EXPECT_EQ(get_option(o, option("max_len")), std::nullopt);
}

TEST(OptionTable, RefusalsNameTheOptionAsTheSurfaceDoes) {
  EXPECT_EQ(refusal("min_cosine", "nan", OptionSurface::kCli),
            "--min-cosine must be a number from -1 to 1, not 'nan'");
  EXPECT_EQ(refusal("min_cosine", "1.5", OptionSurface::kPython),
            "min_cosine must be a number from -1 to 1, not '1.5'");
  EXPECT_EQ(refusal("min_agreement", "0.5x", OptionSurface::kCli),
            "--min-agreement must be a number from 0 to 1, not '0.5x'");
  EXPECT_EQ(refusal("stride", "-1", OptionSurface::kCli),
            "--stride must be a whole number, 0 or more up to 2147483647, not '-1'");
  EXPECT_EQ(refusal("truncate_dim", "0", OptionSurface::kPython),
            "truncate_dim must be a whole number, 1 or more up to 2147483647, not '0'");
  EXPECT_EQ(refusal("replicas", "many", OptionSurface::kCli),
            "--replicas must be a whole number, 1 or more (or auto) up to 2147483647, not 'many'");
  EXPECT_EQ(refusal("devices", "99999999999", OptionSurface::kCli),
            "--devices must be a whole number, 0 or more up to 2147483647, not '99999999999'");
  EXPECT_EQ(refusal("precision", "fp16", OptionSurface::kCli),
            "--precision must be auto, fp32, bf16, int8, not 'fp16'");
  EXPECT_EQ(refusal("on_bad_row", "warn", OptionSurface::kPython),
            "on_bad_row must be error, skip, not 'warn'");
  EXPECT_EQ(refusal("report", "", OptionSurface::kCli), "--report must be a path, not ''");
  EXPECT_EQ(refusal("normalize", "yes", OptionSurface::kCli),
            "--normalize must be true, false, not 'yes'");
  for (const char* number : {"", " 1", "1 ", "+1", "0x10", "inf", "-inf"})
    EXPECT_NE(refusal("min_cosine", number, OptionSurface::kCli), "") << number;
  for (const char* count : {"", "+1", "1.0", "1e3", " 1", "-0"})
    EXPECT_NE(refusal("stride", count, OptionSurface::kCli), "") << count;
}

TEST(OptionTable, ModelTakesItsOptionsAsRunDoesAndRefusesRunsOwn) {
  for (const OptionSpec& o : option_table()) {
    if ((o.uses & kUseModel) == 0) continue;
    std::string text = "7";
    if (o.kind == OptionKind::kChoice) text = option_choices(o).front();
    if (o.kind == OptionKind::kNumber) text = "0.25";
    if (o.kind == OptionKind::kSwitch || o.kind == OptionKind::kToggle) text = "false";
    if (o.kind == OptionKind::kText || o.kind == OptionKind::kPath) text = "x";
    RunOptions run;
    ModelOptions model;
    set_option(run, o, text, OptionSurface::kPython);
    set_option(model, o, text, OptionSurface::kPython);
    EXPECT_EQ(get_option(run, o), text) << o.name;
    EXPECT_EQ(get_option(model, o), text) << o.name;
  }
  ModelOptions model;
  EXPECT_THROW(set_option(model, option("schedule"), "static", OptionSurface::kPython), UsageError);
}

}  // namespace
}  // namespace mcinfer
