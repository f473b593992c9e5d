#pragma once
// A JSON value with its place in the file, so every complaint names file and field
// ("tokenizer.json: field 'model.vocab': expected an object, got array").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/json.h"

namespace mcinfer::tokenizer {

class JsonNode {
 public:
  JsonNode(const Json& json, const std::string& origin, std::string path)
      : json_(&json), origin_(&origin), path_(std::move(path)) {}

  [[noreturn]] void fail(std::string_view message) const {
    mcinfer::fail("{}: field '{}': {}", *origin_, path_, message);
  }
  const Json& json() const { return *json_; }
  const std::string& path() const { return path_; }
  const std::string& origin() const { return *origin_; }
  bool is_null() const { return json_->is_null(); }

  std::string child_path(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  // A member; absent or null -> nullopt. Requires an object.
  std::optional<JsonNode> get(std::string_view key) const {
    expect_object();
    auto it = json_->find(key);
    if (it == json_->end() || it->is_null()) return std::nullopt;
    return JsonNode(*it, *origin_, child_path(key));
  }
  JsonNode at(std::string_view key) const {
    auto v = get(key);
    if (!v) JsonNode(*json_, *origin_, child_path(key)).fail("missing");
    return *v;
  }
  JsonNode operator[](std::size_t i) const {
    return JsonNode((*json_)[i], *origin_, path_ + "[" + std::to_string(i) + "]");
  }
  std::size_t size() const {
    expect_array();
    return json_->size();
  }

  void expect_object() const {
    if (!json_->is_object()) wrong("an object");
  }
  void expect_array() const {
    if (!json_->is_array()) wrong("an array");
  }
  std::string str() const {
    if (!json_->is_string()) wrong("a string");
    return json_->get<std::string>();
  }
  bool boolean() const {
    if (!json_->is_boolean()) wrong("true or false");
    return json_->get<bool>();
  }
  std::int64_t integer() const {
    if (json_->is_number_integer()) return json_->get<std::int64_t>();
    if (json_->is_number_unsigned()) {
      auto u = json_->get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) fail("integer out of range");
      return static_cast<std::int64_t>(u);
    }
    wrong("an integer");
  }
  double number() const {
    if (!json_->is_number()) wrong("a number");
    return json_->get<double>();
  }

  std::string str_or(std::string_view key, std::string fallback) const {
    auto v = get(key);
    return v ? v->str() : fallback;
  }
  bool bool_or(std::string_view key, bool fallback) const {
    auto v = get(key);
    return v ? v->boolean() : fallback;
  }

 private:
  [[noreturn]] void wrong(std::string_view expected) const {
    fail(fmt::format("expected {}, got {}", expected, json_type_name(*json_)));
  }
  const Json* json_;
  const std::string* origin_;
  std::string path_;
};

}  // namespace mcinfer::tokenizer
