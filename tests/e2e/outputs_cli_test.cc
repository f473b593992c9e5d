// `run --outputs`: several outputs of one forward pass, each against transformers' reference
// values for the same rows (probabilities, logits, CLS and mean pooling of the last hidden
// states; max pooling from transformers' last hidden states as sentence-transformers takes it),
// in CSV column groups and JSONL fields, through `merge`, with --long-input chunk (each group
// reduced and finished as the one-output run of it), and the refused lists.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <fstream>

#include "core/json.h"
#include "support/cli.h"
#include "support/fixture_rows.h"
#include "support/predictions.h"
#include "support/reference.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

std::vector<std::string> run_args(const std::string& model_dir, const fs::path& input,
                                  const fs::path& output, std::vector<std::string> extra) {
  std::vector<std::string> args = {"run",      model_dir,       "--input", input.string(),
                                   "--output", output.string(), "--quiet", "--precision",
                                   "fp32",     "--replicas",    "2",       "--batch-tokens",
                                   "40"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// sentence-transformers' max pooling of transformers' last hidden states: the largest value
// over the tokens whose attention mask is 1.
std::vector<float> max_pooled(const testing::Reference& ref) {
  const auto shape = ref.shape("last_hidden_state");  // [B, L, H]
  const auto hidden = ref.floats("last_hidden_state");
  const auto mask = ref.ints("attention_mask");
  std::vector<float> out(static_cast<std::size_t>(shape[0] * shape[2]), -INFINITY);
  for (std::int64_t b = 0; b < shape[0]; ++b)
    for (std::int64_t t = 0; t < shape[1]; ++t)
      if (mask[b * shape[1] + t] != 0)
        for (std::int64_t h = 0; h < shape[2]; ++h)
          out[b * shape[2] + h] =
              std::max(out[b * shape[2] + h], hidden[(b * shape[1] + t) * shape[2] + h]);
  return out;
}

struct Expected {
  std::string output;         // the --outputs name
  std::vector<float> values;  // [rows, width]
};

std::vector<Expected> expected_outputs(const std::string& model, bool classify) {
  testing::Reference ref(testing::fixture("models/" + model + "/reference.safetensors"));
  if (classify) {
    return {{"probs", ref.floats("probs")},
            {"logits", ref.floats("logits")},
            {"cls", ref.floats("pooled_cls")},
            {"mean", ref.floats("pooled_mean")}};
  }
  // These fixtures have no sentence-transformers modules: the model's embedding is mean pooling.
  return {{"mean", ref.floats("pooled_mean")},
          {"cls", ref.floats("pooled_cls")},
          {"max", max_pooled(ref)},
          {"normalized", ref.floats("pooled_mean_normalized")}};
}

class Outputs : public ::testing::TestWithParam<std::string> {};

TEST_P(Outputs, EveryOutputOfOnePassMatchesTransformersInCsvAndJsonl) {
  const std::string model = GetParam();
  const Json meta = read_json_file(testing::fixture("models/" + model + "/reference.json"));
  const bool classify = meta["task"] == "classify";
  const std::vector<Expected> want = expected_outputs(model, classify);
  std::string list;
  for (const auto& e : want) list += (list.empty() ? "" : ",") + e.output;

  auto dir = testing::scratch_dir("outputs_" + model);
  const auto input = testing::write_fixture_rows(dir, model);
  const std::string model_dir = testing::fixture("models/" + model).string();
  auto r = run_cli(run_args(model_dir, input, dir / "out.csv",
                            {"--outputs", list, "--report", (dir / "report.json").string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto table = testing::read_table(dir / "out.csv");
  const std::size_t rows = table.ids.size();
  ASSERT_GT(rows, 0u);

  // CSV: one group of columns per output, in the order asked, named <output>.<label|e<i>>.
  std::vector<std::string> columns;
  for (const auto& e : want) {
    const std::size_t width = e.values.size() / rows;
    for (std::size_t j = 0; j < width; ++j) {
      const bool labelled = e.output == "probs" || e.output == "logits";
      columns.push_back(e.output + "." +
                        (labelled ? meta["id2label"][std::to_string(j)].get<std::string>()
                                  : fmt::format("e{}", j)));
    }
  }
  ASSERT_EQ(table.columns, columns);
  std::size_t at = 0;
  for (const auto& e : want) {
    const std::size_t width = e.values.size() / rows;
    double worst = 0;
    for (std::size_t i = 0; i < rows; ++i) {
      EXPECT_EQ(table.ids[i], "row" + std::to_string(i));
      for (std::size_t j = 0; j < width; ++j)
        worst = std::max(worst, std::abs(table.values[i][at + j] - e.values[i * width + j]));
    }
    EXPECT_LE(worst, 1e-5) << model << " " << e.output;
    at += width;
  }
  const Json report = read_json_file(dir / "report.json");
  ASSERT_EQ(report["outputs"].size(), want.size());
  EXPECT_EQ(report["outputs"][0]["name"], want[0].output);

  // JSONL: one field per output, an object of labels or an array, with the CSV's values.
  r = run_cli(run_args(model_dir, input, dir / "out.jsonl", {"--outputs", list}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(dir / "out.jsonl");
  std::string line;
  std::size_t i = 0;
  while (std::getline(in, line)) {
    ASSERT_LT(i, rows);
    const Json row = Json::parse(line);
    ASSERT_EQ(row.size(), 1 + want.size()) << line;
    std::size_t col = 0;
    for (const auto& e : want) {
      const Json& field = row.at(e.output);
      const std::size_t width = e.values.size() / rows;
      ASSERT_EQ(field.size(), width);
      for (std::size_t j = 0; j < width; ++j, ++col) {
        const Json& v = field.is_object() ? field.at(table.columns[col].substr(e.output.size() + 1))
                                          : field.at(j);
        EXPECT_DOUBLE_EQ(v.get<double>(), table.values[i][col]) << e.output << " " << j;
      }
      EXPECT_EQ(field.is_object(), e.output == "probs" || e.output == "logits");
    }
    ++i;
  }
  EXPECT_EQ(i, rows);

  // merge reads either layout back and writes the other: CSV -> JSONL gives the run's JSONL.
  r = run_cli({"merge", (dir / "out.csv").string(), "--output", (dir / "merged.jsonl").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto merged = testing::read_table(dir / "merged.jsonl");
  const auto jsonl = testing::read_table(dir / "out.jsonl");
  EXPECT_EQ(merged.columns, table.columns);
  EXPECT_EQ(jsonl.columns, table.columns);
  EXPECT_EQ(merged.ids, table.ids);
  EXPECT_EQ(testing::max_abs_difference(merged, table), 0.0);
  EXPECT_EQ(testing::max_abs_difference(jsonl, table), 0.0);
  r = run_cli({"merge", (dir / "out.jsonl").string(), "--output", (dir / "merged.csv").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream a(dir / "merged.csv"), b(dir / "out.csv");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}),
            std::string(std::istreambuf_iterator<char>(b), {}));
}

INSTANTIATE_TEST_SUITE_P(Models, Outputs,
                         ::testing::Values("bert_cls_single", "bert_cls_multi", "bert_regression",
                                           "roberta_cls", "xlmr_cls", "distilbert_cls",
                                           "bert_embed", "roberta_embed", "xlmr_embed_f16",
                                           "distilbert_embed_sinusoidal"),
                         [](const auto& info) { return info.param; });

// Chunked: each output's windows are reduced as its own one-output chunked run reduces them,
// and finished as it is (probs: the activation of the reduced logits; normalized: L2 of the
// reduced embedding). The first group is also held to the Python reference of that run.
struct ChunkedOutputs {
  std::string fixture, reference_case;
  std::vector<std::string> flags;  // the case's flags, as tests/fixtures/chunk/*/cases.json
  // Each output with the flags of the one-output run that computes it.
  std::vector<std::pair<std::string, std::vector<std::string>>> outputs;
};

TEST(OutputsChunked, EachGroupEqualsItsOneOutputChunkedRun) {
  const std::vector<ChunkedOutputs> cases = {
      {"bert_cls",
       "s0_mean_logits",
       {"--max-len", "32", "--long-input", "chunk", "--stride", "0", "--chunk-reduce", "mean"},
       {{"probs", {}},
        {"logits", {"--activation", "none"}},
        {"cls", {"--task", "embed", "--pooling", "cls", "--no-normalize"}},
        {"mean", {"--task", "embed", "--pooling", "mean", "--no-normalize"}}}},
      {"bert_cls",
       "s8_max_probs",
       {"--max-len", "32", "--long-input", "chunk", "--stride", "8", "--chunk-reduce", "max",
        "--chunk-values", "probs"},
       {{"probs", {}}, {"logits", {"--activation", "none"}}}},
      {"xlmr_embed",
       "s0_mean",
       {"--max-len", "32", "--long-input", "chunk", "--stride", "0", "--chunk-reduce", "mean",
        "--task", "embed"},
       {{"normalized", {"--normalize"}},
        {"max", {"--pooling", "max", "--no-normalize"}},
        {"mean", {"--pooling", "mean", "--no-normalize"}}}},
  };
  for (const auto& c : cases) {
    const Json meta = read_json_file(testing::fixture("chunk/" + c.fixture + "/cases.json"));
    const std::string model_dir = testing::fixture(meta["model"].get<std::string>()).string();
    const fs::path input = testing::fixture("chunk/" + c.fixture + "/input.csv");
    auto dir = testing::scratch_dir("outputs_chunked_" + c.fixture);
    std::string list;
    for (const auto& [name, flags] : c.outputs) list += (list.empty() ? "" : ",") + name;
    auto flags = c.flags;
    flags.insert(flags.end(), {"--outputs", list});
    auto r = run_cli(run_args(model_dir, input, dir / "all.csv", flags));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto all = testing::read_table(dir / "all.csv");
    std::size_t at = 0;
    for (std::size_t k = 0; k < c.outputs.size(); ++k) {
      const auto& [name, one_flags] = c.outputs[k];
      auto f = c.flags;
      f.insert(f.end(), one_flags.begin(), one_flags.end());
      r = run_cli(run_args(model_dir, input, dir / "one.csv", f));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const auto one = testing::read_table(dir / "one.csv");
      ASSERT_EQ(one.ids, all.ids);
      const std::size_t width = one.columns.size();
      double worst = 0;
      for (std::size_t i = 0; i < all.ids.size(); ++i)
        for (std::size_t j = 0; j < width; ++j)
          worst = std::max(worst, std::abs(all.values[i][at + j] - one.values[i][j]));
      // The same windows, the same kernels, the same reduce: the same floats.
      EXPECT_EQ(worst, 0.0) << c.fixture << " " << name;
      if (k == 0) {
        const auto ref = testing::read_table(
            testing::fixture(fmt::format("chunk/{}/expected_{}.csv", c.fixture, c.reference_case)));
        EXPECT_LE(testing::max_abs_difference(one, ref), 1e-5) << c.fixture << " " << name;
      }
      at += width;
    }
    EXPECT_EQ(at, all.columns.size());
  }
}

TEST(OutputsFlags, RefusedListsExitTwoNamingWhatIsOffered) {
  auto dir = testing::scratch_dir("outputs_flags");
  const auto input = testing::write_fixture_rows(dir, "bert_cls_single");
  const std::string cls = testing::fixture("models/bert_cls_single").string();
  struct Refused {
    std::vector<std::string> flags;
    std::string message;
  };
  const std::vector<Refused> refused = {
      {{"--outputs", "probs,normalized"},
       "'normalized' is not an output of --task classify (it offers probs, logits, cls, mean)"},
      {{"--outputs", "probs,probs"}, "'probs' is listed twice"},
      {{"--outputs", ""}, "'' is not an output"},
      {{"--outputs", "probs,"}, "'' is not an output"},
      {{"--task", "embed", "--outputs", "logits"},
       "'logits' is not an output of --task embed (it offers mean, cls, max, normalized)"},
  };
  for (const auto& c : refused) {
    auto r = run_cli(run_args(cls, input, dir / "out.csv", c.flags));
    EXPECT_EQ(r.exit_code, 2) << c.message;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "out.csv"));
  }
  // A resume with other outputs would mix rows of two layouts in one file: refused.
  auto r = run_cli(run_args(cls, input, dir / "out.csv",
                            {"--outputs", "probs", "--shards-dir", (dir / "shards").string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli(
      run_args(cls, input, dir / "out2.csv",
               {"--outputs", "probs,cls", "--shards-dir", (dir / "shards").string(), "--resume"}));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("outputs"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mcinfer
