// What ModelDir reads from a model directory and where each fact comes from: sentence-transformers
// modules as SentenceTransformer.save writes them (tests/fixtures/st), cross-encoders in each
// layout CrossEncoder.save has written (tests/fixtures/ce), plain checkpoints
// (tests/fixtures/models), tokenizer-only directories as AutoTokenizer.save_pretrained writes them
// (tests/fixtures/tokenizer_dirs), and every refusal naming its file and field.
#include "model/model_dir.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <tuple>

#include "core/error.h"
#include "core/json.h"
#include "support/paths.h"

namespace mcinfer::model {
namespace {

namespace fs = std::filesystem;

// The message of the Error that `f` throws ("" when it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(ModelDir, SentenceTransformersModulesInOrder) {
  const fs::path dir = testing::fixture("st/bert_cls_dense");
  ModelDir m = ModelDir::open(dir);
  ASSERT_TRUE(m.sentence_transformers().has_value());
  const StModules& st = *m.sentence_transformers();
  ASSERT_EQ(st.modules.size(), 4u);
  EXPECT_EQ(st.modules[0].kind, StModule::Kind::kTransformer);
  EXPECT_EQ(st.modules[1].kind, StModule::Kind::kPooling);
  EXPECT_EQ(st.modules[2].kind, StModule::Kind::kDense);
  EXPECT_EQ(st.modules[3].kind, StModule::Kind::kNormalize);
  EXPECT_EQ(st.pooling.modes, PoolingModes(Pooling::kCls));
  EXPECT_EQ(st.pooling.embedding_dimension, 16);
  EXPECT_EQ(st.pooling.source, "1_Pooling/config.json");
  ASSERT_EQ(st.dense.size(), 1u);
  EXPECT_EQ(st.dense[0].in_features, 16);
  EXPECT_EQ(st.dense[0].out_features, 8);
  EXPECT_TRUE(st.dense[0].bias);
  EXPECT_EQ(st.dense[0].activation, DenseActivation::kTanh);
  EXPECT_EQ(st.dense[0].activation_function, "torch.nn.modules.activation.Tanh");
  EXPECT_EQ(st.dense[0].weights, "2_Dense/model.safetensors");
  EXPECT_EQ(st.normalize, "modules.json: 3_Normalize");
  EXPECT_TRUE(m.strips_text());
  EXPECT_EQ(m.module_dirs(), (std::vector<fs::path>{dir / "1_Pooling", dir / "2_Dense"}));

