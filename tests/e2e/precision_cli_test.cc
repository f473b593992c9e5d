// `--precision bf16` end to end: the accuracy gates against transformers' fp32 references (every
// classification fixture, a bf16 checkpoint, real all-MiniLM-L6-v2 on the 5,283-line tokenizer
// corpus), the choice `auto` makes with and without native bf16 (capped through oneDNN's
// ONEDNN_MAX_CPU_ISA), and the pre-run check with its bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/json.h"
#include "support/cli.h"
#include "support/cpu_features.h"
#include "support/fixture_rows.h"
#include "support/minilm.h"
#include "support/precision_gates.h"
#include "support/predictions.h"
#include "support/reference.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

// oneDNN's own cap: below avx512_core_bf16 it has no native bf16 dot products to run.
const std::string kNoBf16 = "ONEDNN_MAX_CPU_ISA=AVX512_CORE";
const std::string kGenericKernels = "MCINFER_MAX_ISA=generic";

// From cpuid, not from a run: if `auto` wrongly chose fp32 here, the test fails. Only what auto
// does needs the instructions; every other bf16 test runs emulated without them (NEED_BF16).
#define NEED_NATIVE_BF16() NEED_CPU(native_bf16(), "native bf16 (avx512_bf16 or AMX-BF16)")
// What the test setup's MCINFER_EMULATED_BF16=1 is turned off with, where a refusal is checked.
const std::string kNoEmulation = "MCINFER_EMULATED_BF16=0";

constexpr testing::ClassifierGate kBf16Classifier{0.01, 0.02};
constexpr testing::EmbeddingGate kBf16Embedding{0.999, 0.9999};

class Bf16Classifier : public ::testing::TestWithParam<std::string> {};

