#pragma once
// Reads the reference tensors that tools/gen_*.py saved with safetensors.torch.save_file.

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "io/safetensors.h"

namespace mcinfer::testing {

class Reference {
 public:
  explicit Reference(const std::filesystem::path& path) : file_(io::SafetensorsFile::open(path)) {}

  bool has(const std::string& name) const { return file_->find(name) != nullptr; }
  const io::TensorView& tensor(const std::string& name) const {
    const io::TensorView* t = file_->find(name);
    if (!t) fail("{}: no tensor '{}'", file_->path().string(), name);
    return *t;
  }
  std::vector<float> floats(const std::string& name) const {
    const auto& t = tensor(name);
    std::vector<float> out(static_cast<std::size_t>(t.numel()));
    if (t.dtype == io::DType::kF16) {  // large references are stored in half precision
      const auto* p = reinterpret_cast<const std::uint16_t*>(t.data);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = half_to_float(p[i]);
      return out;
    }
    if (t.dtype != io::DType::kF32) fail("{}: '{}' is not F32", file_->path().string(), name);
    std::memcpy(out.data(), t.data, t.bytes);
    return out;
  }
  std::vector<std::int32_t> ints(const std::string& name) const {
    const auto& t = tensor(name);
    if (t.dtype != io::DType::kI64) fail("{}: '{}' is not I64", file_->path().string(), name);
    std::vector<std::int32_t> out(static_cast<std::size_t>(t.numel()));
    const auto* p = reinterpret_cast<const std::int64_t*>(t.data);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::int32_t>(p[i]);
    return out;
  }
  std::vector<std::int64_t> shape(const std::string& name) const { return tensor(name).shape; }

 private:
  std::unique_ptr<io::SafetensorsFile> file_;
};

}  // namespace mcinfer::testing
