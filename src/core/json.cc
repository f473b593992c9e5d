#include "core/json.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace mcinfer {

Json read_json_file(const std::filesystem::path& path, std::size_t max_bytes) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec) fail("{}: cannot read: {}", path.string(), ec.message());
  if (size > max_bytes)
    fail("{}: {} bytes is larger than the {} allowed", path.string(), size, max_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open", path.string());
  std::string text(size, '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::size_t>(in.gcount()) != size) fail("{}: short read", path.string());
  return parse_json(text, path.string());
}

Json parse_json(std::string_view text, std::string_view origin) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    fail("{}: invalid JSON: {}", origin, e.what());
  }
}

std::string_view json_type_name(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "object";
    case Json::value_t::array:
      return "array";
    case Json::value_t::string:
      return "string";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "integer";
    case Json::value_t::number_float:
      return "number";
    default:
      return "value";
  }
}

JsonObject::JsonObject(const Json& json, std::string origin)
    : json_(json), origin_(std::move(origin)) {
  if (!json_.is_object())
    fail("{}: expected a JSON object, got {}", origin_, json_type_name(json_));
}

const Json* JsonObject::find(std::string_view key) const {
  auto it = json_.find(key);
  return it == json_.end() ? nullptr : &*it;
}

bool JsonObject::has(std::string_view key) const {
  const Json* v = find(key);
  return v != nullptr && !v->is_null();
}

void JsonObject::fail_field(std::string_view key, std::string_view message) const {
  fail("{}: field '{}': {}", origin_, key, message);
}

const Json& JsonObject::raw(std::string_view key) const {
  const Json* v = find(key);
  if (v == nullptr) fail_field(key, "missing");
  return *v;
}

std::optional<std::int64_t> JsonObject::opt_int(std::string_view key) const {
  const Json* v = find(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (v->is_number_integer()) return v->get<std::int64_t>();
  if (v->is_number_unsigned()) {
    auto u = v->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(INT64_MAX)) fail_field(key, "integer out of range");
    return static_cast<std::int64_t>(u);
  }
  fail_field(key, fmt::format("expected an integer, got {}", json_type_name(*v)));
}

std::int64_t JsonObject::get_int(std::string_view key) const {
  auto v = opt_int(key);
  if (!v) fail_field(key, "missing");
  return *v;
}

std::optional<double> JsonObject::opt_number(std::string_view key) const {
  const Json* v = find(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_number())
    fail_field(key, fmt::format("expected a number, got {}", json_type_name(*v)));
  return v->get<double>();
}

double JsonObject::get_number(std::string_view key) const {
  auto v = opt_number(key);
  if (!v) fail_field(key, "missing");
  return *v;
}

std::optional<std::string> JsonObject::opt_string(std::string_view key) const {
  const Json* v = find(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_string())
    fail_field(key, fmt::format("expected a string, got {}", json_type_name(*v)));
  return v->get<std::string>();
}

std::string JsonObject::get_string(std::string_view key) const {
  auto v = opt_string(key);
  if (!v) fail_field(key, "missing");
  return *v;
}

std::optional<bool> JsonObject::opt_bool(std::string_view key) const {
  const Json* v = find(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_boolean())
    fail_field(key, fmt::format("expected true or false, got {}", json_type_name(*v)));
  return v->get<bool>();
}

}  // namespace mcinfer
