#pragma once
// Our own reader of the safetensors format (8-byte little-endian header length, a JSON header,
// then raw little-endian tensor bytes). Every byte is untrusted: the header is fully validated
// before any tensor is exposed, and tensors are views into the read-only mapping (no copy).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "core/mapped_file.h"

namespace mcinfer::io {

enum class DType { kF64, kF32, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool };
// As the format's header spells them.
inline constexpr EnumNames<DType, 10> kDTypeNames{{{
    {DType::kF64, "F64"},
    {DType::kF32, "F32"},
    {DType::kF16, "F16"},
    {DType::kBF16, "BF16"},
    {DType::kI64, "I64"},
    {DType::kI32, "I32"},
    {DType::kI16, "I16"},
    {DType::kI8, "I8"},
    {DType::kU8, "U8"},
    {DType::kBool, "BOOL"},
}}};
inline std::string_view dtype_name(DType dtype) { return kDTypeNames.name(dtype); }
std::size_t dtype_size(DType dtype);

struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> shape;
  const std::byte* data = nullptr;  // inside the mapping; aligned to dtype_size
  std::size_t bytes = 0;
  std::size_t file_offset = 0;  // offset of data from the start of the file
  const std::filesystem::path* file = nullptr;

  std::int64_t numel() const;
  std::string shape_string() const;  // "[384, 1536]"
};

class SafetensorsFile {
 public:
  // Maps and validates a file. Throws Error naming the file (and tensor) on any inconsistency:
  // truncated file, header length beyond the file, invalid JSON, unknown dtype, negative or
  // overflowing shapes, offsets out of range, byte sizes that disagree with dtype × shape,
  // misaligned or overlapping buffers.
  static std::unique_ptr<SafetensorsFile> open(const std::filesystem::path& path);

  const TensorView* find(std::string_view name) const;
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const MappedFile& file() const { return file_; }
  const std::filesystem::path& path() const { return file_.path(); }

 private:
  MappedFile file_;
  std::vector<TensorView> tensors_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

// All tensors of a checkpoint directory: model.safetensors, or the parts listed by
// model.safetensors.index.json. pytorch_model.bin is refused (unpickling runs code).
class Checkpoint {
 public:
  static Checkpoint open(const std::filesystem::path& model_dir);

  const TensorView* find(std::string_view name) const;
  std::vector<const TensorView*> tensors() const;  // sorted by name
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  std::uint64_t total_bytes() const;

  // After a tensor has been copied (e.g. packed for the GEMM), its pages may leave memory.
  void release(const TensorView& tensor) const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*, std::less<>> by_name_;
};

}  // namespace mcinfer::io
