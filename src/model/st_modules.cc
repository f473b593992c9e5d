#include "model/st_modules.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include <fmt/format.h>

#include "core/error.h"
#include "core/file_exists.h"
#include "core/json.h"

namespace mcinfer::model {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kMaxDenseFeatures = 1'000'000;

// The file names sentence-transformers looks for, first found wins (SentenceTransformer
// ._load_sbert_model).
constexpr const char* kStConfigNames[] = {
    "sentence_bert_config.json",       "sentence_roberta_config.json",
    "sentence_distilbert_config.json", "sentence_camembert_config.json",
    "sentence_albert_config.json",     "sentence_xlm-roberta_config.json",
    "sentence_xlnet_config.json"};

// The packages modules.json has named a module's class by: 2.x to 5.3 wrote
// "sentence_transformers.models.Pooling" (the class's module is its file); 5.4 to 6.x write
// the file and the class, "sentence_transformers.base.modules.dense.Dense" or
// "sentence_transformers.sentence_transformer.modules.pooling.Pooling". sentence-transformers
// 6 still loads every one of them.
// A SparseEncoder's modules are under sparse_encoder.models (5.x) or sparse_encoder.modules
// (6.x, whose files are snake case: splade_pooling.SpladePooling).
constexpr std::string_view kModulePackages[] = {
    "sentence_transformers.models.", "sentence_transformers.base.modules.",
    "sentence_transformers.sentence_transformer.modules.",
    "sentence_transformers.sparse_encoder.models.",
    "sentence_transformers.sparse_encoder.modules."};

// MLMTransformer (5.x's SparseEncoder) is a Transformer whose task is fill-mask.
constexpr std::pair<std::string_view, StModule::Kind> kModuleClasses[] = {
    {"Transformer", StModule::Kind::kTransformer},
    {"Pooling", StModule::Kind::kPooling},
    {"Dense", StModule::Kind::kDense},
    {"Normalize", StModule::Kind::kNormalize},
    {"SpladePooling", StModule::Kind::kSpladePooling},
    {"MLMTransformer", StModule::Kind::kTransformer}};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// "Pooling" or "pooling.Pooling" after one of the packages: the class mcinfer implements.
std::optional<StModule::Kind> module_kind(std::string_view type) {
  for (std::string_view package : kModulePackages) {
    if (!type.starts_with(package)) continue;
    const std::string_view rest = type.substr(package.size());
    const std::size_t dot = rest.find('.');
    const std::string_view cls = dot == std::string_view::npos ? rest : rest.substr(dot + 1);
    if (dot != std::string_view::npos) {
      std::string file(rest.substr(0, dot));
      std::erase(file, '_');
      if (file != lower(cls)) return std::nullopt;
    }
    for (const auto& [name, kind] : kModuleClasses) {
      if (cls == name) return kind;
    }
  }
  return std::nullopt;
}

std::string_view kind_name(StModule::Kind kind) {
  for (const auto& [name, k] : kModuleClasses) {
    if (k == kind) return name;
  }
  return "?";
}

// A module folder named in modules.json: relative, inside the directory.
void check_module_path(const JsonObject& module, const std::string& path) {
  const fs::path p(path);
  bool bad = p.is_absolute();
  for (const auto& part : p) bad = bad || part == "..";
  if (bad)
    module.fail_field("path", fmt::format("'{}' is not a folder inside the directory", path));
}

// 6.x's module_input_name / module_output_name: which feature a module reads and writes.
// mcinfer runs Dense and Normalize on the sentence embedding only.
void check_feature_names(const JsonObject& obj, const char* module) {
  for (const char* key : {"module_input_name", "module_output_name"}) {
    if (auto name = obj.opt_string(key); name && *name != "sentence_embedding") {
      obj.fail_field(key, fmt::format("'{}' is not supported (mcinfer applies {} to the "
                                      "sentence embedding: 'sentence_embedding')",
                                      *name, module));
    }
  }
}

Pooling parse_pooling_name(const JsonObject& obj, const std::string& given) {
  std::string mode = lower(given);
  if (mode == "mean_sqrt_len_tokens") mode = "mean_sqrt_len";
  auto parsed = kPoolingNames.parse(mode);
  if (!parsed) {
    obj.fail_field("pooling_mode",
                   fmt::format("'{}' is not a pooling mode (cls, max, mean, mean_sqrt_len_tokens, "
                               "weightedmean, lasttoken)",
                               given));
  }
  return *parsed;
}

StPooling read_pooling(const fs::path& dir, const std::string& folder) {
  StPooling p;
  p.source = folder + "/config.json";
  const fs::path file = dir / p.source;
  if (!file_exists(file)) fail("{}: missing (the Pooling module's configuration)", file.string());
  Json json = read_json_file(file, 1u << 20);
  JsonObject obj(json, file.string());
  // 6.x renamed word_embedding_dimension to embedding_dimension (and reads either).
  const char* dim_key =
      obj.has("embedding_dimension") ? "embedding_dimension" : "word_embedding_dimension";
  p.embedding_dimension = obj.get_int(dim_key);
  p.dimension_field = dim_key;
  if (p.embedding_dimension < 1) obj.fail_field(dim_key, "must be positive");
  p.include_prompt = obj.opt_bool("include_prompt").value_or(true);
  if (obj.has("pooling_mode")) {
    // 6.x: a name or a list of names, concatenated in the order given; before: one name.
    const Json& given = obj.raw("pooling_mode");
    std::vector<Pooling> modes;
    if (given.is_string()) {
      modes.push_back(parse_pooling_name(obj, given.get<std::string>()));
    } else if (given.is_array() && !given.empty()) {
      for (const Json& name : given) {
        if (!name.is_string()) obj.fail_field("pooling_mode", "expected a name or a list of names");
        modes.push_back(parse_pooling_name(obj, name.get<std::string>()));
      }
    } else {
      obj.fail_field("pooling_mode", "expected a name or a non-empty list of names");
    }
    for (std::size_t i = 0; i < modes.size(); ++i) {
      if (std::find(modes.begin(), modes.begin() + static_cast<std::ptrdiff_t>(i), modes[i]) !=
          modes.begin() + static_cast<std::ptrdiff_t>(i))
        obj.fail_field("pooling_mode", fmt::format("'{}' twice", pooling_name(modes[i])));
    }
    p.modes = PoolingModes::in_given_order(std::move(modes));
    return p;
  }
  // Before 6.x: one flag per mode, concatenated in sentence-transformers' fixed order.
  static constexpr std::pair<const char*, Pooling> kFlags[] = {
      {"pooling_mode_cls_token", Pooling::kCls},
      {"pooling_mode_max_tokens", Pooling::kMax},
      {"pooling_mode_mean_tokens", Pooling::kMean},
      {"pooling_mode_mean_sqrt_len_tokens", Pooling::kMeanSqrtLen},
      {"pooling_mode_weightedmean_tokens", Pooling::kWeightedMean},
      {"pooling_mode_lasttoken", Pooling::kLastToken}};
  std::vector<Pooling> modes;
  for (const auto& [key, mode] : kFlags) {
    if (obj.opt_bool(key).value_or(false)) modes.push_back(mode);
  }
  if (modes.empty())
    fail("{}: no pooling_mode_* flag is true (and no pooling_mode)", file.string());
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
  check_feature_names(obj, "Dense");
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

StSplade read_splade(const fs::path& dir, const std::string& folder) {
  StSplade sp;
  sp.source = folder + "/config.json";
  const fs::path file = dir / sp.source;
  if (!file_exists(file))
    fail("{}: missing (the SpladePooling module's configuration)", file.string());
  Json json = read_json_file(file, 1u << 20);
  JsonObject obj(json, file.string());
  // SpladePooling's constructor defaults: max, relu.
  const std::string pooling = obj.opt_string("pooling_strategy").value_or("max");
  auto strategy = kSpladePoolingNames.parse(pooling);
  if (!strategy)
    obj.fail_field("pooling_strategy", fmt::format("'{}' is not supported (max, sum)", pooling));
  sp.pooling = *strategy;
  const std::string activation = obj.opt_string("activation_function").value_or("relu");
  auto act = kSpladeActivationNames.parse(activation);
  if (!act) {
    obj.fail_field("activation_function",
                   fmt::format("'{}' is not supported (relu, log1p_relu)", activation));
  }
  sp.activation = *act;
  // 6.x renamed word_embedding_dimension to embedding_dimension (and reads either); null until
  // the module has run once.
  for (const char* key : {"embedding_dimension", "word_embedding_dimension"}) {
    if (!obj.has(key) || obj.raw(key).is_null()) continue;
    sp.embedding_dimension = obj.get_int(key);
    sp.dimension_field = key;
    if (*sp.embedding_dimension < 1) obj.fail_field(key, "must be positive");
    break;
  }
  for (auto it = json.begin(); it != json.end(); ++it) {
    static constexpr std::string_view kKnown[] = {"pooling_strategy", "activation_function",
                                                  "embedding_dimension", "word_embedding_dimension",
                                                  "chunk_size"};
    if (std::find(std::begin(kKnown), std::end(kKnown), it.key()) == std::end(kKnown)) {
      obj.fail_field(it.key(),
                     "is not a SpladePooling setting mcinfer knows (pooling_strategy, "
                     "activation_function, embedding_dimension, chunk_size)");
    }
  }
  return sp;
}

// Normalize has had no files until 6.x, which writes the feature names it reads and writes.
void check_normalize(const fs::path& dir, const std::string& folder) {
  const fs::path file = dir / folder / "config.json";
  if (folder.empty() || !file_exists(file)) return;
  Json json = read_json_file(file, 1u << 20);
  check_feature_names(JsonObject(json, file.string()), "Normalize");
}

// The only order encode() can run them in that mcinfer implements; a CrossEncoder's
// Transformer is its only module.
bool in_order(const StModules& st, StModule::Kind kind) {
  if (st.modules.empty()) return kind == StModule::Kind::kTransformer;
  if (st.classifier) return false;
  const StModule::Kind last = st.modules.back().kind;
  switch (kind) {
    case StModule::Kind::kTransformer:
      return false;
    case StModule::Kind::kSpladePooling:
      return last == StModule::Kind::kTransformer && st.fill_mask;
    case StModule::Kind::kPooling:
      return last == StModule::Kind::kTransformer && !st.fill_mask;
    case StModule::Kind::kDense:
    case StModule::Kind::kNormalize:
      return last == StModule::Kind::kPooling || last == StModule::Kind::kDense;
  }
  return false;
}

StModules read_modules(const fs::path& dir, const StFiles& files) {
  const fs::path file = dir / "modules.json";
  Json json = read_json_file(file, 1u << 20);
  if (!json.is_array() || json.empty())
    fail("{}: expected a non-empty list of modules", file.string());
  StModules st;
  st.classifier = files.transformer_task == "sequence-classification";
  st.fill_mask = files.transformer_task == "fill-mask";
  for (std::size_t i = 0; i < json.size(); ++i) {
    JsonObject module(json[i], fmt::format("{}: module {}", file.string(), i));
    StModule m;
    m.type = module.get_string("type");
    m.path = module.get_string("path");
    m.name = module.opt_string("name").value_or(std::to_string(i));
    check_module_path(module, m.path);
    auto kind = module_kind(m.type);
    if (!kind) {
      module.fail_field(
          "type", fmt::format("module '{}' ({}) has type '{}', which mcinfer does not implement "
                              "(Transformer, Pooling, Dense, Normalize of "
                              "sentence_transformers.models, .base.modules or "
                              ".sentence_transformer.modules)",
                              m.name, m.path.empty() ? "the directory" : m.path, m.type));
    }
    m.kind = *kind;
    if (m.type.ends_with(".MLMTransformer")) st.fill_mask = true;
    if (!in_order(st, m.kind)) {
      module.fail_field(
          "type", fmt::format("module '{}' ({}) is out of place: mcinfer runs {}", m.name,
                              kind_name(m.kind),
                              st.classifier  ? "a sequence-classification Transformer alone (a "
                                               "CrossEncoder's scores are its logits)"
                              : st.fill_mask ? "a fill-mask Transformer, then SpladePooling (a "
                                               "SparseEncoder)"
                                             : "Transformer, Pooling, then Dense modules, then "
                                               "Normalize"));
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
      case StModule::Kind::kSpladePooling:
        st.splade = read_splade(dir, m.path);
        break;
      case StModule::Kind::kDense:
        st.dense.push_back(read_dense(dir, m.path));
        break;
      case StModule::Kind::kNormalize:
        check_normalize(dir, m.path);
        st.normalize = "modules.json: " + (m.path.empty() ? m.name : m.path);
        break;
    }
    st.modules.push_back(std::move(m));
  }
  if (st.fill_mask && !st.splade) {
    fail(
        "{}: a fill-mask Transformer without SpladePooling after it (mcinfer runs a "
        "SparseEncoder's MLM logits through SpladePooling only)",
        file.string());
  }
  if (st.pooling.source.empty() && !st.classifier && !st.fill_mask)
    fail("{}: no Pooling module (encode() would have no sentence embedding)", file.string());
  return st;
}

// "6.3.0" -> {6, 3}; nullopt when it does not start with two numbers.
std::optional<std::pair<int, int>> major_minor(std::string_view v) {
  int major = 0, minor = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), major);
  if (ec != std::errc() || p == v.data() + v.size() || *p != '.') return std::nullopt;
  auto [q, ec2] = std::from_chars(p + 1, v.data() + v.size(), minor);
  if (ec2 != std::errc()) return std::nullopt;
  return std::pair{major, minor};
}

