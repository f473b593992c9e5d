#include "sched/fingerprint.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/crc32.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace mcinfer::sched {
namespace {

namespace fs = std::filesystem;
constexpr std::size_t kEdge = 1 << 20;

std::string hex(std::uint32_t v) { return fmt::format("{:08x}", v); }

Json file_fingerprint(const fs::path& path) {
  MappedFile file = MappedFile::open(path);
  std::string_view all(reinterpret_cast<const char*>(file.data()), file.size());
  Json j = {{"size", file.size()}};
  if (file.size() <= 4 * kEdge) {
    j["crc32"] = hex(crc32(all));
  } else {
    j["crc32_head"] = hex(crc32(all.substr(0, kEdge)));
    j["crc32_tail"] = hex(crc32(all.substr(all.size() - kEdge)));
  }
  // A safetensors header names every tensor, its dtype, shape and offsets.
  if (path.extension() == ".safetensors" && file.size() >= 8) {
    std::uint64_t len = 0;
    for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<std::uint8_t>(file.data()[i]);
    if (len <= file.size() - 8) j["crc32_header"] = hex(crc32(all.substr(8, len)));
  }
  return j;
}

}  // namespace

Json model_fingerprint(const fs::path& model_dir, const std::vector<fs::path>& module_dirs) {
  Json j = Json::object();
  auto add_folder = [&](const fs::path& folder, const std::string& prefix) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(folder)) {
      if (!entry.is_regular_file()) continue;
      const std::string ext = entry.path().extension().string();
      if (ext == ".safetensors" || ext == ".json" || ext == ".txt" || ext == ".model")
        files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) j[prefix + f.filename().string()] = file_fingerprint(f);
  };
  add_folder(model_dir, "");
  for (const auto& d : module_dirs) add_folder(d, d.lexically_relative(model_dir).string() + "/");
  return j;
}

Json input_fingerprint(const fs::path& input) { return file_fingerprint(input); }

std::vector<std::string> fingerprint_differences(const Json& recorded, const Json& current,
                                                 const std::string& prefix) {
  std::vector<std::string> out;
  if (recorded.is_object() && current.is_object()) {
    for (auto it = recorded.begin(); it != recorded.end(); ++it) {
      const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
      auto other = current.find(it.key());
      if (other == current.end()) {
        out.push_back(fmt::format("{}: was {}, now absent", key, it.value().dump()));
      } else {
        auto sub = fingerprint_differences(it.value(), *other, key);
        out.insert(out.end(), sub.begin(), sub.end());
      }
    }
    for (auto it = current.begin(); it != current.end(); ++it) {
      if (!recorded.contains(it.key())) {
        out.push_back(fmt::format("{}: was absent, now {}",
                                  prefix.empty() ? it.key() : prefix + "." + it.key(),
                                  it.value().dump()));
      }
    }
    return out;
  }
  if (recorded != current)
    out.push_back(fmt::format("{}: was {}, now {}", prefix, recorded.dump(), current.dump()));
  return out;
}

}  // namespace mcinfer::sched
