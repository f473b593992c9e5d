#include "model/model_dir.h"

#include <algorithm>
#include <cstring>

#include <fmt/ranges.h>

#include "core/error.h"
#include "core/json.h"
#include "io/safetensors.h"

namespace mcinfer::model {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kMaxDenseFeatures = 1'000'000;

bool file_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// The file names sentence-transformers looks for, first found wins (SentenceTransformer
// ._load_sbert_model).
constexpr const char* kStConfigNames[] = {
    "sentence_bert_config.json",       "sentence_roberta_config.json",
    "sentence_distilbert_config.json", "sentence_camembert_config.json",
    "sentence_albert_config.json",     "sentence_xlm-roberta_config.json",
    "sentence_xlnet_config.json"};

constexpr std::string_view kTypePrefix = "sentence_transformers.models.";

std::optional<StModule::Kind> module_kind(std::string_view type) {
  if (type.substr(0, kTypePrefix.size()) != kTypePrefix) return std::nullopt;
  const std::string_view cls = type.substr(kTypePrefix.size());
  if (cls == "Transformer") return StModule::Kind::kTransformer;
  if (cls == "Pooling") return StModule::Kind::kPooling;
  if (cls == "Dense") return StModule::Kind::kDense;
  if (cls == "Normalize") return StModule::Kind::kNormalize;
  return std::nullopt;
}

// A module folder named in modules.json: relative, inside the directory.
void check_module_path(const JsonObject& module, const std::string& path) {
  const fs::path p(path);
  bool bad = p.is_absolute();
  for (const auto& part : p) bad = bad || part == "..";
  if (bad)
    module.fail_field("path", fmt::format("'{}' is not a folder inside the directory", path));
}

StPooling read_pooling(const fs::path& dir, const std::string& folder) {
  StPooling p;
  p.source = folder + "/config.json";
  const fs::path file = dir / p.source;
  if (!file_exists(file)) fail("{}: missing (the Pooling module's configuration)", file.string());
  Json json = read_json_file(file, 1u << 20);
  JsonObject obj(json, file.string());
  p.word_embedding_dimension = obj.get_int("word_embedding_dimension");
  if (p.word_embedding_dimension < 1)
    obj.fail_field("word_embedding_dimension", "must be positive");
  p.include_prompt = obj.opt_bool("include_prompt").value_or(true);
  // sentence-transformers' flags, in its concatenation order; pooling_mode (a name) overrides.
  static constexpr std::pair<const char*, Pooling> kFlags[] = {
      {"pooling_mode_cls_token", Pooling::kCls},
      {"pooling_mode_max_tokens", Pooling::kMax},
      {"pooling_mode_mean_tokens", Pooling::kMean},
      {"pooling_mode_mean_sqrt_len_tokens", Pooling::kMeanSqrtLen},
      {"pooling_mode_weightedmean_tokens", Pooling::kWeightedMean},
      {"pooling_mode_lasttoken", Pooling::kLastToken}};
  std::vector<Pooling> modes;
  if (auto name = obj.opt_string("pooling_mode")) {
    std::string mode = *name;
    std::transform(mode.begin(), mode.end(), mode.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (mode == "mean_sqrt_len_tokens") mode = "mean_sqrt_len";
    auto parsed = parse_pooling(mode);
    if (!parsed) {
      obj.fail_field(
          "pooling_mode",
          fmt::format("'{}' is not a pooling mode (cls, max, mean, mean_sqrt_len_tokens, "
                      "weightedmean, lasttoken)",
                      *name));
    }
    modes.push_back(*parsed);
  } else {
    for (const auto& [key, mode] : kFlags) {
      if (obj.opt_bool(key).value_or(false)) modes.push_back(mode);
    }
  }
  if (modes.empty()) fail("{}: no pooling_mode_* flag is true", file.string());
  p.modes = PoolingModes(std::move(modes));
  return p;
}

DenseActivation parse_dense_activation(const JsonObject& obj, const std::string& name) {
  static constexpr std::pair<std::string_view, DenseActivation> kKnown[] = {
      {"torch.nn.modules.linear.Identity", DenseActivation::kIdentity},
      {"torch.nn.modules.activation.Tanh", DenseActivation::kTanh},
      {"torch.nn.modules.activation.ReLU", DenseActivation::kRelu},
      {"torch.nn.modules.activation.Sigmoid", DenseActivation::kSigmoid},
      {"torch.nn.modules.activation.GELU", DenseActivation::kGelu}};
  for (const auto& [known, act] : kKnown) {
    if (name == known) return act;
  }
  obj.fail_field(
      "activation_function",
      fmt::format("'{}' is not supported (torch.nn Identity, Tanh, ReLU, Sigmoid, GELU)", name));
}

StDense read_dense(const fs::path& dir, const std::string& folder) {
  StDense d;
  d.module = folder;
  d.source = folder + "/config.json";
  const fs::path file = dir / d.source;
  if (!file_exists(file)) fail("{}: missing (the Dense module's configuration)", file.string());
  Json json = read_json_file(file, 1u << 20);
  JsonObject obj(json, file.string());
  for (const char* key : {"in_features", "out_features"}) {
    const std::int64_t v = obj.get_int(key);
    if (v < 1 || v > kMaxDenseFeatures)
      obj.fail_field(key, fmt::format("{} is outside [1, {}]", v, kMaxDenseFeatures));
    (std::string_view(key) == "in_features" ? d.in_features : d.out_features) = v;
  }
  d.bias = obj.opt_bool("bias").value_or(true);
  // Dense's constructor default, which its saved config always spells out.
  d.activation_function =
      obj.opt_string("activation_function").value_or("torch.nn.modules.activation.Tanh");
  d.activation = parse_dense_activation(obj, d.activation_function);
  d.weights = folder + "/model.safetensors";
  if (!file_exists(dir / d.weights)) {
    const fs::path bin = dir / folder / "pytorch_model.bin";
    if (file_exists(bin)) {
      fail(
          "{}: the Dense module's weights are a pickle, which mcinfer does not load (unpickling "
          "runs code); save the model with safe_serialization=True to get {}",
          bin.string(), (dir / d.weights).string());
    }
    fail("{}: missing (the Dense module's weights)", (dir / d.weights).string());
  }
  return d;
}

// Refuses what would make encode() differ from what mcinfer computes: lower-casing before the
// tokenizer and default prompts.
void check_transformer_settings(const fs::path& dir, const std::string& st_config_name) {
  if (!st_config_name.empty()) {
    const fs::path file = dir / st_config_name;
    Json json = read_json_file(file, 1u << 20);
    JsonObject obj(json, file.string());
    if (obj.opt_bool("do_lower_case").value_or(false)) {
      obj.fail_field("do_lower_case",
                     "true is not supported (sentence-transformers lower-cases each text before "
                     "the tokenizer)");
    }
  }
  const fs::path config = dir / "config_sentence_transformers.json";
  if (file_exists(config)) {
    Json json = read_json_file(config, 16u << 20);
    JsonObject obj(json, config.string());
    if (auto prompt = obj.opt_string("default_prompt_name")) {
      obj.fail_field(
          "default_prompt_name",
          fmt::format("'{}' is not supported (encode() would prepend that prompt)", *prompt));
    }
  }
}

StModules read_modules(const fs::path& dir, const std::string& st_config_name) {
  const fs::path file = dir / "modules.json";
  Json json = read_json_file(file, 1u << 20);
  if (!json.is_array() || json.empty())
    fail("{}: expected a non-empty list of modules", file.string());
  StModules st;
  for (std::size_t i = 0; i < json.size(); ++i) {
    JsonObject module(json[i], fmt::format("{}: module {}", file.string(), i));
    StModule m;
    m.type = module.get_string("type");
    m.path = module.get_string("path");
    m.name = module.opt_string("name").value_or(std::to_string(i));
    check_module_path(module, m.path);
    auto kind = module_kind(m.type);
    if (!kind) {
      module.fail_field("type",
                        fmt::format("module '{}' ({}) has type '{}', which mcinfer does "
                                    "not implement (sentence_transformers.models."
                                    "Transformer, Pooling, Dense, Normalize)",
                                    m.name, m.path.empty() ? "the directory" : m.path, m.type));
    }
    m.kind = *kind;
    // The only order encode() can run them in that mcinfer implements.
    const bool first = st.modules.empty();
    const StModule::Kind last = first ? StModule::Kind::kTransformer : st.modules.back().kind;
    const bool in_order =
        m.kind == StModule::Kind::kTransformer
            ? first
            : !first && (m.kind == StModule::Kind::kPooling ? last == StModule::Kind::kTransformer
                                                            : (last == StModule::Kind::kPooling ||
                                                               last == StModule::Kind::kDense));
    if (!in_order) {
      module.fail_field("type", fmt::format("module '{}' ({}) is out of place: mcinfer runs "
                                            "Transformer, Pooling, then Dense modules, then "
                                            "Normalize",
                                            m.name, m.type.substr(kTypePrefix.size())));
    }
    switch (m.kind) {
      case StModule::Kind::kTransformer:
        if (!m.path.empty()) {
          module.fail_field("path",
                            fmt::format("the Transformer is in folder '{}'; mcinfer reads it only "
                                        "from the directory itself (path \"\")",
                                        m.path));
        }
        break;
      case StModule::Kind::kPooling:
        st.pooling = read_pooling(dir, m.path);
        break;
      case StModule::Kind::kDense:
        st.dense.push_back(read_dense(dir, m.path));
        break;
      case StModule::Kind::kNormalize:
        st.normalize = "modules.json: " + (m.path.empty() ? m.name : m.path);
        break;
    }
    st.modules.push_back(std::move(m));
  }
  if (st.pooling.source.empty())
    fail("{}: no Pooling module (encode() would have no sentence embedding)", file.string());
  check_transformer_settings(dir, st_config_name);
  return st;
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
  } else {
    Json json = read_json_file(config, 16u << 20);
    JsonObject obj(json, config.string());
    m.model_type_ = obj.opt_string("model_type");
    // Tokenizing needs no dimensions; a config that has them is read (and checked) whole.
    if (obj.has("hidden_size") || obj.has("dim")) {
      m.config_ = ModelConfig::load(config);
    } else {
      m.config_problem_ = fmt::format("{}: field 'hidden_size': missing", config.string());
    }
  }
  for (const char* name :
       {"tokenizer.json", "vocab.txt", "vocab.json", "sentencepiece.bpe.model"}) {
    if (file_exists(dir / name)) m.tokenizer_files_.emplace_back(name);
  }
  for (const char* name : kStConfigNames) {
    if (file_exists(dir / name)) {
      m.st_config_name_ = name;
      break;
    }
  }
  if (!m.st_config_name_.empty()) {
    const fs::path file = dir / m.st_config_name_;
    Json json = read_json_file(file, 1u << 20);
    JsonObject obj(json, file.string());
    // Below 2 there is no room for the special tokens: ignored, as mcinfer always did.
    if (auto n = obj.opt_int("max_seq_length"); n && *n >= 2) m.st_max_seq_length_ = *n;
  }
  m.has_modules_ = file_exists(dir / "modules.json");
  if (m.has_modules_ && use == Use::kRun) m.st_ = read_modules(dir, m.st_config_name_);
  if (m.st_ && m.config_ && m.st_->pooling.word_embedding_dimension != m.config_->hidden_size) {
    fail("{}: field 'word_embedding_dimension': {} differs from the model's hidden size {}",
         (dir / m.st_->pooling.source).string(), m.st_->pooling.word_embedding_dimension,
         m.config_->hidden_size);
  }
  return m;
}

const ModelConfig& ModelDir::config() const {
  if (!config_) fail("{}", config_problem_);
  return *config_;
}

std::vector<fs::path> ModelDir::module_dirs() const {
  std::vector<fs::path> out;
  if (!st_) return out;
  for (const auto& m : st_->modules) {
    // Normalize has no files (its folder may not exist: git keeps no empty folders).
    if (m.kind == StModule::Kind::kPooling || m.kind == StModule::Kind::kDense)
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
  if (st_max_seq_length_) {
    consider(static_cast<std::size_t>(*st_max_seq_length_), st_config_name_ + ": max_seq_length");
  }
  return out;
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
  if (st_) return {TaskKind::kEmbed, "modules.json"};
  if (config().head == Head::kSequenceClassification)
    return {TaskKind::kClassify, "config.json: architectures"};
  return {TaskKind::kEmbed, "config.json: no classification head"};
}

EmbeddingPlan ModelDir::embedding_plan(std::optional<PoolingModes> pooling,
                                       std::optional<bool> normalize) const {
  EmbeddingPlan plan;
  if (st_) {
    plan.pooling = {st_->pooling.modes, st_->pooling.source};
    if (st_->normalize) plan.normalize = {true, *st_->normalize};
    plan.dense = st_->dense;
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

std::string_view dense_activation_name(DenseActivation activation) {
  switch (activation) {
    case DenseActivation::kIdentity:
      return "identity";
    case DenseActivation::kTanh:
      return "tanh";
    case DenseActivation::kRelu:
      return "relu";
    case DenseActivation::kSigmoid:
      return "sigmoid";
    case DenseActivation::kGelu:
      return "gelu";
  }
  return "?";
}

}  // namespace mcinfer::model
