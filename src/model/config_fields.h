#pragma once
// config.json readers shared by config.cc (encoders) and decoder_config.cc (Qwen3): internal to
// model/, every bound and refusal in one place.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/json.h"
#include "model/activation.h"
#include "model/config.h"

namespace mcinfer::model {
namespace config_fields {

// Bounds that keep every buffer size computation far from overflow while admitting any real
// encoder (XLM-R XL has hidden 2560 and 250k vocab).
inline constexpr std::int64_t kMaxVocab = 4'000'000;
inline constexpr std::int64_t kMaxHidden = 32'768;
inline constexpr std::int64_t kMaxLayers = 256;
inline constexpr std::int64_t kMaxHeads = 1024;
inline constexpr std::int64_t kMaxIntermediate = 262'144;
inline constexpr std::int64_t kMaxPositions = 1'048'576;
inline constexpr std::int64_t kMaxTypeVocab = 1024;
inline constexpr std::int64_t kMaxLabels = 1'000'000;

// obj[key] within [lo, hi]; `fallback` when absent (else the field is reported missing).
std::int64_t bounded(const JsonObject& obj, std::string_view key, std::int64_t lo, std::int64_t hi,
                     std::optional<std::int64_t> fallback = std::nullopt);
// transformers' activation name under `key`; others refused by field.
Activation parse_activation(const JsonObject& obj, std::string_view key, const std::string& name);
bool ends_with(const std::string& s, std::string_view suffix);

}  // namespace config_fields

// The network's fields of an encoder family (config.cc) and of Qwen3 (decoder_config.cc).
void read_encoder(const JsonObject& obj, ModelConfig& c);
void read_qwen3(const JsonObject& obj, ModelConfig& c);
void read_gemma3(const JsonObject& obj, ModelConfig& c);

}  // namespace mcinfer::model
