// Arbitrary bytes as model files. Loading works or throws mcinfer::Error naming the file; it
// never crashes or reads outside the mapping.
//
// Input: byte 0 picks what the rest is (mod 8):
//   0: a model.safetensors, opened and validated alone;
//   1: a model.safetensors beside a fixed tiny BERT config.json: the whole weight loader (shape
//      checks, dtype conversion, packing);
//   2: a model.safetensors.index.json beside two fixed valid parts;
//   3: a config.json (ModelConfig::load);
//   4-7: one file of a fixed valid sentence-transformers directory (modules.json,
//      1_Pooling/config.json, 2_Dense/config.json, 2_Dense/model.safetensors), the rest valid:
//      ModelDir::open, its embedding plan and the Dense weights.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "backends/registry.h"
#include "core/error.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/model_dir.h"

namespace {

namespace fs = std::filesystem;

const char kConfig[] = R"({"model_type": "bert", "architectures": ["BertForSequenceClassification"],
  "vocab_size": 8, "hidden_size": 4, "num_hidden_layers": 1, "num_attention_heads": 2,
  "intermediate_size": 8, "max_position_embeddings": 6, "type_vocab_size": 2, "id2label": {"0": "a", "1": "b"}})";

// A small valid safetensors file holding one F32 tensor named `name`.
std::string tiny_part(const std::string& name) {
  std::string header =
      "{\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  while (header.size() % 8) header += ' ';
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + std::string("\0\0\x80\x3f", 4);
}

const char kModules[] =
    R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.base.modules.transformer.Transformer"},
  {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
  {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
  {"idx": 3, "name": "3", "path": "3_Normalize", "type": "sentence_transformers.base.modules.normalize.Normalize"}])";
const char kPooling[] = R"({"word_embedding_dimension": 4, "pooling_mode_mean_tokens": true})";
const char kDense[] = R"({"in_features": 4, "out_features": 2, "bias": true,
  "activation_function": "torch.nn.modules.activation.Tanh"})";

// Dense weights for kDense: linear.bias [2] and linear.weight [2, 4], F32 zeros.
std::string dense_weights() {
  std::string header = R"({"linear.bias":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("linear.weight":{"dtype":"F32","shape":[2,4],"data_offsets":[8,40]}})";
  while (header.size() % 8) header += ' ';
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + std::string(40, '\0');
}

const fs::path& work_dir() {
  static const fs::path dir = [] {
    fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    fs::path d = base / ("mcinfer_fuzz_model_" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::ofstream(d / "part1.safetensors", std::ios::binary) << tiny_part("a");
    std::ofstream(d / "part2.safetensors", std::ios::binary) << tiny_part("b");
    return d;
  }();
  return dir;
}

void write(const fs::path& path, std::string_view bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const fs::path& dir = work_dir();
  static auto backend = mcinfer::backend::make_backend();
  std::error_code ec;
  try {
    switch (data[0] % 8) {
      case 0:
        write(dir / "alone.safetensors", body);
        mcinfer::io::SafetensorsFile::open(dir / "alone.safetensors");
        break;
      case 1: {
        const fs::path model = dir / "model";
        fs::create_directories(model, ec);
        write(model / "config.json", kConfig);
        write(model / "model.safetensors", body);
        backend->prepare(mcinfer::model::ModelDir::open(model), {}, nullptr);
        break;
      }
      case 2:
        write(dir / "model.safetensors.index.json", body);
        mcinfer::io::Checkpoint::open(dir);
        break;
      case 3:
        write(dir / "config.json", body);
        mcinfer::model::ModelConfig::load(dir / "config.json");
        break;
      default: {
        // 0-3: modules.json, Pooling, Dense config and weights; with the first byte's high bit,
        // 4-6: sentence_bert_config.json, config_sentence_transformers.json (prompts, version),
        // Normalize's config.json (sentence-transformers 6).
        const fs::path st = dir / "st";
        fs::create_directories(st / "1_Pooling", ec);
        fs::create_directories(st / "2_Dense", ec);
        fs::create_directories(st / "3_Normalize", ec);
        const int which = data[0] % 8 - 4 + ((data[0] & 0x80) ? 4 : 0);
        write(st / "config.json", kConfig);
        write(st / "modules.json", which == 0 ? body : kModules);
        write(st / "1_Pooling/config.json", which == 1 ? body : kPooling);
        write(st / "2_Dense/config.json", which == 2 ? body : kDense);
        write(st / "2_Dense/model.safetensors", which == 3 ? body : dense_weights());
        write(st / "sentence_bert_config.json", which == 4 ? body : R"({"max_seq_length": 6})");
        write(st / "config_sentence_transformers.json",
              which == 5 ? body : R"({"prompts": {"q": "q: "}, "default_prompt_name": "q"})");
        write(st / "3_Normalize/config.json", which == 6 ? body : "{}");
        auto model = mcinfer::model::ModelDir::open(st);
        model.load_dense(model.embedding_plan(std::nullopt, std::nullopt));
        model.prompt(std::nullopt, std::nullopt);
        model.prompt(std::nullopt, std::string("q"));
        break;
      }
    }
  } catch (const mcinfer::Error&) {
  }
  return 0;
}
