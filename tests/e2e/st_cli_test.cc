// sentence-transformers model directories through the CLI, as a user runs them: with no flag,
// `mcinfer run` gives what SentenceTransformer(dir).encode(texts) gave (tests/fixtures/st, written
// by tools/gen_st_fixtures.py: CLS, max, mean_sqrt_len and all pooling modes, Dense layers,
// Normalize), every value within an absolute tolerance; flags override the modules; `inspect`
// says what is applied and where it comes from; --resume refuses a different resolved plan.
#include <gtest/gtest.h>

#include <fstream>

#include "core/json.h"
#include "support/cli.h"
#include "support/predictions.h"
#include "support/reference.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

constexpr double kTolerance = 1e-5;

struct Expected {
  std::vector<float> values;  // [rows, dim]
  std::size_t dim = 0;
};

Expected expected(const std::string& name) {
  testing::Reference ref(testing::fixture("st/" + name + "/reference.safetensors"));
  Expected e;
  e.values = ref.floats("embeddings");
  e.dim = static_cast<std::size_t>(ref.shape("embeddings")[1]);
  return e;
}

std::vector<std::string> run_args(const std::string& name, const fs::path& output,
                                  std::vector<std::string> extra = {}) {
  const fs::path dir = testing::fixture("st/" + name);
  std::vector<std::string> a = {
      "run", dir.string(), "--input", (dir / "input.csv").string(), "--output", output.string(),
      "--quiet",
      // encode() per value at 1e-5: fp32 (bf16 is bounded against fp32 in precision_cli_test).
      "--precision", "fp32"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// The largest |got - want| over every value, after checking ids and columns.
double worst_difference(const testing::Table& got, const Expected& want, bool renormalize = false) {
  EXPECT_EQ(got.columns.size(), want.dim);
  for (std::size_t j = 0; j < got.columns.size(); ++j)
    EXPECT_EQ(got.columns[j], fmt::format("e{}", j));
  EXPECT_EQ(got.ids.size() * want.dim, want.values.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.ids.size() && (i + 1) * want.dim <= want.values.size(); ++i) {
    EXPECT_EQ(got.ids[i], fmt::format("t{:02d}", i));
    double norm = 0;
    for (double v : got.values[i]) norm += v * v;
    const double scale = renormalize ? 1.0 / std::sqrt(norm) : 1.0;
    for (std::size_t j = 0; j < want.dim; ++j)
      worst = std::max(worst, std::abs(got.values[i][j] * scale - want.values[i * want.dim + j]));
  }
  return worst;
}

class StCli : public ::testing::TestWithParam<std::string> {};

TEST_P(StCli, RunWithNoFlagGivesEncode) {
  const std::string name = GetParam();
  auto dir = testing::scratch_dir("st_cli_" + name);
  const Expected want = expected(name);
  auto out = dir / "out.csv";
  auto r = run_cli(run_args(name, out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(worst_difference(testing::read_table(out), want), kTolerance);

  // Two replicas, the static schedule and JSONL output change nothing.
  auto jsonl = dir / "out.jsonl";
  r = run_cli(
      run_args(name, jsonl, {"--replicas", "2", "--schedule", "static", "--batch-size", "3"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(jsonl);
  std::string line;
  std::size_t row = 0;
  while (std::getline(in, line)) {
    Json j = Json::parse(line);
    EXPECT_EQ(j["id"], fmt::format("t{:02d}", row));
    ASSERT_EQ(j["embedding"].size(), want.dim);
    for (std::size_t k = 0; k < want.dim; ++k)
      EXPECT_NEAR(j["embedding"][k].get<double>(), want.values[row * want.dim + k], kTolerance);
    ++row;
  }
  EXPECT_EQ(row * want.dim, want.values.size());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, StCli,
                         ::testing::Values("bert_cls_dense", "bert_max", "roberta_meansqrt_dense2",
                                           "bert_all_modes", "roberta_prompts_cls_mean"),
                         [](const auto& info) { return info.param; });

TEST(StCliFlags, NormalizeCanBeTurnedOffAndPoolingOverridden) {
  auto dir = testing::scratch_dir("st_cli_flags");
  const Expected want = expected("bert_cls_dense");
  // Without Normalize: the same directions (encode's output is normalize(Dense(cls))), other norms.
  for (const char* flag : {"--no-normalize", "--normalize=false"}) {
    auto out = dir / "raw.csv";
    auto r = run_cli(run_args("bert_cls_dense", out, {flag}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto table = testing::read_table(out);
    EXPECT_LE(worst_difference(table, want, /*renormalize=*/true), kTolerance) << flag;
    EXPECT_GT(worst_difference(table, want), 0.01) << flag << ": still normalised";
  }
  auto same = dir / "same.csv";
  auto r = run_cli(run_args("bert_cls_dense", same, {"--normalize", "--pooling", "cls"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(worst_difference(testing::read_table(same), want), kTolerance);
  // Another pooling mode through the same Dense: different values, same width.
  r = run_cli(run_args("bert_cls_dense", same, {"--pooling", "max"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(worst_difference(testing::read_table(same), want), 0.01);
  // A Dense made for six concatenated modes cannot take one: refused, naming the module.
  r = run_cli(run_args("bert_all_modes", dir / "no.csv", {"--pooling", "mean"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("2_Dense/config.json: field 'in_features': 96"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "no.csv"));
  r = run_cli(run_args("bert_cls_dense", dir / "no.csv", {"--normalize=maybe"}));
  EXPECT_EQ(r.exit_code, 2);
}

TEST(StCliInspect, ShowsWhatIsAppliedAndWhere) {
  const std::string model = testing::fixture("st/bert_cls_dense").string();
  auto r = run_cli({"inspect", model});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line :
       {"task             embed (modules.json)\n", "pooling          cls (1_Pooling/config.json)\n",
        "dense            2_Dense: 16 -> 8, tanh (2_Dense/config.json)\n",
        "normalize        yes (modules.json: 3_Normalize)\n",
        "embedding        8 values per row"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  }
  r = run_cli({"inspect", model, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["task"], "embed");
  EXPECT_EQ(j["embedding"]["pooling"]["value"], "cls");
  EXPECT_EQ(j["embedding"]["pooling"]["source"], "1_Pooling/config.json");
  EXPECT_EQ(j["embedding"]["normalize"]["value"], true);
  EXPECT_EQ(j["embedding"]["normalize"]["source"], "modules.json: 3_Normalize");
  EXPECT_EQ(j["embedding"]["dense"][0]["out_features"], 8);
  EXPECT_EQ(j["embedding"]["dense"][0]["activation"], "tanh");
  EXPECT_EQ(j["embedding"]["output_dim"], 8);
  EXPECT_EQ(j["max_len"], 24);

  r = run_cli({"inspect", testing::fixture("st/bert_all_modes").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pooling          cls+max+mean+mean_sqrt_len+weightedmean+lasttoken "
                       "(1_Pooling/config.json)"),
            std::string::npos)
      << r.out;
}

// A copy of a fixture, to change.
fs::path copy_fixture(const std::string& name, const fs::path& scratch) {
  fs::path dir = scratch / name;
  fs::copy(testing::fixture("st/" + name), dir, fs::copy_options::recursive);
  return dir;
}

TEST(StCliRefusals, UnknownModuleIsNamed) {
  auto scratch = testing::scratch_dir("st_cli_refuse");
  const fs::path model = copy_fixture("bert_max", scratch);
  std::string modules = testing::read_file(model / "modules.json");
  modules.replace(modules.find("models.Pooling"), 14, "models.WordWeights");
  std::ofstream(model / "modules.json", std::ios::trunc) << modules;
  const std::vector<std::vector<std::string>> commands = {
      {"run", model.string(), "--input", (model / "input.csv").string(), "--output",
       (scratch / "o.csv").string()},
      {"inspect", model.string()}};
  for (const auto& a : commands) {
    auto r = run_cli(a);
    EXPECT_EQ(r.exit_code, 1) << a[0];
    EXPECT_NE(r.err.find("modules.json: module 1"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("'sentence_transformers.models.WordWeights'"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(scratch / "o.csv"));
}

TEST(StCliResume, RefusesADifferentPlanOrDenseWeights) {
  auto scratch = testing::scratch_dir("st_cli_resume");
  const fs::path model = copy_fixture("bert_cls_dense", scratch);
  auto base = [&](const fs::path& shards, std::vector<std::string> extra) {
    std::vector<std::string> a = {"run",
                                  model.string(),
                                  "--input",
                                  (model / "input.csv").string(),
                                  "--output",
                                  (scratch / "out.csv").string(),
                                  "--quiet",
                                  "--batch-tokens",
                                  "16",
                                  "--replicas",
                                  "1",
                                  "--shards-dir",
                                  shards.string()};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  testing::CliOptions crash;
  crash.env = {"MCINFER_FAULT=shard-write:3"};
  const fs::path shards = scratch / "shards";
  ASSERT_EQ(run_cli(base(shards, {}), crash).exit_code, 137);
  auto r = run_cli(base(shards, {"--resume", "--no-normalize"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("flags.normalize: was true, now false"), std::string::npos) << r.err;
  r = run_cli(base(shards, {"--resume", "--pooling", "mean"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("flags.pooling: was \"cls\", now \"mean\""), std::string::npos) << r.err;
  // Other Dense weights, same configuration: the module's files are part of the fingerprint.
  {
    std::fstream f(model / "2_Dense/model.safetensors",
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-4, std::ios::end);
    f.write("\x01\x02\x03\x04", 4);
  }
  r = run_cli(base(shards, {"--resume"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("model.2_Dense/model.safetensors"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mcinfer