StBehaviour read_behaviour(const JsonObject& obj) {
  StBehaviour b;
  b.source = "no sentence-transformers version recorded: as before 5.4";
  if (!obj.has("__version__")) return b;
  const Json& versions = obj.raw("__version__");
  if (!versions.is_object()) obj.fail_field("__version__", "expected an object");
  JsonObject v(versions, obj.origin() + ": __version__");
  auto version = v.opt_string("sentence_transformers");
  if (!version) return b;
  auto mm = major_minor(*version);
  if (!mm) {
    v.fail_field("sentence_transformers",
                 fmt::format("'{}' is not a version (MAJOR.MINOR...)", *version));
  }
  b.version = *version;
  b.source = "config_sentence_transformers.json: __version__.sentence_transformers";
  b.strips_text = *mm < std::pair{5, 4};
  b.cls_after_prompt = *mm >= std::pair{5, 5};
  return b;
}

StPrompts read_prompts(const JsonObject& obj) {
  StPrompts p;
  if (obj.has("prompts")) {
    const Json& prompts = obj.raw("prompts");
    if (!prompts.is_object()) obj.fail_field("prompts", "expected an object of name: text");
    for (auto it = prompts.begin(); it != prompts.end(); ++it) {
      // ST 6 saves the prompts it has no text for as null and reads them as "".
      if (it.value().is_null()) {
        p.prompts[it.key()] = "";
      } else if (it.value().is_string()) {
        p.prompts[it.key()] = it.value().get<std::string>();
      } else {
        obj.fail_field("prompts", fmt::format("'{}': expected a string, got {}", it.key(),
                                              json_type_name(it.value())));
      }
    }
  }
  p.default_name = obj.opt_string("default_prompt_name");
  if (p.default_name && !p.prompts.contains(*p.default_name)) {
    obj.fail_field("default_prompt_name",
                   fmt::format("'{}' is not one of the prompts", *p.default_name));
  }
  return p;
}

