// The PJRT backend's parts: plugin loading and its refusals (fake plugins built beside this
// test), the StableHLO writer's checks, the shape buckets, and, with XLA's CPU plugin, programs
// compiled and run on several devices. The encoder against transformers and the CPU backend is
// tests/backend/backends_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>

#include "backends/pjrt/encoder_program.h"
#include "backends/pjrt/pjrt_api.h"
#include "backends/pjrt/pjrt_backend.h"
#include "backends/pjrt/stablehlo.h"
#include "core/error.h"
#include "model/model_dir.h"
#include "support/model_fixtures.h"
#include "support/pjrt.h"

namespace mcinfer::pjrt {
namespace {

std::string load_error(const std::filesystem::path& path) {
  try {
    Plugin::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(PjrtPlugin, RefusesWhatIsNotAUsablePlugin) {
  EXPECT_EQ(load_error("/nonexistent/plugin.so"),
            "PJRT plugin /nonexistent/plugin.so: no such file");
  const auto text = std::filesystem::temp_directory_path() / "mcinfer_not_a_plugin.so";
  std::ofstream(text) << "not a shared library\n";
  EXPECT_NE(load_error(text).find("not a shared library (no ELF header)"), std::string::npos);
  std::filesystem::remove(text);
  EXPECT_NE(load_error(FAKE_PJRT_NO_API).find("does not export GetPjrtApi (not a PJRT plugin)"),
            std::string::npos)
      << load_error(FAKE_PJRT_NO_API);
  EXPECT_NE(load_error(FAKE_PJRT_V1_0)
                .find("PJRT C API version 1.0 cannot be used; mcinfer "
                      "needs 0.54 or a later 0.x"),
            std::string::npos)
      << load_error(FAKE_PJRT_V1_0);
  EXPECT_NE(load_error(FAKE_PJRT_V0_10).find("version 0.10 cannot be used"), std::string::npos);
  // The right version but an empty function table: refused before any call through it.
  EXPECT_NE(load_error(FAKE_PJRT_V0_81).find("(API 0.81): does not provide PJRT_Error_Destroy"),
            std::string::npos)
      << load_error(FAKE_PJRT_V0_81);
}

TEST(PjrtPlugin, NamesResolveFromTheirVariables) {
  ::setenv("MCINFER_PJRT_CUDA_PLUGIN", "/opt/x/cuda_plugin.so", 1);
  EXPECT_EQ(resolve_plugin("cuda"), "/opt/x/cuda_plugin.so");
  ::unsetenv("MCINFER_PJRT_CUDA_PLUGIN");
  ::setenv("TPU_LIBRARY_PATH", "/opt/y/libtpu.so", 1);
  EXPECT_EQ(resolve_plugin("tpu"), "/opt/y/libtpu.so");  // resolved, never loaded here
  ::unsetenv("TPU_LIBRARY_PATH");
  EXPECT_EQ(resolve_plugin("./my_plugin.so"), "./my_plugin.so");
  const char* venv = std::getenv("VIRTUAL_ENV");
  const std::string saved = venv ? venv : "";
  ::unsetenv("VIRTUAL_ENV");
  try {
    resolve_plugin("cuda");
    ADD_FAILURE() << "resolved cuda with nothing installed";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("set MCINFER_PJRT_CUDA_PLUGIN"), std::string::npos);
  }
  if (!saved.empty()) ::setenv("VIRTUAL_ENV", saved.c_str(), 1);
}

TEST(PjrtShapes, BucketsBoundThePadding) {
  EXPECT_EQ(length_bucket(1, 512), 8);
  EXPECT_EQ(length_bucket(16, 512), 16);
  EXPECT_EQ(length_bucket(17, 512), 24);
  EXPECT_EQ(length_bucket(65, 512), 80);
  EXPECT_EQ(length_bucket(129, 512), 160);
  EXPECT_EQ(length_bucket(224, 512), 224);  // the seed's fixed length is a bucket
  EXPECT_EQ(length_bucket(257, 512), 320);
  EXPECT_EQ(length_bucket(500, 512), 512);
  EXPECT_EQ(length_bucket(500, 514), 512);
  EXPECT_EQ(length_bucket(20, 20), 20);  // never beyond the position table
  for (std::int64_t n = 1; n <= 512; ++n) {
    const std::int64_t b = length_bucket(n, 512);
    EXPECT_GE(b, n);
    EXPECT_LE(b - n, n <= 64 ? 7 : n <= 128 ? 15 : n <= 256 ? 31 : 63) << n;
  }
  // ModernBERT's 8,192 positions: buckets reach them, at most 1/8 of padding above 512 tokens,
  // 8 buckets per doubling of the length.
  EXPECT_EQ(length_bucket(1000, 8192), 1024);
  EXPECT_EQ(length_bucket(1025, 8192), 1152);
  EXPECT_EQ(length_bucket(5000, 8192), 5120);
  EXPECT_EQ(length_bucket(8000, 8192), 8192);
  EXPECT_EQ(length_bucket(8192, 8192), 8192);
  std::set<std::int64_t> buckets;
  for (std::int64_t n = 513; n <= 8192; ++n) {
    const std::int64_t b = length_bucket(n, 8192);
    EXPECT_GE(b, n);
    EXPECT_LE(b, 8192);
    EXPECT_LE(8 * (b - n), n) << n;
    buckets.insert(b);
  }
  EXPECT_EQ(buckets.size(), 8u + 8 + 8 + 8);
  EXPECT_EQ(padded_rows(1), 8);
  EXPECT_EQ(padded_rows(8), 8);
  EXPECT_EQ(padded_rows(9), 16);
  EXPECT_EQ(padded_rows(72), 72);
}

TEST(StableHlo, ChecksShapesAsItWrites) {
  Program p;
  const Value a = p.parameter({2, 3}, DType::kF32);
  const Value b = p.parameter({3, 2}, DType::kF32);
  EXPECT_THROW(p.binary("add", a, b), Error);
  EXPECT_THROW(p.dot(a, b, {}, {}, {0}, {0}, DType::kF32), Error);  // 2 against 3
  EXPECT_THROW(p.reshape(a, {4}), Error);
  const Value c = p.dot(a, b, {}, {}, {1}, {0}, DType::kF32);
  EXPECT_EQ(c.dims, (Dims{2, 2}));
  const std::string text = p.module({c});
  EXPECT_NE(text.find("func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<3x2xf32>) -> "
                      "(tensor<2x2xf32>)"),
            std::string::npos)
      << text;
}

class PjrtCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    MCINFER_NEED_PJRT_CPU();
    plugin_ = Plugin::load(testing::pjrt_cpu_plugin());
  }
  std::shared_ptr<const Plugin> plugin_;
};

TEST_F(PjrtCpu, ClientHasTheDevicesAskedFor) {
  Client client(plugin_, 3);
  EXPECT_EQ(client.platform(), "cpu");
  ASSERT_EQ(client.devices().size(), 3u);
  EXPECT_GE(plugin_->api_minor(), kMinApiMinor);
}

TEST_F(PjrtCpu, RunsAProgramOnEveryDevice) {
  Client client(plugin_, 2);
  Program p;
  const Value x = p.parameter({2, 3}, DType::kF32);
  const Value w = p.parameter({4, 3}, DType::kF32);
  const Value y = p.dot(x, w, {}, {}, {1}, {1}, DType::kF32);  // x · wᵀ
  const auto exe = client.compile(p.module({p.binary("add", y, p.splat(0.5f, y.dims))}));
  ASSERT_EQ(exe->outputs(), 1u);
  const float xs[6] = {1, 2, 3, 4, 5, 6};
  float ws[12];
  for (int i = 0; i < 12; ++i) ws[i] = static_cast<float>(i) * 0.25f - 1.0f;
  for (std::size_t d = 0; d < 2; ++d) {
    const Dims xd{2, 3}, wd{4, 3};
    auto bx = client.upload(xs, ElementType::kF32, xd, d);
    auto bw = client.upload(ws, ElementType::kF32, wd, d);
    PJRT_Buffer* args[] = {bx.get(), bw.get()};
    const auto out = exe->execute(client.devices()[d].device, args);
    float got[8];
    out.at(0).to_host(got, sizeof(got));
    for (int r = 0; r < 2; ++r) {
      for (int c = 0; c < 4; ++c) {
        float want = 0.5f;
        for (int k = 0; k < 3; ++k) want += xs[r * 3 + k] * ws[c * 3 + k];
        EXPECT_FLOAT_EQ(got[r * 4 + c], want) << "device " << d << " [" << r << ", " << c << "]";
      }
    }
    EXPECT_THROW(out.at(0).to_host(got, 4), Error);  // a wrong size is refused, not overrun
  }
}

TEST_F(PjrtCpu, InvalidStableHloIsAnErrorNotAnAbort) {
  Client client(plugin_, 1);
  try {
    client.compile("module { func.func public @main() -> tensor<2xf32> { return %nothing } }");
    ADD_FAILURE() << "compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("compiling the model (PJRT_Client_Compile)"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(PjrtCpu, EncoderProgramsCompileForEveryFamilyAndOutput) {
  Client client(plugin_, 1);
  for (const char* shape : {"bert-base", "distilbert-base", "xlm-r-base", "modernbert-base"}) {
    model::ModelConfig c = model::ModelConfig::shape(shape, 3);
    c.num_layers = 1;  // the program's size, not its depth, is what is checked
    c.vocab_size = 100;
    if (c.modernbert) {  // a global and a windowed layer, the window shorter than the rows
      c.num_layers = 2;
      c.modernbert->window = 8;
    }
    for (auto precision : {model::Precision::kFp32, model::Precision::kBf16}) {
      for (bool requested : {false, true}) {
        const model::EncoderDesc d = model::describe_encoder(c);
        const bool loop = stacks_layers(d, requested);
        EXPECT_EQ(loop, requested && !c.modernbert) << shape;
        ProgramSpec spec{2, 16, precision, true, true, loop, std::nullopt};
        const auto exe = client.compile(encoder_program(d, weight_slots(d, true, loop), spec));
        EXPECT_EQ(exe->outputs(), 2u) << shape;
      }
    }
  }
}

// The layers as a loop compute what the unrolled layers do: each family's position ids and
// token types, a classifier head of each kind, sinusoidal positions.
TEST_F(PjrtCpu, LoopedLayersEqualUnrolledLayers) {
  // ModernBERT's layers differ from each other: asked to loop, it runs them unrolled.
  for (const std::string name : {"bert_cls_multi", "distilbert_embed_sinusoidal", "roberta_embed",
                                 "xlmr_cls", "tf5_modernbert_mean_biases"}) {
    const auto dir = testing::fixture("models/" + name);
    const testing::Reference ref(dir / "reference.safetensors");
    const testing::FixtureInputs in = testing::load_fixture_inputs(ref);
    const bool classify = ref.has("probs");
    const model::TaskSpec task =
        classify ? model::TaskSpec(model::TaskKind::kClassify, model::Pooling::kCls)
                 : model::TaskSpec(model::TaskKind::kEmbed, model::Pooling::kMean);
    std::vector<float> outputs[2];
    for (bool loop : {false, true}) {
      const auto backend = make_pjrt_backend(
          {.plugin = testing::pjrt_cpu_plugin(), .devices = 1, .loop_layers = loop});
      const auto model = backend->prepare(model::ModelDir::open(dir), {}, nullptr);
      model->make_replica(1)->predict(in.sequences, task, outputs[loop]);
    }
    ASSERT_EQ(outputs[0].size(), outputs[1].size()) << name;
    EXPECT_LE(testing::max_abs_error(outputs[0], outputs[1]), 1e-5f) << name;
    EXPECT_LE(testing::max_abs_error(outputs[1], ref.floats(classify ? "probs" : "pooled_mean")),
              1e-4f)
        << name;
  }
}

// ModernBERT's windowed layers score a band of blocks, never the whole [l, l] row: a program whose
// every layer is windowed holds no [.., l, l] tensor at a length of many blocks, only the band's
// [b, heads, nb, B, 3B] scores; its global layers keep the full scores. Compiled at 512 tokens to
// show the band is a program XLA takes.
TEST_F(PjrtCpu, WindowedLayersScoreABandNotTheWholeRow) {
  model::ModelConfig c = model::ModelConfig::shape("modernbert-base", 0);
  c.num_layers = 3;  // global, windowed, windowed
  c.vocab_size = 100;
  const model::EncoderDesc mixed = model::describe_encoder(c);
  model::EncoderDesc windowed = mixed;
  for (model::LayerDesc& layer : windowed.layers) layer.window = 128;
  // 512 tokens in blocks of 64 (half the window): 8 blocks, each against 192 keys.
  const std::string band = "tensor<2x12x8x64x192xf32>";
  Client client(plugin_, 1);
  for (auto precision : {model::Precision::kFp32, model::Precision::kBf16}) {
    const ProgramSpec spec{2, 512, precision, true, false, false, std::nullopt};
    const std::string text = encoder_program(windowed, weight_slots(windowed, false, false), spec);
    EXPECT_EQ(text.find("x512x512x"), std::string::npos) << "an [l, l] tensor in a band program";
    EXPECT_NE(text.find(band), std::string::npos);
    const std::string global = encoder_program(mixed, weight_slots(mixed, false, false), spec);
    EXPECT_NE(global.find("tensor<2x12x512x512xf32>"), std::string::npos);
    EXPECT_NE(global.find(band), std::string::npos);
    const auto start = std::chrono::steady_clock::now();
    const auto exe = client.compile(text);
    EXPECT_EQ(exe->outputs(), 1u);
    std::printf("a 3-layer ModernBERT-base band program [2, 512] %s compiled in %.2f s\n",
                model::precision_name(precision).data(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}

}  // namespace
}  // namespace mcinfer::pjrt
