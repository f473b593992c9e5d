#include "model/model_dir.h"

#include <algorithm>
#include <cstring>

#include <fmt/ranges.h>

#include "core/error.h"
#include "core/file_exists.h"
#include "core/json.h"
#include "io/safetensors.h"

namespace mcinfer::model {
namespace {

namespace fs = std::filesystem;

// SpladePooling weighs every vocabulary token: its width is the MLM head's, the vocabulary.
void check_sparse_encoder(const fs::path& dir, const StSplade& splade, const ModelConfig& config) {
  if (splade.embedding_dimension && *splade.embedding_dimension != config.vocab_size) {
    fail("{}: field '{}': {} differs from the model's vocab_size {}",
         (dir / splade.source).string(), splade.dimension_field, *splade.embedding_dimension,
         config.vocab_size);
  }
}

}  // namespace

ModelDir ModelDir::open(const fs::path& dir, Use use) {
  ModelDir m;
  m.dir_ = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail("{}: not a directory", dir.string());
  const fs::path config = dir / "config.json";
  if (!file_exists(config)) {
    if (use == Use::kRun) fail("{}: no config.json in the model directory", dir.string());
    m.config_problem_ = fmt::format("{}: no config.json in the model directory", dir.string());
  } else if (use == Use::kRun) {
    m.config_ = ModelConfig::load(config);
    m.model_type_ = m.config_->model_type;
    m.transformers_version_ = m.config_->transformers_version;
  } else {
    Json json = read_json_file(config, 16u << 20);
    JsonObject obj(json, config.string());
    m.model_type_ = obj.opt_string("model_type");
    m.transformers_version_ = obj.opt_string("transformers_version");
    // Tokenizing needs no dimensions; a config that has them is read (and checked) whole.
    if (obj.has("hidden_size") || obj.has("dim")) {
      m.config_ = ModelConfig::load(config);
    } else {
      m.config_problem_ = fmt::format("{}: field 'hidden_size': missing", config.string());
    }
  }
  for (const char* name :
       {"tokenizer.json", "vocab.txt", "vocab.json", "sentencepiece.bpe.model", "spm.model"}) {
    if (file_exists(dir / name)) m.tokenizer_files_.emplace_back(name);
  }
  m.st_ = StFiles::read(dir, use == Use::kRun);
  m.has_modules_ = file_exists(dir / "modules.json");
  if (m.config_) {
    m.cross_encoder_ = CrossEncoderFiles::read(dir, m.st_, m.has_modules_, m.config_->num_labels);
  }
  const auto& st = m.st_.modules;
  if (st && st->splade && m.config_) check_sparse_encoder(dir, *st->splade, *m.config_);
  if (st && !st->classifier && !st->fill_mask && m.config_ &&
      st->pooling.embedding_dimension != m.config_->hidden_size) {
    fail("{}: field '{}': {} differs from the model's hidden size {}",
         (dir / st->pooling.source).string(), st->pooling.dimension_field,
         st->pooling.embedding_dimension, m.config_->hidden_size);
  }
  return m;
}

const ModelConfig& ModelDir::config() const {
  if (!config_) fail("{}", config_problem_);
  return *config_;
}

std::vector<fs::path> ModelDir::module_dirs() const {
  std::vector<fs::path> out;
  if (!st_.modules) return out;
  for (const auto& m : st_.modules->modules) {
    // Normalize has no files (its folder may not exist: git keeps no empty folders).
    if (m.kind == StModule::Kind::kPooling || m.kind == StModule::Kind::kDense ||
        m.kind == StModule::Kind::kSpladePooling)
      out.push_back(dir_ / m.path);
  }
  return out;
}

Sourced<std::size_t> ModelDir::max_len(std::optional<std::size_t> tokenizer_limit,
                                       std::optional<std::size_t> requested) const {
  if (requested) {
    // No position table to check against: a sequence still needs room for its special tokens.
    if (!config_ && *requested < 2) fail_usage("--max-len {} is below 2", *requested);
    if (config_) {
      const auto model_limit = static_cast<std::size_t>(config_->max_sequence_length());
      if (*requested < 2 || *requested > model_limit) {
        fail_usage("--max-len {} is outside [2, {}] (the model's position table)", *requested,
                   model_limit);
      }
    }
    return {*requested, "--max-len"};
  }
  Sourced<std::size_t> out{0, "no limit"};
  auto consider = [&](std::size_t limit, std::string source) {
    if (out.value == 0 || limit <= out.value) out = {limit, std::move(source)};
  };
  if (config_) {
    consider(static_cast<std::size_t>(config_->max_sequence_length()),
             "config.json: max_position_embeddings");
  }
  if (tokenizer_limit) consider(*tokenizer_limit, "tokenizer_config.json: model_max_length");
  // A sentence-transformers model truncates at its own max_seq_length (256 for all-MiniLM-L6-v2).
  if (st_.max_seq_length) {
    consider(static_cast<std::size_t>(*st_.max_seq_length), st_.config_name + ": max_seq_length");
  }
  return out;
}

Sourced<std::string> ModelDir::prompt(const std::optional<std::string>& text,
                                      const std::optional<std::string>& name) const {
  if (text && name) {
    fail_usage("--prompt and --prompt-name both given: say the prompt by its text or by its name");
  }
  if (text) return {*text, "--prompt"};
  const StPrompts& p = st_.prompts;
  auto names = [&] {
    std::vector<std::string> out;
    for (const auto& [key, value] : p.prompts) out.push_back(fmt::format("'{}'", key));
    return out.empty() ? std::string("none") : fmt::format("{}", fmt::join(out, ", "));
  };
  if (name) {
    auto it = p.prompts.find(*name);
    if (it == p.prompts.end()) {
      fail_usage("--prompt-name '{}': {} has no such prompt (its prompts: {})", *name,
                 (dir_ / "config_sentence_transformers.json").string(), names());
    }
    return {it->second,
            fmt::format("config_sentence_transformers.json: prompts.{} (--prompt-name)", *name)};
  }
  if (p.default_name) {
    return {p.prompts.at(*p.default_name),
            fmt::format("config_sentence_transformers.json: default_prompt_name '{}'",
                        *p.default_name)};
  }
  return {"", "none"};
}

Json EmbeddingPlan::to_json() const {
  Json list = Json::array();
  for (const auto& d : dense) {
    list.push_back({{"module", d.module},
                    {"in_features", d.in_features},
                    {"out_features", d.out_features},
                    {"bias", d.bias},
                    {"activation", dense_activation_name(d.activation)},
                    {"source", d.source}});
  }
  return {{"pooling", {{"value", pooling.value.name()}, {"source", pooling.source}}},
          {"normalize", {{"value", normalize.value}, {"source", normalize.source}}},
          {"dense", list},
          {"output_dim", output_dim}};
}

Sourced<TaskKind> ModelDir::default_task() const {
  if (cross_encoder_) {
    return {TaskKind::kClassify,
            fmt::format("{}: a sentence-transformers CrossEncoder", cross_encoder_->marker)};
  }
  if (st_.modules && st_.modules->splade) {
    return {TaskKind::kSparse,
            fmt::format("modules.json: a sentence-transformers SparseEncoder ({})",
                        st_.modules->splade->source)};
  }
  if (st_.modules) return {TaskKind::kEmbed, "modules.json"};
  if (config().head == Head::kSequenceClassification)
    return {TaskKind::kClassify, "config.json: architectures"};
  return {TaskKind::kEmbed, "config.json: no classification head"};
}

Sourced<OutputActivation> ModelDir::activation(OutputActivation requested) const {
  if (requested != OutputActivation::kAuto) return {requested, "--activation"};
  if (cross_encoder_) {
    if (!cross_encoder_->unsupported.empty()) fail("{}", cross_encoder_->unsupported);
    return {cross_encoder_->activation, cross_encoder_->source};
  }
  const ModelConfig& c = config();
  return {resolve_activation(c, requested),
          fmt::format("config.json: problem_type {}", problem_type_name(c.problem_type))};
}

EmbeddingPlan ModelDir::embedding_plan(std::optional<PoolingModes> pooling,
                                       std::optional<bool> normalize) const {
  EmbeddingPlan plan;
  if (const auto& st = st_.modules; st && !st->classifier && !st->fill_mask) {
    plan.pooling = {st->pooling.modes, st->pooling.source};
    if (st->normalize) plan.normalize = {true, *st->normalize};
    plan.dense = st->dense;
  }
  if (pooling) plan.pooling = {*pooling, "--pooling"};
  if (normalize) plan.normalize = {*normalize, *normalize ? "--normalize" : "--no-normalize"};
  std::int64_t width = plan.pooling.value.width(config().hidden_size);
  for (const StDense& d : plan.dense) {
    if (d.in_features != width) {
      fail("{}: field 'in_features': {} but the {} receives {} values ({} pooling{})",
           (dir_ / d.source).string(), d.in_features, d.module, width, plan.pooling.value.name(),
           plan.pooling.source == "--pooling" ? " from --pooling" : "");
    }
    width = d.out_features;
  }
  plan.output_dim = width;
  return plan;
}

std::shared_ptr<const std::vector<DenseLayer>> ModelDir::load_dense(
    const EmbeddingPlan& plan) const {
  if (plan.dense.empty()) return nullptr;
  auto layers = std::make_shared<std::vector<DenseLayer>>();
  for (const StDense& d : plan.dense) {
    const fs::path file = dir_ / d.weights;
    auto st = io::SafetensorsFile::open(file);
    DenseLayer layer;
    layer.module = d.module;
    layer.in_features = d.in_features;
    layer.out_features = d.out_features;
    layer.activation = d.activation;
    auto read = [&](const char* name, std::vector<std::int64_t> shape, std::vector<float>& out) {
      const io::TensorView* t = st->find(name);
      if (t == nullptr) fail("{}: missing tensor '{}'", file.string(), name);
      if (t->shape != shape) {
        fail("{}: tensor '{}' has shape {} but {} implies [{}]", file.string(), name,
             t->shape_string(), d.source, fmt::join(shape, ", "));
      }
      if (t->dtype != io::DType::kF32) {
        fail("{}: tensor '{}' has dtype {}; Dense weights must be F32", file.string(), name,
             io::dtype_name(t->dtype));
      }
      out.resize(static_cast<std::size_t>(t->numel()));
      std::memcpy(out.data(), t->data, t->bytes);
    };
    read("linear.weight", {d.out_features, d.in_features}, layer.weight);
    if (d.bias) {
      read("linear.bias", {d.out_features}, layer.bias);
    } else if (st->find("linear.bias") != nullptr) {
      fail("{}: tensor 'linear.bias' present but {} says bias false", file.string(), d.source);
    }
    for (const auto& t : st->tensors()) {
      if (t.name != "linear.weight" && t.name != "linear.bias")
        fail("{}: unexpected tensor '{}' for a Dense module", file.string(), t.name);
    }
    layers->push_back(std::move(layer));
  }
  return layers;
}

EncoderDesc describe_model(const ModelDir& dir) {
  EncoderDesc d = describe_encoder(dir.config());
  if (dir.splade()) d.mlm_head = describe_mlm_head(dir.config());
  return d;
}

std::string_view strip_python_whitespace(std::string_view text) {
  // The code point starting at s[i] (0x110000 when not valid UTF-8) and its length.
  auto decode = [&](std::size_t i, std::size_t& len) -> char32_t {
    const auto b = static_cast<unsigned char>(text[i]);
    len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > text.size()) return 0x110000;
    char32_t cp = len == 1 ? b : b & (0x7F >> len);
    for (std::size_t k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      if ((c & 0xC0) != 0x80) return 0x110000;
      cp = (cp << 6) | (c & 0x3F);
    }
    return cp;
  };
  auto is_space = [](char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
  };
  std::size_t begin = 0, len = 0;
  while (begin < text.size() && is_space(decode(begin, len))) begin += len;
  std::size_t end = text.size();
  while (end > begin) {
    // Step back to the start of the last code point (at most 4 bytes).
    std::size_t start = end - 1;
    while (start > begin && end - start < 4 &&
           (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
      --start;
    if (!is_space(decode(start, len)) || start + len != end) break;
    end = start;
  }
  return text.substr(begin, end - begin);
}

}  // namespace mcinfer::model
