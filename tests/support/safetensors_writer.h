#pragma once
// Rewrites safetensors files for tests that need a damaged or inconsistent model.

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "io/safetensors.h"

namespace mcinfer::testing {

struct TensorBytes {
  std::string name;
  std::string dtype;  // "F32", "F16", ...
  std::vector<std::int64_t> shape;
  std::string bytes;
};

inline std::vector<TensorBytes> read_tensors(const std::filesystem::path& path) {
  auto file = io::SafetensorsFile::open(path);
  std::vector<TensorBytes> out;
  for (const auto& t : file->tensors()) {
    out.push_back({t.name, std::string(io::dtype_name(t.dtype)), t.shape,
                   std::string(reinterpret_cast<const char*>(t.data), t.bytes)});
  }
  return out;
}

inline void write_tensors(const std::filesystem::path& path,
                          const std::vector<TensorBytes>& tensors) {
  Json header = Json::object();
  std::string data;
  for (const auto& t : tensors) {
    while (data.size() % 8) data.push_back('\0');
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  std::string text = header.dump();
  while (text.size() % 8) text.push_back(' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  std::uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xFF));
  out << text << data;
}

}  // namespace mcinfer::testing