// The Transformer's tasks mcinfer runs, with what each hands on: the module's output feature and
// the forward's output it is read from.
struct TransformerTask {
  std::string_view name, module_output, method_output;
};
constexpr TransformerTask kTransformerTasks[] = {
    {"feature-extraction", "token_embeddings", "last_hidden_state"},
    {"sequence-classification", "scores", "logits"},
    {"fill-mask", "token_embeddings", "logits"}};

// sentence_bert_config.json: the Transformer module's settings.
void read_transformer_settings(const JsonObject& obj, StFiles& files) {
  // Below 2 there is no room for the special tokens: ignored, as mcinfer always did.
  if (auto n = obj.opt_int("max_seq_length"); n && *n >= 2) files.max_seq_length = *n;
  if (obj.opt_bool("do_lower_case").value_or(false)) {
    obj.fail_field("do_lower_case",
                   "true is not supported (sentence-transformers lower-cases each text before "
                   "the tokenizer)");
  }
  // 6.x: what the Transformer computes and hands on. mcinfer runs a text encoder's forward and
  // pools its last hidden state (feature-extraction), or takes its classifier's logits as a
  // CrossEncoder's scores (sequence-classification).
  const TransformerTask* task = &kTransformerTasks[0];
  if (auto given = obj.opt_string("transformer_task")) {
    task = std::find_if(std::begin(kTransformerTasks), std::end(kTransformerTasks),
                        [&](const TransformerTask& t) { return t.name == *given; });
    if (task == std::end(kTransformerTasks)) {
      obj.fail_field("transformer_task", fmt::format("'{}' is not supported (feature-extraction, "
                                                     "sequence-classification, fill-mask)",
                                                     *given));
    }
  }
  files.transformer_task = task->name;
  if (auto out = obj.opt_string("module_output_name"); out && *out != task->module_output) {
    obj.fail_field("module_output_name", fmt::format("'{}' is not supported ({} for {})", *out,
                                                     task->module_output, task->name));
  }
  if (!obj.has("modality_config")) return;
  const Json& modalities = obj.raw("modality_config");
  if (!modalities.is_object() || modalities.empty())
    obj.fail_field("modality_config", "expected an object of modality: settings");
  for (auto it = modalities.begin(); it != modalities.end(); ++it) {
    if (it.key() != "text") {
      obj.fail_field("modality_config",
                     fmt::format("modality '{}' is not supported (text)", it.key()));
    }
    JsonObject text(it.value(), obj.origin() + ": modality_config.text");
    if (auto m = text.opt_string("method"); m && *m != "forward")
      text.fail_field("method", fmt::format("'{}' is not supported (forward)", *m));
    if (auto o = text.opt_string("method_output_name"); o && *o != task->method_output) {
      text.fail_field("method_output_name", fmt::format("'{}' is not supported ({} for {})", *o,
                                                        task->method_output, task->name));
    }
  }
}

}  // namespace

StFiles StFiles::read(const fs::path& dir, bool with_modules) {
  StFiles files;
  for (const char* name : kStConfigNames) {
    if (file_exists(dir / name)) {
      files.config_name = name;
      break;
    }
  }
  if (!files.config_name.empty()) {
    const fs::path file = dir / files.config_name;
    Json json = read_json_file(file, 1u << 20);
    read_transformer_settings(JsonObject(json, file.string()), files);
  }
  const fs::path config = dir / "config_sentence_transformers.json";
  if (file_exists(config)) {
    Json json = read_json_file(config, 16u << 20);
    JsonObject obj(json, config.string());
    files.behaviour = read_behaviour(obj);
    files.prompts = read_prompts(obj);
    if (obj.has("max_active_dims") && !obj.raw("max_active_dims").is_null()) {
      files.max_active_dims = obj.get_int("max_active_dims");
      if (*files.max_active_dims < 1) obj.fail_field("max_active_dims", "must be positive");
    }
  }
  if (with_modules && file_exists(dir / "modules.json")) files.modules = read_modules(dir, files);
  return files;
}

}  // namespace mcinfer::model
