#pragma once
// Read-only memory mapping of a whole file. The mapping is shared by every replica of a
// process: pages are loaded once by the kernel and never copied.

#include <cstddef>
#include <filesystem>
#include <span>

namespace mcinfer {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws Error naming the file when it cannot be opened or mapped.
  static MappedFile open(const std::filesystem::path& path);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::filesystem::path& path() const { return path_; }

  // Tells the kernel a range will not be read again (e.g. after packing GEMM weights), so
  // its pages leave the resident set; the file stays intact.
  void release_pages(std::size_t offset, std::size_t length) const;

 private:
  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace mcinfer
