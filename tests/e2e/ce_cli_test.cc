// Cross-encoders through the CLI, in each layout sentence-transformers has saved them in
// (tests/fixtures/ce, tools/gen_ce_fixtures.py): `run` with default flags gives
// CrossEncoder(dir).predict(pairs) — the Sigmoid of a one-label model whichever file records it,
// the logits of a three-label one —, --activation overrides it, inspect says which activation
// and why, and an activation class mcinfer does not implement is refused by file and field.
#include <gtest/gtest.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>

#include "core/json.h"
#include "support/cli.h"
#include "support/pjrt.h"
#include "support/predictions.h"
#include "support/reference.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

// fp32 against predict(): what the engine achieves is ~5e-7.
constexpr double kTolerance = 1e-5;

fs::path ce(const std::string& name) { return testing::fixture("ce/" + name); }

std::vector<std::string> run_args(const fs::path& dir, const fs::path& output,
                                  std::vector<std::string> extra = {}, const fs::path& input = {}) {
  std::vector<std::string> a = {"run",
                                dir.string(),
                                "--input",
                                (input.empty() ? dir / "input.csv" : input).string(),
                                "--text-pair-col",
                                "pair",
                                "--output",
                                output.string(),
                                "--precision",
                                "fp32",
                                "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// The largest difference to `want` ([rows, labels] in row order), with the ids p00, p01, ...;
// `skip`: rows left out.
double worst_difference(const fs::path& output, const std::vector<float>& want,
                        const std::vector<std::string>& skip = {}) {
  const testing::Table got = testing::read_table(output);
  EXPECT_FALSE(got.ids.empty());
  const std::size_t dim = got.columns.size();
  EXPECT_EQ(got.ids.size() * dim, want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.ids.size() && (i + 1) * dim <= want.size(); ++i) {
    EXPECT_EQ(got.ids[i], fmt::format("p{:02d}", i));
    if (std::find(skip.begin(), skip.end(), got.ids[i]) != skip.end()) continue;
    for (std::size_t j = 0; j < dim; ++j)
      worst = std::max(worst, std::abs(got.values[i][j] - want[i * dim + j]));
  }
  return worst;
}

class CeCli : public ::testing::TestWithParam<std::string> {};

// Default flags: predict()'s scores, whichever layout names the activation (the pre-5.4 ones
// gave the raw logit before mcinfer read them; 5.4's was refused).
TEST_P(CeCli, DefaultFlagsGivePredict) {
  const fs::path dir = ce(GetParam());
  const testing::Reference ref(dir / "reference.safetensors");
  const auto out = testing::scratch_dir("ce_cli_" + GetParam()) / "o.csv";
  auto r = run_cli(run_args(dir, out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(worst_difference(out, ref.floats("scores")), kTolerance);
  const Json meta = read_json_file(dir / "reference.json");
  EXPECT_EQ(testing::read_table(out).columns.size(), meta["labels"].size());
}

INSTANTIATE_TEST_SUITE_P(Layouts, CeCli,
                         ::testing::Values("ce6_bert_sigmoid", "ce6_bert_nli3", "ce53_bert_sigmoid",
                                           "ce53_bert_nli3", "ce33_bert_sigmoid", "ce33_bert_nli3",
                                           // bge-reranker-v2-m3's and gte-reranker-modernbert's
                                           // families
                                           "ce6_xlmr_sigmoid", "ce6_modernbert_sigmoid"),
                         [](const auto& info) { return info.param; });

// --backend pjrt (XLA's CPU plugin): fp32 gives predict() too; bf16 (GEMMs in bf16 on the
// device) stays close, with the gate's figures for the score column in the report. Every pair in
// one batch on one device (a static schedule of 64-row batches), so that each precision compiles
// one program; a one-label Sigmoid reranker (XLM-R, bge-reranker-v2-m3's family) and a
// three-label NLI model.
class CeCliPjrt : public ::testing::TestWithParam<std::string> {};

TEST_P(CeCliPjrt, GivesPredict) {
  MCINFER_NEED_PJRT_CPU();
  const fs::path dir = ce(GetParam());
  const testing::Reference ref(dir / "reference.safetensors");
  const auto scratch = testing::scratch_dir("ce_cli_pjrt_" + GetParam());
  const std::vector<std::string> pjrt = {
      "--backend",    "pjrt", "--plugin",   testing::pjrt_cpu_plugin(),
      "--devices",    "1",    "--schedule", "static",
      "--batch-size", "64"};
  auto r = run_cli(run_args(dir, scratch / "fp32.csv", pjrt));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(worst_difference(scratch / "fp32.csv", ref.floats("scores")), kTolerance);
  std::vector<std::string> a = run_args(dir, scratch / "bf16.csv", pjrt);
  *(std::find(a.begin(), a.end(), "--precision") + 1) = "bf16";
  a.insert(a.end(), {"--check-precision", "12", "--report", (scratch / "r.json").string()});
  r = run_cli(a);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double bf16 = worst_difference(scratch / "bf16.csv", ref.floats("scores"));
  EXPECT_GT(bf16, kTolerance) << "no different from fp32: did bf16 run?";
  EXPECT_LT(bf16, 0.05);
  const Json check = read_json_file(scratch / "r.json")["precision_check"];
  EXPECT_EQ(check["precision"], "bf16");
  EXPECT_GT(check["min_cosine"].get<double>(), 0.99) << check.dump();
}

INSTANTIATE_TEST_SUITE_P(Families, CeCliPjrt,
                         ::testing::Values("ce6_xlmr_sigmoid", "ce6_bert_nli3"),
                         [](const auto& info) { return info.param; });

// The scores differ from the logits by far more than the tolerance (else the test above could
// not fail), and --activation none gives the logits.
TEST(CeCliFlags, ActivationNoneGivesTheLogits) {
  const auto dir = testing::scratch_dir("ce_cli_none");
  for (const char* name : {"ce6_bert_sigmoid", "ce53_bert_sigmoid", "ce33_bert_sigmoid"}) {
    SCOPED_TRACE(name);
    const testing::Reference ref(ce(name) / "reference.safetensors");
    const auto out = dir / (std::string(name) + ".csv");
    auto r = run_cli(run_args(ce(name), out, {"--activation", "none"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_LE(worst_difference(out, ref.floats("logits")), kTolerance);
    EXPECT_GT(worst_difference(out, ref.floats("scores")), 0.1);
  }
}

// No marker: a plain transformers classifier (one label: regression, the logit), though
// CrossEncoder.predict applies a Sigmoid that nothing in the directory records.
TEST(CeCliFlags, WithoutAMarkerAPlainClassifier) {
  const fs::path model = ce("ce33_bert_no_marker");
  const testing::Reference ref(model / "reference.safetensors");
  const auto dir = testing::scratch_dir("ce_cli_no_marker");
  auto r = run_cli(run_args(model, dir / "o.csv"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(worst_difference(dir / "o.csv", ref.floats("logits")), kTolerance);
  r = run_cli(run_args(model, dir / "sigmoid.csv", {"--activation", "sigmoid"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(worst_difference(dir / "sigmoid.csv", ref.floats("scores")), kTolerance);
}

// The pairs from JSONL, as from CSV.
TEST(CeCliFlags, PairsFromJsonl) {
  const fs::path model = ce("ce53_bert_nli3");
  const auto dir = testing::scratch_dir("ce_cli_jsonl");
  std::ifstream csv(model / "input.csv");
  std::ofstream jsonl(dir / "input.jsonl");
  std::string line;
  std::getline(csv, line);  // "id","text","pair": every field quoted, none holds '","'
  while (std::getline(csv, line)) {
    const std::size_t a = line.find("\",\""), b = line.find("\",\"", a + 3);
    ASSERT_NE(b, std::string::npos) << line;
    jsonl << Json{{"id", line.substr(1, a - 1)},
                  {"text", line.substr(a + 3, b - a - 3)},
                  {"pair", line.substr(b + 3, line.size() - b - 4)}}
                 .dump()
          << "\n";
  }
  jsonl.close();
  auto r = run_cli(run_args(model, dir / "o.csv", {}, dir / "input.jsonl"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const testing::Reference ref(model / "reference.safetensors");
  EXPECT_LE(worst_difference(dir / "o.csv", ref.floats("scores")), kTolerance);
}

// A chunked run applies the cross-encoder's activation after reducing a row's windows: the rows
// of one window give predict()'s scores, the two longer than 64 tokens a probability.
TEST(CeCliFlags, ChunkedRunAppliesTheActivation) {
  const fs::path model = ce("ce53_bert_sigmoid");
  const auto dir = testing::scratch_dir("ce_cli_chunk");
  auto r = run_cli(run_args(model, dir / "o.csv", {"--long-input", "chunk"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const testing::Reference ref(model / "reference.safetensors");
  EXPECT_LE(worst_difference(dir / "o.csv", ref.floats("scores"), {"p09", "p10"}), kTolerance);
  const testing::Table got = testing::read_table(dir / "o.csv");
  for (std::size_t row : {9, 10}) {
    EXPECT_GT(got.values.at(row)[0], 0.0);
    EXPECT_LT(got.values.at(row)[0], 1.0);
  }
}

// A reranker's one score per row: the precision gate compares the rows' score column (each row's
// own cosine would be 1) and the order the rows are ranked in. int8 and (emulated where the CPU
// lacks it) bf16 stay within the gates; a bound the column's cosine misses stops the run, which a
// per-row cosine of 1 would have let through.
TEST(CeCliPrecision, TheGateComparesTheScoreColumnAndItsOrder) {
  const fs::path model = ce("ce6_modernbert_sigmoid");
  auto dir = testing::scratch_dir("ce_cli_precision");
  // run_args with another precision and the progress lines kept.
  auto args = [&](const std::string& precision, const fs::path& out,
                  std::vector<std::string> extra) {
    std::vector<std::string> a = run_args(model, out, std::move(extra));
    const auto flag = std::find(a.begin(), a.end(), "--precision");
    *(flag + 1) = precision;
    a.erase(std::find(a.begin(), a.end(), "--quiet"));
    return a;
  };
  for (const char* precision : {"int8", "bf16"}) {
    SCOPED_TRACE(precision);
    auto r = run_cli(args(precision, dir / "o.csv",
                          {"--check-precision", "12", "--min-agreement", "1", "--report",
                           (dir / "r.json").string()}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Json check = read_json_file(dir / "r.json")["precision_check"];
    EXPECT_EQ(check["rank_agreement"].get<double>(), 1.0) << check.dump();
    EXPECT_LT(check["min_cosine"].get<double>(), 1.0 - 1e-7) << check.dump();
    EXPECT_GT(check["min_cosine"].get<double>(), 0.999) << check.dump();
    EXPECT_NE(r.err.find("cosine of the score column"), std::string::npos) << r.err;
  }
  auto r = run_cli(
      args("int8", dir / "strict.csv", {"--check-precision", "12", "--min-cosine", "0.9999999"}));
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("below --min-cosine 0.9999999"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "strict.csv"));
}

TEST(CeCliInspect, SaysTheActivationAndWhy) {
  struct Case {
    std::string name, activation, source;
  };
  const std::vector<Case> cases = {
      {"ce6_bert_sigmoid", "sigmoid",
       "config_sentence_transformers.json: activation_fn torch.nn.modules.activation.Sigmoid"},
      {"ce53_bert_nli3", "none",
       "config.json: sentence_transformers.activation_fn torch.nn.modules.linear.Identity"},
      {"ce33_bert_sigmoid", "sigmoid",
       "config.json: sbert_ce_default_activation_function torch.nn.modules.activation.Sigmoid"},
      {"ce33_bert_no_marker", "none", "config.json: problem_type regression"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = run_cli({"inspect", ce(c.name).string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string line = fmt::format("activation       {} ({})\n", c.activation, c.source);
    EXPECT_NE(r.out.find(line), std::string::npos) << line << r.out;
    r = run_cli({"inspect", ce(c.name).string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Json j = Json::parse(r.out);
    EXPECT_EQ(j["task"], "classify");
    EXPECT_EQ(j["activation"]["value"], c.activation);
    EXPECT_EQ(j["activation"]["source"], c.source);
  }
  auto r = run_cli({"inspect", ce("ce6_bert_sigmoid").string()});
  EXPECT_NE(r.out.find("task             classify (sentence_bert_config.json: transformer_task "
                       "'sequence-classification': a sentence-transformers CrossEncoder)"),
            std::string::npos)
      << r.out;
  // sentence-transformers' own default when no file names one.
  const fs::path model = testing::scratch_dir("ce_cli_default") / "ce6_bert_nli3";
  fs::copy(ce("ce6_bert_nli3"), model, fs::copy_options::recursive);
  Json st = read_json_file(model / "config_sentence_transformers.json");
  st["activation_fn"] = nullptr;
  std::ofstream(model / "config_sentence_transformers.json", std::ios::trunc) << st.dump(2);
  r = run_cli({"inspect", model.string()});
  EXPECT_NE(r.out.find(
                "activation       none (sentence-transformers' default for 3 labels (Identity))\n"),
            std::string::npos)
      << r.out;
}

// An activation class mcinfer does not implement: refused by file, field and class before any
// row is computed, by run and inspect; --activation replaces it.
TEST(CeCliRefusals, UnknownActivationClassIsRefusedByName) {
  const auto scratch = testing::scratch_dir("ce_cli_unknown");
  struct Case {
    std::string name, file;
    std::vector<std::string> path;  // of the field in the file
  };
  const std::vector<Case> cases = {
      {"ce6_bert_sigmoid", "config_sentence_transformers.json", {"activation_fn"}},
      {"ce53_bert_sigmoid", "config.json", {"sentence_transformers", "activation_fn"}},
      {"ce33_bert_sigmoid", "config.json", {"sbert_ce_default_activation_function"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path model = scratch / c.name;
    fs::copy(ce(c.name), model, fs::copy_options::recursive);
    Json j = read_json_file(model / c.file);
    Json* field = &j;
    for (const auto& key : c.path) field = &(*field)[key];
    *field = "torch.nn.modules.activation.Softsign";
    std::ofstream(model / c.file, std::ios::trunc) << j.dump(2);
    const std::string message = fmt::format(
        "{}: field '{}': activation 'torch.nn.modules.activation.Softsign' is not one "
        "mcinfer implements",
        (model / c.file).string(), fmt::join(c.path, "."));
    const fs::path out = scratch / (c.name + ".csv");
    auto r = run_cli(run_args(model, out));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
    r = run_cli({"inspect", model.string()});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    r = run_cli(run_args(model, out, {"--activation", "none"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const testing::Reference ref(model / "reference.safetensors");
    EXPECT_LE(worst_difference(out, ref.floats("logits")), kTolerance);
  }
}

}  // namespace
}  // namespace mcinfer
