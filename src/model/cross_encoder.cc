#include "model/cross_encoder.h"

#include <fmt/format.h>

#include <string_view>

#include "core/error.h"
#include "core/file_exists.h"
#include "core/json.h"

namespace mcinfer::model {
namespace {

namespace fs = std::filesystem;

// A field that may name the activation: present (its value may still be null) and where.
struct ActivationField {
  bool present = false;
  std::optional<std::string> value;  // the torch class; nullopt: null
  std::string file;                  // "config.json"
  std::string field;                 // "sentence_transformers.activation_fn"
};

ActivationField field_of(const JsonObject& obj, std::string_view file, std::string_view key,
                         std::string_view shown) {
  ActivationField f{obj.has(key), std::nullopt, std::string(file), std::string(shown)};
  if (f.present) f.value = obj.opt_string(key);
  return f;
}

// config_sentence_transformers.json's activation_fn (5.4 and later).
ActivationField read_st_config(const fs::path& dir) {
  const fs::path file = dir / "config_sentence_transformers.json";
  if (!file_exists(file)) return {};
  const Json json = read_json_file(file, 16u << 20);
  return field_of(JsonObject(json, file.string()), "config_sentence_transformers.json",
                  "activation_fn", "activation_fn");
}

// config.json: sentence_transformers.activation_fn (4.0 to 5.3), then
// sbert_ce_default_activation_function (before 4.0).
std::pair<ActivationField, ActivationField> read_config_fields(const fs::path& dir) {
  const fs::path file = dir / "config.json";
  std::pair<ActivationField, ActivationField> out;
  if (!file_exists(file)) return out;
  const Json json = read_json_file(file, 16u << 20);
  const JsonObject obj(json, file.string());
  if (obj.has("sentence_transformers") && !obj.raw("sentence_transformers").is_null()) {
    const Json& st = obj.raw("sentence_transformers");
    if (!st.is_object()) obj.fail_field("sentence_transformers", "expected an object");
    out.first = field_of(JsonObject(st, file.string() + ": sentence_transformers"), "config.json",
                         "activation_fn", "sentence_transformers.activation_fn");
  }
  out.second = field_of(obj, "config.json", "sbert_ce_default_activation_function",
                        "sbert_ce_default_activation_function");
  // sentence-transformers reads the older field only when the newer one is absent, and a null
  // one is none.
  if (out.first.present || !out.second.value) out.second = {};
  return out;
}

}  // namespace

std::optional<OutputActivation> cross_encoder_activation(std::string_view torch_class) {
  static constexpr std::pair<std::string_view, OutputActivation> kKnown[] = {
      {"torch.nn.modules.activation.Sigmoid", OutputActivation::kSigmoid},
      {"torch.nn.Sigmoid", OutputActivation::kSigmoid},
      {"torch.nn.modules.linear.Identity", OutputActivation::kNone},
      {"torch.nn.Identity", OutputActivation::kNone},
      // Softmax() with no dim takes dim 1 of predict's [rows, labels] logits: a row softmax.
      {"torch.nn.modules.activation.Softmax", OutputActivation::kSoftmax},
      {"torch.nn.Softmax", OutputActivation::kSoftmax}};
  for (const auto& [name, activation] : kKnown) {
    if (torch_class == name) return activation;
  }
  return std::nullopt;
}

std::optional<CrossEncoderFiles> CrossEncoderFiles::read(const fs::path& dir, const StFiles& st,
                                                         bool has_modules,
                                                         std::int64_t num_labels) {
  const ActivationField st_config = read_st_config(dir);
  const auto [st_field, legacy_field] = read_config_fields(dir);
  CrossEncoderFiles ce;
  if (has_modules) {
    // sentence-transformers 5.4 and later: the modules say it; config.json's fields are read
    // only after config_sentence_transformers.json's activation_fn, as the CrossEncoder does.
    if (!st.modules || !st.modules->classifier) return std::nullopt;
    ce.marker = st.config_name + ": transformer_task 'sequence-classification'";
  } else if (st_field.present) {
    ce.marker = "config.json: sentence_transformers.activation_fn";
  } else if (legacy_field.present) {
    ce.marker = "config.json: sbert_ce_default_activation_function";
    ce.strips_text = true;
  } else {
    return std::nullopt;
  }
  for (const ActivationField* f : {&st_config, &st_field, &legacy_field}) {
    if (!f->value) continue;
    ce.source = fmt::format("{}: {} {}", f->file, f->field, *f->value);
    if (auto activation = cross_encoder_activation(*f->value)) {
      ce.activation = *activation;
    } else {
      ce.unsupported = fmt::format(
          "{}: field '{}': activation '{}' is not one mcinfer implements (torch.nn Sigmoid, "
          "Identity, Softmax); --activation sigmoid, softmax or none replaces it",
          (dir / f->file).string(), f->field, *f->value);
    }
    return ce;
  }
  ce.activation = num_labels == 1 ? OutputActivation::kSigmoid : OutputActivation::kNone;
  ce.source = fmt::format("sentence-transformers' default for {} label{} ({})", num_labels,
                          num_labels == 1 ? "" : "s", num_labels == 1 ? "Sigmoid" : "Identity");
  return ce;
}

}  // namespace mcinfer::model
