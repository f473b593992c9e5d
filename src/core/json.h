#pragma once
// JSON from untrusted files: parse errors and missing or mistyped fields name the file and
// the field, never crash.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace mcinfer {

using Json = nlohmann::json;

// Reads and parses a JSON file; a file over `max_bytes` is refused before reading.
Json read_json_file(const std::filesystem::path& path, std::size_t max_bytes = 256u << 20);
Json parse_json(std::string_view text, std::string_view origin);

// Typed access to an object's fields with messages like "config.json: field 'hidden_size':
// expected an integer, got string".
class JsonObject {
 public:
  JsonObject(const Json& json, std::string origin);

  bool has(std::string_view key) const;
  const Json& raw(std::string_view key) const;  // throws when absent

  std::int64_t get_int(std::string_view key) const;
  std::optional<std::int64_t> opt_int(std::string_view key) const;
  double get_number(std::string_view key) const;
  std::optional<double> opt_number(std::string_view key) const;
  std::string get_string(std::string_view key) const;
  std::optional<std::string> opt_string(std::string_view key) const;
  std::optional<bool> opt_bool(std::string_view key) const;

  const std::string& origin() const { return origin_; }
  [[noreturn]] void fail_field(std::string_view key, std::string_view message) const;

 private:
  const Json* find(std::string_view key) const;
  const Json& json_;
  std::string origin_;
};

std::string_view json_type_name(const Json& value);

}  // namespace mcinfer