  auto task = m.default_task();
  EXPECT_EQ(task.value, TaskKind::kEmbed);
  EXPECT_EQ(task.source, "modules.json");
  EmbeddingPlan plan = m.embedding_plan(std::nullopt, std::nullopt);
  EXPECT_EQ(plan.pooling.value.name(), "cls");
  EXPECT_EQ(plan.pooling.source, "1_Pooling/config.json");
  EXPECT_TRUE(plan.normalize.value);
  EXPECT_EQ(plan.normalize.source, "modules.json: 3_Normalize");
  EXPECT_EQ(plan.output_dim, 8);
  auto len = m.max_len(std::nullopt, std::nullopt);
  EXPECT_EQ(len.value, 24u);
  EXPECT_EQ(len.source, "sentence_bert_config.json: max_seq_length");
}

TEST(ModelDir, FlagsOverrideTheModules) {
  ModelDir m = ModelDir::open(testing::fixture("st/bert_cls_dense"));
  EmbeddingPlan plan = m.embedding_plan(PoolingModes(Pooling::kMax), false);
  EXPECT_EQ(plan.pooling.value.name(), "max");
  EXPECT_EQ(plan.pooling.source, "--pooling");
  EXPECT_FALSE(plan.normalize.value);
  EXPECT_EQ(plan.normalize.source, "--no-normalize");
  EXPECT_EQ(plan.dense.size(), 1u);  // Dense stays: it is part of the model
  EXPECT_EQ(plan.output_dim, 8);

  // Dense 96 -> 5 after six concatenated modes cannot take one mode's 16 values.
  ModelDir all = ModelDir::open(testing::fixture("st/bert_all_modes"));
  EXPECT_EQ(all.embedding_plan(std::nullopt, std::nullopt).pooling.value.name(),
            "cls+max+mean+mean_sqrt_len+weightedmean+lasttoken");
  const std::string err =
      error_of([&] { all.embedding_plan(PoolingModes(Pooling::kMean), std::nullopt); });
  EXPECT_NE(err.find("2_Dense/config.json: field 'in_features': 96"), std::string::npos) << err;
  EXPECT_NE(err.find("--pooling"), std::string::npos) << err;
}

TEST(ModelDir, PlainCheckpointDefaults) {
  ModelDir embed = ModelDir::open(testing::fixture("models/bert_embed"));
  EXPECT_FALSE(embed.sentence_transformers().has_value());
  EXPECT_FALSE(embed.strips_text());
  EXPECT_EQ(embed.default_task().value, TaskKind::kEmbed);
  EmbeddingPlan plan = embed.embedding_plan(std::nullopt, std::nullopt);
  EXPECT_EQ(plan.pooling.value, PoolingModes(Pooling::kMean));
  EXPECT_EQ(plan.pooling.source, "default");
  EXPECT_FALSE(plan.normalize.value);
  EXPECT_EQ(plan.output_dim, embed.config().hidden_size);
  EXPECT_TRUE(embed.embedding_plan(std::nullopt, true).normalize.value);

  ModelDir cls = ModelDir::open(testing::fixture("models/bert_cls_single"));
  EXPECT_EQ(cls.default_task().value, TaskKind::kClassify);
  // max_len: the position table, lowered by the tokenizer's limit; --max-len checked against it.
  const auto table = static_cast<std::size_t>(cls.config().max_sequence_length());
  EXPECT_EQ(cls.max_len(std::nullopt, std::nullopt).value, table);
  EXPECT_EQ(cls.max_len(std::nullopt, std::nullopt).source, "config.json: max_position_embeddings");
  EXPECT_EQ(cls.max_len(table - 1, std::nullopt).value, table - 1);
  EXPECT_EQ(cls.max_len(table + 5, std::nullopt).value, table);
  EXPECT_EQ(cls.max_len(table - 1, std::size_t{3}).value, 3u);
  EXPECT_THROW(cls.max_len(std::nullopt, table + 1), UsageError);
  EXPECT_THROW(cls.max_len(std::nullopt, std::size_t{1}), UsageError);
}

TEST(ModelDir, TokenizerDirectoriesNeedNoDimensions) {
  ModelDir bare = ModelDir::open(testing::fixture("tokenizer_dirs/wordpiece_no_config"),
                                 ModelDir::Use::kTokenize);
  EXPECT_FALSE(bare.has_config());
  EXPECT_FALSE(bare.model_type().has_value());
  EXPECT_EQ(bare.tokenizer_files(), (std::vector<std::string>{"tokenizer.json", "vocab.txt"}));
  EXPECT_EQ(bare.max_len(std::size_t{512}, std::nullopt).value, 512u);
  EXPECT_EQ(bare.max_len(std::nullopt, std::nullopt).value, 0u);  // no limit known
  EXPECT_EQ(bare.max_len(std::nullopt, std::size_t{7}).value, 7u);
  EXPECT_NE(error_of([&] { bare.config(); }).find("no config.json"), std::string::npos);

  const fs::path partial = testing::fixture("tokenizer_dirs/bpe_no_hidden_size");
  ModelDir tok = ModelDir::open(partial, ModelDir::Use::kTokenize);
  EXPECT_FALSE(tok.has_config());
  EXPECT_EQ(tok.model_type(), "roberta");
  // Running needs the whole config, and says which field is missing.
  std::string err = error_of([&] { ModelDir::open(partial); });
  EXPECT_NE(err.find("config.json: field 'hidden_size': missing"), std::string::npos) << err;
  err = error_of([&] { tok.config(); });
  EXPECT_NE(err.find("field 'hidden_size': missing"), std::string::npos) << err;
  err = error_of([&] {
    ModelDir::open(testing::fixture("tokenizer_dirs/wordpiece_no_config"), ModelDir::Use::kRun);
  });
  EXPECT_NE(err.find("no config.json"), std::string::npos) << err;

  ModelDir type_only = ModelDir::open(testing::fixture("tokenizer_dirs/wordpiece_model_type_only"),
                                      ModelDir::Use::kTokenize);
  EXPECT_EQ(type_only.model_type(), "bert");
  // A whole config is read whole when tokenizing too (and limits the length as for run).
  ModelDir whole = ModelDir::open(testing::fixture("st/bert_max"), ModelDir::Use::kTokenize);
  EXPECT_TRUE(whole.has_config());
  EXPECT_EQ(whole.max_len(std::nullopt, std::nullopt).value, 24u);
}

// A copy of an st fixture to break in one place.
// A copy of tests/fixtures/<folder>/<name> to change.
fs::path copy_fixture(const std::string& name, const std::string& scratch,
                      const std::string& folder = "st") {
  fs::path dir = testing::scratch_dir(scratch) / name;
  fs::copy(testing::fixture(folder + "/" + name), dir, fs::copy_options::recursive);
  return dir;
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

void replace_in(const fs::path& path, const std::string& from, const std::string& to) {
  std::string text = testing::read_file(path);
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << path << ": " << from;
  text.replace(at, from.size(), to);
  write(path, text);
}

TEST(ModelDir, RefusalsNameTheModuleAndFile) {
  struct Case {
    std::string what;
    std::function<void(const fs::path&)> change;
    std::vector<std::string> expected;  // substrings of the message
  };
  const std::vector<Case> cases = {
      {"unknown module type",
       [](const fs::path& d) {
         replace_in(d / "modules.json", "sentence_transformers.models.Normalize",
                    "sentence_transformers.models.LayerNorm");
       },
       {"modules.json: module 3", "module '3' (3_Normalize)",
        "'sentence_transformers.models.LayerNorm'", "does not implement"}},
      {"Dense weights only as a pickle",
       [](const fs::path& d) {
         fs::rename(d / "2_Dense/model.safetensors", d / "2_Dense/pytorch_model.bin");
       },
       {"2_Dense/pytorch_model.bin", "pickle", "safe_serialization=True"}},
      {"Dense without weights",
       [](const fs::path& d) { fs::remove(d / "2_Dense/model.safetensors"); },
       {"2_Dense/model.safetensors: missing"}},
      {"unsupported Dense activation",
       [](const fs::path& d) {
         replace_in(d / "2_Dense/config.json", "activation.Tanh", "activation.Softplus");
       },
       {"2_Dense/config.json: field 'activation_function'", "Softplus"}},
      {"no pooling mode",
       [](const fs::path& d) {
         replace_in(d / "1_Pooling/config.json", "\"pooling_mode_cls_token\": true",
                    "\"pooling_mode_cls_token\": false");
       },
       {"1_Pooling/config.json: no pooling_mode_* flag is true"}},
      {"pooling width differs from the model",
       [](const fs::path& d) {
         replace_in(d / "1_Pooling/config.json", "\"word_embedding_dimension\": 16",
                    "\"word_embedding_dimension\": 384");
       },
       {"1_Pooling/config.json: field 'word_embedding_dimension': 384", "hidden size 16"}},
      {"Normalize before Dense",
       [](const fs::path& d) {
         replace_in(d / "modules.json", "sentence_transformers.models.Dense", "@");
         replace_in(d / "modules.json", "sentence_transformers.models.Normalize",
                    "sentence_transformers.models.Dense");
         replace_in(d / "modules.json", "@", "sentence_transformers.models.Normalize");
       },
       {"modules.json: module 3", "out of place"}},
      {"Transformer in a folder",
       [](const fs::path& d) {
         replace_in(d / "modules.json", "\"path\": \"\"", "\"path\": \"0_T\"");
       },
       {"modules.json: module 0: field 'path'", "'0_T'"}},
      {"lower-casing before the tokenizer",
       [](const fs::path& d) {
         replace_in(d / "sentence_bert_config.json", "\"do_lower_case\": false",
                    "\"do_lower_case\": true");
       },
       {"sentence_bert_config.json: field 'do_lower_case'"}},
      {"a default prompt",
       [](const fs::path& d) {
         replace_in(d / "config_sentence_transformers.json", "\"default_prompt_name\": null",
                    "\"default_prompt_name\": \"query\"");
       },
       {"config_sentence_transformers.json: field 'default_prompt_name'", "'query'"}},
      {"module folder outside the directory",
       [](const fs::path& d) {
         replace_in(d / "modules.json", "\"path\": \"1_Pooling\"", "\"path\": \"../1_Pooling\"");
       },
       {"modules.json: module 1: field 'path'"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const fs::path dir = copy_fixture("bert_cls_dense", "model_dir_refusals");
    c.change(dir);
    const std::string err = error_of([&] {
      ModelDir m = ModelDir::open(dir);
      m.load_dense(m.embedding_plan(std::nullopt, std::nullopt));
    });
    ASSERT_FALSE(err.empty());
    for (const auto& part : c.expected) EXPECT_NE(err.find(part), std::string::npos) << err;
  }
}

// What sentence-transformers 6 writes (tests/fixtures/st/st6_bert_prompts) and mcinfer does not
// compute is refused naming the file and field.
TEST(ModelDir, SentenceTransformers6RefusalsNameTheFileAndField) {
  struct Case {
    std::string what, file, from, to;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {"a 6.x module type mcinfer does not implement",
       "modules.json",
       "sentence_transformers.base.modules.normalize.Normalize",
       "sentence_transformers.sentence_transformer.modules.layer_norm.LayerNorm",
       {"modules.json: module 3", "layer_norm.LayerNorm'", "does not implement"}},
      {"a class in the wrong file",
       "modules.json",
       "modules.dense.Dense",
       "modules.pooling.Dense",
       {"modules.json: module 2", "does not implement"}},
      {"Dense on the token embeddings",
       "2_Dense/config.json",
       "\"module_input_name\": \"sentence_embedding\"",
       "\"module_input_name\": \"token_embeddings\"",
       {"2_Dense/config.json: field 'module_input_name'", "'token_embeddings'"}},
      {"Normalize writing elsewhere",
       "3_Normalize/config.json",
       "\"module_output_name\": \"sentence_embedding\"",
       "\"module_output_name\": \"x\"",
       {"3_Normalize/config.json: field 'module_output_name'"}},
      {"a message modality",
       "sentence_bert_config.json",
       "\"text\": {",
       "\"message\": {",
       {"sentence_bert_config.json: field 'modality_config'", "'message'"}},
      {"another output of the forward",
       "sentence_bert_config.json",
       "\"last_hidden_state\"",
       "\"pooler_output\"",
       {"field 'method_output_name'", "'pooler_output'"}},
      {"another Transformer task",
       "sentence_bert_config.json",
       "\"feature-extraction\"",
       "\"text-generation\"",
       {"sentence_bert_config.json: field 'transformer_task'", "'text-generation'"}},
      {"an unknown pooling mode in the list",
       "1_Pooling/config.json",
       "\"mean\"",
       "\"median\"",
       {"1_Pooling/config.json: field 'pooling_mode'", "'median'"}},
      {"a mode twice",
       "1_Pooling/config.json",
       "\"mean\"",
       "\"cls\"",
       {"1_Pooling/config.json: field 'pooling_mode'", "'cls' twice"}},
      {"a prompt that is no string",
       "config_sentence_transformers.json",
       "\"query: \"",
       "3",
       {"config_sentence_transformers.json: field 'prompts'", "'query'"}},
      {"a saving version that is no version",
       "config_sentence_transformers.json",
       "\"sentence_transformers\": \"6.",
       "\"sentence_transformers\": \"six.",
       {"field 'sentence_transformers'", "is not a version"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const fs::path dir = copy_fixture("st6_bert_prompts", "model_dir_st6_refusals");
    replace_in(dir / c.file, c.from, c.to);
    const std::string err = error_of([&] { ModelDir::open(dir); });
    ASSERT_FALSE(err.empty());
    for (const auto& part : c.expected) EXPECT_NE(err.find(part), std::string::npos) << err;
  }
}

// The same directory as sentence-transformers 6 reads it: modules, pooling order, prompts, and
// what its version does differently.
TEST(ModelDir, SentenceTransformers6Directory) {
  const ModelDir m = ModelDir::open(testing::fixture("st/st6_bert_prompts"));
  ASSERT_TRUE(m.sentence_transformers().has_value());
  const StModules& st = *m.sentence_transformers();
  EXPECT_EQ(st.modules.size(), 4u);
  EXPECT_EQ(st.pooling.modes.name(), "cls+mean");
  EXPECT_EQ(st.pooling.dimension_field, "embedding_dimension");
  EXPECT_FALSE(st.pooling.include_prompt);
  EXPECT_TRUE(st.normalize.has_value());
  EXPECT_FALSE(m.strips_text());
  EXPECT_TRUE(m.st_behaviour().cls_after_prompt);
  EXPECT_FALSE(m.pools_prompt());
  EXPECT_EQ(m.prompt(std::nullopt, std::nullopt).value, "query: ");
  EXPECT_EQ(m.prompt(std::nullopt, std::string("doc")).value, "passage: ");
  EXPECT_EQ(m.prompt(std::string("x: "), std::nullopt).source, "--prompt");
  // No max_seq_length: the tokenizer's limit.
  EXPECT_EQ(m.max_len(24, std::nullopt).source, "tokenizer_config.json: model_max_length");
  // A pooling_mode list keeps its order: lasttoken, weightedmean, max.
  const ModelDir x = ModelDir::open(testing::fixture("st/st6_xlmr_last_weighted_max"));
  EXPECT_EQ(x.sentence_transformers()->pooling.modes.name(), "lasttoken+weightedmean+max");
  // Saved by 3.3.1: stripped, CLS at token 0.
  const ModelDir old = ModelDir::open(testing::fixture("st/roberta_prompts_cls_mean"));
  EXPECT_TRUE(old.strips_text());
  EXPECT_FALSE(old.st_behaviour().cls_after_prompt);
  EXPECT_EQ(old.st_behaviour().version, "3.3.1");
}

TEST(ModelDir, DenseWeightsMustMatchTheirConfig) {
  const fs::path dir = copy_fixture("roberta_meansqrt_dense2", "model_dir_dense");
  replace_in(dir / "3_Dense/config.json", "\"bias\": true", "\"bias\": false");
  ModelDir m = ModelDir::open(dir);
  const std::string err =
      error_of([&] { m.load_dense(m.embedding_plan(std::nullopt, std::nullopt)); });
  EXPECT_NE(err.find("3_Dense/model.safetensors: tensor 'linear.bias' present"), std::string::npos)
      << err;
}

TEST(StripPythonWhitespace, LikeStrStrip) {
  // Expected values follow Python's str.strip(): str.isspace() characters at both ends.
  EXPECT_EQ(strip_python_whitespace("  a b  "), "a b");
  EXPECT_EQ(strip_python_whitespace("\t\n\v\f\r\x1c\x1d\x1e\x1f x \x1f"), "x");
  EXPECT_EQ(strip_python_whitespace("\u3000\u00a0\u2003x\u2028\u0085\u202f\u205f\u1680"), "x");
  EXPECT_EQ(strip_python_whitespace("   "), "");
  EXPECT_EQ(strip_python_whitespace(""), "");
  // Not whitespace for Python: zero-width space, BOM, and invalid bytes.
  EXPECT_EQ(strip_python_whitespace("\u200bx\ufeff"), "\u200bx\ufeff");
  EXPECT_EQ(strip_python_whitespace(" \xff x \xc3"), "\xff x \xc3");
  EXPECT_EQ(strip_python_whitespace("é "), "é");
}

// Each layout's marker and activation, as CrossEncoder(dir) reads them (reference.json's
// `activation` is the class its predict applied).
TEST(ModelDir, CrossEncoderInEveryLayout) {
  struct Case {
    std::string name, marker, source;
    OutputActivation activation;
    bool strips;
  };
  const std::vector<Case> cases = {
      {"ce6_bert_sigmoid", "sentence_bert_config.json: transformer_task 'sequence-classification'",
       "config_sentence_transformers.json: activation_fn torch.nn.modules.activation.Sigmoid",
       OutputActivation::kSigmoid, false},
      {"ce6_bert_nli3", "sentence_bert_config.json: transformer_task 'sequence-classification'",
       "config_sentence_transformers.json: activation_fn torch.nn.modules.linear.Identity",
       OutputActivation::kNone, false},
      {"ce53_bert_sigmoid", "config.json: sentence_transformers.activation_fn",
       "config.json: sentence_transformers.activation_fn torch.nn.modules.activation.Sigmoid",
       OutputActivation::kSigmoid, false},
      {"ce53_bert_nli3", "config.json: sentence_transformers.activation_fn",
       "config.json: sentence_transformers.activation_fn torch.nn.modules.linear.Identity",
       OutputActivation::kNone, false},
      {"ce33_bert_sigmoid", "config.json: sbert_ce_default_activation_function",
       "config.json: sbert_ce_default_activation_function torch.nn.modules.activation.Sigmoid",
       OutputActivation::kSigmoid, true},
      {"ce33_bert_nli3", "config.json: sbert_ce_default_activation_function",
       "config.json: sbert_ce_default_activation_function torch.nn.modules.linear.Identity",
       OutputActivation::kNone, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const ModelDir m = ModelDir::open(testing::fixture("ce/" + c.name));
    ASSERT_TRUE(m.cross_encoder().has_value());
    EXPECT_EQ(m.cross_encoder()->marker, c.marker);
    EXPECT_EQ(m.default_task().value, TaskKind::kClassify);
    EXPECT_EQ(m.default_task().source, c.marker + ": a sentence-transformers CrossEncoder");
    const auto a = m.activation(OutputActivation::kAuto);
    EXPECT_EQ(a.value, c.activation);
    EXPECT_EQ(a.source, c.source);
    EXPECT_EQ(m.strips_text(), c.strips);
    // --activation wins.
    EXPECT_EQ(m.activation(OutputActivation::kSoftmax).value, OutputActivation::kSoftmax);
    EXPECT_EQ(m.activation(OutputActivation::kSoftmax).source, "--activation");
    EXPECT_TRUE(m.module_dirs().empty());
  }
  // 5.4 and later: one module, no Pooling; an embedding plan (--task embed) is the default one.
  const ModelDir ce6 = ModelDir::open(testing::fixture("ce/ce6_bert_sigmoid"));
  ASSERT_TRUE(ce6.sentence_transformers().has_value());
  EXPECT_TRUE(ce6.sentence_transformers()->classifier);
  EXPECT_EQ(ce6.sentence_transformers()->modules.size(), 1u);
  EXPECT_EQ(ce6.embedding_plan(std::nullopt, std::nullopt).pooling.source, "default");
}

// No marker: a plain transformers classifier, whatever CrossEncoder.predict would apply.
TEST(ModelDir, ClassifierWithoutMarkerKeepsItsProblemType) {
  const ModelDir m = ModelDir::open(testing::fixture("ce/ce33_bert_no_marker"));
  EXPECT_FALSE(m.cross_encoder().has_value());
  EXPECT_EQ(m.default_task().source, "config.json: architectures");
  EXPECT_EQ(m.activation(OutputActivation::kAuto).value, OutputActivation::kNone);
  EXPECT_EQ(m.activation(OutputActivation::kAuto).source, "config.json: problem_type regression");
  const ModelDir cls = ModelDir::open(testing::fixture("models/bert_cls_single"));
  EXPECT_FALSE(cls.cross_encoder().has_value());
  EXPECT_EQ(cls.activation(OutputActivation::kAuto).value,
            resolve_activation(cls.config(), OutputActivation::kAuto));
}

// The fields in sentence-transformers' order, a null one being none, and its default after them.
TEST(ModelDir, CrossEncoderActivationFieldsInOrder) {
  fs::path d = copy_fixture("ce6_bert_sigmoid", "model_dir_ce_default", "ce");
  replace_in(d / "config_sentence_transformers.json", "\"torch.nn.modules.activation.Sigmoid\"",
             "null");
  EXPECT_EQ(ModelDir::open(d).activation(OutputActivation::kAuto).source,
            "sentence-transformers' default for 1 label (Sigmoid)");
  // config.json's field after a null activation_fn.
  replace_in(d / "config.json", "\"architectures\"",
             "\"sentence_transformers\": {\"activation_fn\": \"torch.nn.Identity\"},\n"
             "  \"architectures\"");
  auto a = ModelDir::open(d).activation(OutputActivation::kAuto);
  EXPECT_EQ(a.value, OutputActivation::kNone);
  EXPECT_EQ(a.source, "config.json: sentence_transformers.activation_fn torch.nn.Identity");

  d = copy_fixture("ce6_bert_nli3", "model_dir_ce_default3", "ce");
  replace_in(d / "config_sentence_transformers.json",
             "\"activation_fn\": \"torch.nn.modules.linear.Identity\",", "");
  a = ModelDir::open(d).activation(OutputActivation::kAuto);
  EXPECT_EQ(a.value, OutputActivation::kNone);
  EXPECT_EQ(a.source, "sentence-transformers' default for 3 labels (Identity)");
  // Softmax takes dim 1 of the [rows, labels] logits.
  replace_in(d / "config.json", "\"architectures\"",
             "\"sbert_ce_default_activation_function\": \"torch.nn.modules.activation.Softmax\",\n"
             "  \"architectures\"");
  EXPECT_EQ(ModelDir::open(d).activation(OutputActivation::kAuto).value,
            OutputActivation::kSoftmax);

  // Before 4.0 a null field is no marker.
  d = copy_fixture("ce33_bert_sigmoid", "model_dir_ce_null", "ce");
  replace_in(d / "config.json", "\"torch.nn.modules.activation.Sigmoid\"", "null");
  EXPECT_FALSE(ModelDir::open(d).cross_encoder().has_value());
}

TEST(ModelDir, CrossEncoderActivationClasses) {
  EXPECT_EQ(cross_encoder_activation("torch.nn.modules.activation.Sigmoid"),
            OutputActivation::kSigmoid);
  EXPECT_EQ(cross_encoder_activation("torch.nn.Sigmoid"), OutputActivation::kSigmoid);
  EXPECT_EQ(cross_encoder_activation("torch.nn.modules.linear.Identity"), OutputActivation::kNone);
  EXPECT_EQ(cross_encoder_activation("torch.nn.modules.activation.Softmax"),
            OutputActivation::kSoftmax);
  EXPECT_FALSE(cross_encoder_activation("torch.nn.modules.activation.Tanh").has_value());
  EXPECT_FALSE(cross_encoder_activation("my_package.Sigmoid").has_value());
}

// An activation class mcinfer does not implement: refused by file, field and class when the
// directory's activation is asked for, not when --activation replaces it or when tokenizing.
TEST(ModelDir, UnknownCrossEncoderActivationIsRefusedByName) {
  struct Case {
    std::string name, file, from, field;
  };
  const std::vector<Case> cases = {
      {"ce6_bert_sigmoid", "config_sentence_transformers.json", "activation.Sigmoid",
       "activation_fn"},
      {"ce53_bert_sigmoid", "config.json", "activation.Sigmoid",
       "sentence_transformers.activation_fn"},
      {"ce33_bert_sigmoid", "config.json", "activation.Sigmoid",
       "sbert_ce_default_activation_function"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path d = copy_fixture(c.name, "model_dir_ce_unknown", "ce");
    replace_in(d / c.file, c.from, "activation.Softsign");
    const ModelDir m = ModelDir::open(d);
    const std::string err = error_of([&] { m.activation(OutputActivation::kAuto); });
    for (const std::string& part :
         {(d / c.file).string() + ": field '" + c.field + "'",
          std::string("'torch.nn.modules.activation.Softsign'"), std::string("--activation")})
      EXPECT_NE(err.find(part), std::string::npos) << err;
    EXPECT_EQ(m.activation(OutputActivation::kNone).value, OutputActivation::kNone);
    EXPECT_NO_THROW(ModelDir::open(d, ModelDir::Use::kTokenize));
  }
}

// A sequence-classification Transformer hands on its logits as scores, alone.
TEST(ModelDir, CrossEncoderModulesRefusalsNameTheFileAndField) {
  fs::path d = copy_fixture("ce6_bert_sigmoid", "model_dir_ce_modules", "ce");
  replace_in(d / "sentence_bert_config.json", "\"scores\"", "\"token_embeddings\"");
  std::string err = error_of([&] { ModelDir::open(d); });
  EXPECT_NE(err.find("sentence_bert_config.json: field 'module_output_name': 'token_embeddings'"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("scores for sequence-classification"), std::string::npos) << err;

  d = copy_fixture("ce6_bert_sigmoid", "model_dir_ce_pooling", "ce");
  replace_in(d / "modules.json", "\n]",
             ",\n  {\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": "
             "\"sentence_transformers.sentence_transformer.modules.pooling.Pooling\"}\n]");
  err = error_of([&] { ModelDir::open(d); });
  EXPECT_NE(err.find("modules.json: module 1"), std::string::npos) << err;
  EXPECT_NE(err.find("a sequence-classification Transformer alone"), std::string::npos) << err;
}

}  // namespace
}  // namespace mcinfer::model

namespace mcinfer::model {
namespace {

// A SparseEncoder: SpladePooling's fields, the default task, max_active_dims and the MLM head.
TEST(ModelDir, SparseEncoderParsed) {
  const ModelDir m = ModelDir::open(testing::fixture("sparse/sparse6_bert_max_active8"));
  ASSERT_NE(m.splade(), nullptr);
  EXPECT_EQ(m.splade()->pooling, SpladePooling::kMax);
  EXPECT_EQ(m.splade()->activation, SpladeActivation::kLog1pRelu);
  EXPECT_EQ(m.splade()->embedding_dimension, m.config().vocab_size);
  EXPECT_EQ(m.splade()->source, "1_SpladePooling/config.json");
  EXPECT_EQ(m.default_task().value, TaskKind::kSparse);
  EXPECT_EQ(m.max_active_dims(), 8);
  const EncoderDesc d = describe_model(m);
  ASSERT_TRUE(d.mlm_head.has_value());
  EXPECT_EQ(d.mlm_head->decoder_bias, "cls.predictions.bias");
  EXPECT_EQ(d.mlm_head->vocab, m.config().vocab_size);
  EXPECT_FALSE(describe_encoder(m.config()).mlm_head.has_value());

  const ModelDir sum = ModelDir::open(testing::fixture("sparse/sparse6_bert_sum_relu"));
  EXPECT_EQ(sum.splade()->pooling, SpladePooling::kSum);
  EXPECT_EQ(sum.splade()->activation, SpladeActivation::kRelu);
  EXPECT_FALSE(sum.max_active_dims().has_value());
}

TEST(ModelDir, SparseEncoderRefusalsNameFileAndField) {
  const std::tuple<std::string, std::string, std::string, std::string> cases[] = {
      {"1_SpladePooling/config.json", "\"max\"", "\"mean\"", "pooling_strategy"},
      {"1_SpladePooling/config.json", "\"log1p_relu\"", "\"softplus\"", "activation_function"},
      {"1_SpladePooling/config.json", "162", "163", "embedding_dimension"},
      {"config_sentence_transformers.json", "\"max_active_dims\": 8", "\"max_active_dims\": 0",
       "max_active_dims"},
      {"sentence_bert_config.json", "\"fill-mask\"", "\"text-generation\"", "transformer_task"},
      {"modules.json", "splade_pooling.SpladePooling", "splade_pooling.Pooling", "type"}};
  int n = 0;
  for (const auto& [file, from, to, field] : cases) {
    const fs::path d = copy_fixture("sparse6_bert_max_active8",
                                    "model_dir_sparse_" + std::to_string(n++), "sparse");
    replace_in(d / file, from, to);
    try {
      ModelDir::open(d);
      ADD_FAILURE() << file << " " << to << ": accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

TEST(Task, KeepTopKKeepsTheLargestLowerIndexFirst) {
  std::vector<float> v = {0.5f, 2.0f, 0.0f, 2.0f, 1.0f, 2.0f};
  keep_top_k(v.data(), 1, 6, 2);
  EXPECT_EQ(v, (std::vector<float>{0, 2, 0, 2, 0, 0}));
  EXPECT_FLOAT_EQ(splade_activation(SpladeActivation::kRelu, 1.0f), std::log1p(1.0f));
  EXPECT_FLOAT_EQ(splade_activation(SpladeActivation::kLog1pRelu, 1.0f),
                  std::log1p(std::log1p(1.0f)));
  EXPECT_EQ(splade_activation(SpladeActivation::kRelu, -3.0f), 0.0f);
}

}  // namespace
}  // namespace mcinfer::model