TEST_P(Bf16Classifier, WithinTheGatesOfTransformersFp32) {
  NEED_BF16();
  const std::string model = GetParam();
  auto dir = testing::scratch_dir("bf16_" + model);
  auto input = testing::write_fixture_rows(dir, model);
  testing::Reference ref(testing::fixture("models/" + model + "/reference.safetensors"));
  auto output = dir / "out.csv";
  auto r = run_cli({"run", testing::fixture("models/" + model).string(), "--input", input.string(),
                    "--output", output.string(), "--precision", "bf16", "--report",
                    (dir / "report.json").string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  testing::expect_classifier_gate(testing::read_table(output), ref.floats("probs"), model,
                                  kBf16Classifier);
  Json report = read_json_file(dir / "report.json");
  EXPECT_EQ(report["precision"], "bf16");
  // The default check compared every (fixture-sized) input row against fp32.
  ASSERT_TRUE(report["precision_check"].is_object()) << report.dump(2);
  EXPECT_GT(report["precision_check"]["rows"].get<int>(), 0);
  EXPECT_LE(report["precision_check"]["max_abs_diff"].get<double>(), 0.01);
}

INSTANTIATE_TEST_SUITE_P(Models, Bf16Classifier,
                         ::testing::Values("bert_cls_single", "bert_cls_multi", "bert_regression",
                                           "roberta_cls", "xlmr_cls", "distilbert_cls",
                                           "distilbert_cls_multi_relu", "tf5_mpnet_cls",
                                           "tf5_electra_cls", "tf5_camembert_cls",
                                           "tf5_deberta_cls", "tf5_deberta_multi",
                                           "tf5_deberta_regression", "tf5_modernbert_cls",
                                           "tf5_modernbert_mean_biases"),
                         [](const auto& info) { return info.param; });

class Bf16TextClassifier : public ::testing::TestWithParam<std::string> {};

// From text, through the real tokenizers, both schedules.
TEST_P(Bf16TextClassifier, WithinTheGatesOfTransformersFp32) {
  NEED_BF16();
  const fs::path dir = testing::fixture("text/" + GetParam());
  Json meta = read_json_file(dir / "reference.json");
  auto want_table = testing::read_table(dir / "expected.csv");
  std::vector<float> want;
  for (const auto& row : want_table.values) want.insert(want.end(), row.begin(), row.end());
  auto out_dir = testing::scratch_dir("bf16_text_" + GetParam());
  for (const char* schedule : {"dynamic", "static"}) {
    auto output = out_dir / "out.csv";
    std::vector<std::string> args = {
        "run",         dir.string(),    "--input",    (dir / "input.csv").string(),
        "--output",    output.string(), "--schedule", schedule,
        "--precision", "bf16",          "--quiet"};
    for (const auto& flag : meta["flags"]) args.push_back(flag.get<std::string>());
    auto r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto got = testing::read_table(output);
    ASSERT_EQ(got.ids, want_table.ids);
    testing::expect_classifier_gate(got, want, GetParam() + " " + schedule, kBf16Classifier);
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, Bf16TextClassifier,
                         ::testing::Values("bert_cls", "distilbert_cls", "roberta_cls",
                                           "xlmr_cls_json", "deberta_cls"),
                         [](const auto& info) { return info.param; });

// A checkpoint stored in bf16 runs in bf16 from its own bits; its fp32 twin (the reference was
// computed in float32 from the same rounded weights) bounds it like any other model.
TEST(Bf16Checkpoint, ComputesLikeItsFp32TwinWithinTheGates) {
  NEED_BF16();
  auto dir = testing::scratch_dir("bf16_checkpoint");
  auto input = testing::write_fixture_rows(dir, "bert_bf16");
  testing::Reference ref(testing::fixture("models/bert_bf16/reference.safetensors"));
  auto output = dir / "out.csv";
  auto r = run_cli({"run", testing::fixture("models/bert_bf16").string(), "--input", input.string(),
                    "--output", output.string(), "--precision", "bf16", "--task", "embed",
                    "--pooling", "mean", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  testing::expect_embedding_gate(testing::read_table(output), ref.floats("pooled_mean"),
                                 "bert_bf16", kBf16Embedding);
}

// Real weights on every line of the multilingual tokenizer corpus (5,283 lines, every script in
// it), against transformers fp32 (tools/gen_precision_reference.py).
TEST(Bf16MiniLM, EveryCorpusLineWithinTheGates) {
  MCINFER_NEED_MINILM();
  NEED_BF16();
  auto dir = testing::scratch_dir("bf16_minilm_corpus");
  auto input = testing::write_corpus_jsonl(dir);
  auto output = dir / "out.csv";
  auto r = run_cli({"run", testing::minilm_dir().string(), "--input", input.string(), "--output",
                    output.string(), "--precision", "bf16", "--task", "embed", "--pooling", "mean",
                    "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  testing::Reference ref(testing::fixture("minilm/corpus_reference.safetensors"));
  auto got = testing::read_table(output);
  ASSERT_EQ(got.values.size(), 5283u);
  testing::expect_embedding_gate(got, ref.floats("embeddings"), "all-MiniLM-L6-v2 corpus",
                                 kBf16Embedding);
}

// Without the instructions, bf16 is emulated: by the library on AVX-512 (oneDNN capped to
// avx512_core here, as on a CPU without avx512_bf16), by our kernels on AVX2 (gemm_avx2.h; both
// capped to AVX2 where the CPU has more). MCINFER_EMULATED_BF16=1 runs the bf16 path anyway so
// that its numbers are checked there — the same gates, the non-fused attention products (the
// fused kernels need the instructions). Without the variable it is refused.
TEST(Precision, EmulatedBf16WithoutTheInstructionsStaysWithinTheGates) {
  NEED_CPU(avx2, "AVX2 (bf16 is emulated by our kernels from AVX2, by the library from AVX-512)");
  struct Emulation {
    std::vector<std::string> caps;
    std::string says;
  };
  std::vector<Emulation> emulations = {
      {{"ONEDNN_MAX_CPU_ISA=AVX2", "MCINFER_MAX_ISA=avx2"}, "emulated on avx2 (ours)"}};
  if (testing::cpu_features().avx512)
    emulations.push_back({{kNoBf16}, "emulated by the GEMM library on avx512_core"});
  const std::string name = "bert_cls_multi";
  auto dir = testing::scratch_dir("precision_emulated_bf16");
  auto input = testing::write_fixture_rows(dir, name);
  const std::string model = testing::fixture("models/" + name).string();
  auto output = dir / "out.csv";
  const std::vector<std::string> args = {
      "run",           model,         "--input", input.string(), "--output",
      output.string(), "--precision", "bf16",    "--report",     (dir / "report.json").string()};
  for (const Emulation& e : emulations) {
    SCOPED_TRACE(e.says);
    fs::remove(output);
    std::vector<std::string> env = e.caps;
    env.push_back(kNoEmulation);
    auto refused = run_cli(args, "", env);
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    EXPECT_NE(refused.err.find("MCINFER_EMULATED_BF16=1 runs it emulated"), std::string::npos)
        << refused.err;
    EXPECT_FALSE(fs::exists(output));
    env.back() = "MCINFER_EMULATED_BF16=1";
    auto r = run_cli(args, "", env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(e.says), std::string::npos) << r.err;
    Json report = read_json_file(dir / "report.json");
    EXPECT_EQ(report["precision"], "bf16");
    ASSERT_TRUE(report["precision_check"].is_object()) << report.dump(2);
    // bf16 products, not f32 ones under another name: the check sees them differ from fp32.
    const double diff = report["precision_check"]["max_abs_diff"].get<double>();
    EXPECT_GT(diff, 1e-5);
    EXPECT_LE(diff, 0.01);
    testing::Reference ref(testing::fixture("models/" + name + "/reference.safetensors"));
    testing::expect_classifier_gate(testing::read_table(output), ref.floats("probs"), name,
                                    kBf16Classifier);
  }
}

// Without native bf16 (oneDNN capped below avx512_core_bf16, our kernels capped to the generic
// table): an explicit bf16 is refused with the missing instructions named, and auto runs fp32
// with exact parity on the capped paths.
TEST(Precision, WithoutNativeBf16AutoIsFp32AndBf16IsRefused) {
  auto dir = testing::scratch_dir("precision_no_bf16");
  auto input = testing::write_fixture_rows(dir, "bert_cls_single");
  const std::string model = testing::fixture("models/bert_cls_single").string();
  auto output = dir / "out.csv";
  auto refused = run_cli({"run", model, "--input", input.string(), "--output", output.string(),
                          "--precision", "bf16", "--quiet"},
                         "", {kNoBf16, kNoEmulation});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("avx512_bf16"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("amx_bf16"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(output));

  auto r = run_cli({"run", model, "--input", input.string(), "--output", output.string(),
                    "--report", (dir / "report.json").string()},
                   "", {kNoBf16, kGenericKernels});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("precision fp32 (auto: no native bf16"), std::string::npos) << r.err;
  Json report = read_json_file(dir / "report.json");
  EXPECT_EQ(report["precision"], "fp32");
  EXPECT_TRUE(report["precision_check"].is_null());
  const std::string device = report["device"];
  EXPECT_NE(device.find("generic kernels"), std::string::npos) << device;
  EXPECT_EQ(device.find("amx"), std::string::npos) << device;
  testing::Reference ref(testing::fixture("models/bert_cls_single/reference.safetensors"));
  auto got = testing::read_table(output);
  auto want = ref.floats("probs");
  const std::size_t dim = got.values.at(0).size();
  for (std::size_t i = 0; i < got.values.size(); ++i)
    for (std::size_t j = 0; j < dim; ++j) EXPECT_NEAR(got.values[i][j], want[i * dim + j], 1e-5);
}

TEST(Precision, AnUnknownIsaCapIsAClearError) {
  auto dir = testing::scratch_dir("precision_bad_cap");
  auto input = testing::write_fixture_rows(dir, "bert_cls_single");
  auto r = run_cli({"run", testing::fixture("models/bert_cls_single").string(), "--input",
                    input.string(), "--output", (dir / "out.csv").string()},
                   "", {"MCINFER_MAX_ISA=avx9000"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("MCINFER_MAX_ISA=avx9000"), std::string::npos) << r.err;
}

// On a bf16 CPU, auto picks bf16 and says why on its second line (the first says how the text is
// tokenised).
TEST(Precision, AutoPicksBf16AndSaysWhy) {
  NEED_NATIVE_BF16();
  auto dir = testing::scratch_dir("precision_auto");
  auto input = testing::write_fixture_rows(dir, "bert_cls_single");
  auto r = run_cli({"run", testing::fixture("models/bert_cls_single").string(), "--input",
                    input.string(), "--output", (dir / "out.csv").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::size_t second_line = r.err.find('\n') + 1;
  const std::string first = r.err.substr(second_line, r.err.find('\n', second_line) - second_line);
  EXPECT_NE(first.find("precision bf16 (auto; native: "), std::string::npos) << first;
  EXPECT_NE(first.find("--precision fp32 for exact transformers parity"), std::string::npos);
  EXPECT_NE(r.err.find("precision check: "), std::string::npos) << r.err;
}

// Bounds stop the run before anything is written (exit 4, the figures and the way out named).
TEST(Precision, CheckBoundsStopTheRunBeforeAnyOutput) {
  NEED_BF16();
  auto dir = testing::scratch_dir("precision_bounds");
  auto input = testing::write_fixture_rows(dir, "bert_cls_single");
  const std::string model = testing::fixture("models/bert_cls_single").string();
  auto output = dir / "out.csv";
  auto shards = dir / "shards";
  auto r = run_cli({"run", model, "--input", input.string(), "--output", output.string(),
                    "--precision", "bf16", "--check-precision", "5", "--min-cosine", "1",
                    "--shards-dir", shards.string(), "--quiet"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("precision check failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--precision fp32"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(output));
  EXPECT_FALSE(fs::exists(shards / "run.json"));

  // Agreement on argmax is met (tiny differences), so the same run with that bound goes through,
  // and the report carries the figures of the rows it checked.
  auto ok =
      run_cli({"run", model, "--input", input.string(), "--output", output.string(), "--precision",
               "bf16", "--check-precision", "3", "--min-agreement", "0.5", "--min-cosine", "0.99",
               "--report", (dir / "report.json").string(), "--quiet"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  Json check = read_json_file(dir / "report.json")["precision_check"];
  EXPECT_EQ(check["rows"], 3);
  EXPECT_EQ(check["precision"], "bf16");
  EXPECT_EQ(check["reference"], "fp32");
  EXPECT_GE(check["min_cosine"].get<double>(), 0.99);
  EXPECT_LE(check["min_cosine"].get<double>(), check["mean_cosine"].get<double>());
  EXPECT_GE(check["argmax_agreement"].get<double>(), 0.5);
}

// A bound the run cannot enforce is refused (exit 2) with the reason, before anything is read or
// written; none is dropped without a word (issue 30).
TEST(Precision, BoundsThatCannotBeEnforcedAreRefused) {
  auto dir = testing::scratch_dir("precision_unenforceable");
  auto input = testing::write_fixture_rows(dir, "bert_cls_single");
  const std::string cls = testing::fixture("models/bert_cls_single").string();
  const std::string embed = testing::fixture("models/bert_embed").string();
  auto embed_input = testing::write_fixture_rows(dir, "bert_embed");
  struct Case {
    std::string model;
    fs::path input;
    std::vector<std::string> flags;
    std::string reason;
  };
  const std::vector<Case> cases = {
      // NaN passes a range check written as two comparisons; it would never stop a run.
      {cls,
       input,
       {"--min-cosine", "nan"},
       "--min-cosine must be a number from -1 to 1, not 'nan'"},
      {cls,
       input,
       {"--min-agreement", "nan"},
       "--min-agreement must be a number from 0 to 1, not 'nan'"},
      {cls, input, {"--precision", "fp32", "--min-cosine", "0.999"}, "this run is fp32"},
      {cls, input, {"--precision", "fp32", "--min-agreement", "1"}, "this run is fp32"},
      {embed, embed_input, {"--min-agreement", "1"}, "an embedding run has neither"},
      {embed,
       embed_input,
       {"--precision", "int8", "--min-agreement", "1"},
       "an embedding run has neither"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.reason);
    std::vector<std::string> args = {
        "run", c.model, "--input", c.input.string(), "--output", (dir / "o.csv").string()};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(c.reason), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "o.csv"));
  }
}

// With the check turned off, a bound on a reduced-precision run cannot hold: refused.
TEST(Precision, BoundWithoutTheCheckIsRefused) {
  NEED_BF16();
  auto dir = testing::scratch_dir("precision_bound_no_check");
  auto input = testing::write_fixture_rows(dir, "bert_cls_single");
  auto r = run_cli({"run", testing::fixture("models/bert_cls_single").string(), "--input",
                    input.string(), "--output", (dir / "o.csv").string(), "--precision", "bf16",
                    "--check-precision", "0", "--min-cosine", "0.99999999"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--check-precision 0 turns the precision check off"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "o.csv"));
}

// auto that resolves to fp32 (here by capping the GEMM library below bf16) meets any bound by
// construction: it runs, and the report says so instead of dropping the bound silently. auto
// never chooses an emulated bf16, even where MCINFER_EMULATED_BF16=1 allows one.
TEST(Precision, AutoOnFp32SaysTheBoundHoldsByConstruction) {
  auto dir = testing::scratch_dir("precision_auto_fp32_bound");
  auto input = testing::write_fixture_rows(dir, "bert_cls_single");
  auto r = run_cli({"run", testing::fixture("models/bert_cls_single").string(), "--input",
                    input.string(), "--output", (dir / "o.csv").string(), "--min-cosine", "0.999",
                    "--report", (dir / "r.json").string(), "--quiet"},
                   "", {kNoBf16, "MCINFER_EMULATED_BF16=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json report = read_json_file(dir / "r.json");
  EXPECT_EQ(report["precision"], "fp32");
  ASSERT_FALSE(report["warnings"].empty());
  EXPECT_NE(report["warnings"].dump().find("--min-cosine met by construction"), std::string::npos)
      << report["warnings"].dump();
}

// The precision is part of what a resumed run must share with the interrupted one.
TEST(Precision, ResumeRefusesAnotherPrecision) {
  NEED_BF16();
  auto dir = testing::scratch_dir("precision_resume");
  auto input = testing::write_fixture_rows(dir, "bert_cls_single");
  const std::string model = testing::fixture("models/bert_cls_single").string();
  auto shards = dir / "shards";
  auto r = run_cli({"run", model, "--input", input.string(), "--output", (dir / "out.csv").string(),
                    "--precision", "fp32", "--shards-dir", shards.string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto again =
      run_cli({"run", model, "--input", input.string(), "--output", (dir / "out2.csv").string(),
               "--precision", "bf16", "--shards-dir", shards.string(), "--resume", "--quiet"});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("precision"), std::string::npos) << again.err;
  EXPECT_FALSE(fs::exists(dir / "out2.csv"));
}

}  // namespace
}  // namespace mcinfer
