// From raw text to predictions for every architecture: tiny random models with real tokenizer
// files (tests/fixtures/text, written by tools/gen_text_fixtures.py), compared with what
// transformers computes from the same CSV (tokenizer + model + pandas groupby mean).
#include <gtest/gtest.h>

#include "core/json.h"
#include "support/cli.h"
#include "support/predictions.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;

class TextFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(TextFixture, CsvTextToPredictionsMatchesTransformers) {
  const fs::path dir = testing::fixture("text/" + GetParam());
  Json meta = read_json_file(dir / "reference.json");
  auto out_dir = testing::scratch_dir("text_" + GetParam());
  auto want = testing::read_table(dir / "expected.csv");
  for (const char* schedule : {"dynamic", "static"}) {
    auto output = out_dir / "out.csv";
    std::vector<std::string> args = {"run",         dir.string(),
                                     "--input",     (dir / "input.csv").string(),
                                     "--output",    output.string(),
                                     "--schedule",  schedule,
                                     "--replicas",  "2",
                                     "--precision", "fp32",  // parity; bf16: precision_cli_test
                                     "--quiet"};
    for (const auto& flag : meta["flags"]) args.push_back(flag.get<std::string>());
    auto r = testing::run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto got = testing::read_table(output);
    EXPECT_EQ(got.columns, want.columns);
    EXPECT_EQ(got.ids, want.ids) << schedule;
    EXPECT_LE(testing::max_abs_difference(got, want), 1e-5) << schedule;
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, TextFixture,
                         ::testing::Values("bert_cls", "distilbert_cls", "roberta_cls",
                                           "xlmr_embed", "xlmr_cls_json", "deberta_cls"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mcinfer
