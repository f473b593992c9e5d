#pragma once
// Buffered output with every failure checked (a full disk, a file-size limit, an I/O error)
// and reported with the file's name; AtomicFile makes a file appear whole or not at all.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace mcinfer {

class FileWriter {
 public:
  enum class Mode { kTruncate, kAppend };

  FileWriter() = default;
  static FileWriter open(const std::filesystem::path& path, Mode mode);
  FileWriter(FileWriter&& other) noexcept;
  FileWriter& operator=(FileWriter&& other) noexcept;
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;
  ~FileWriter();  // closes without syncing; unflushed data is written, errors ignored

  void write(std::string_view bytes);
  void flush();  // hands buffered bytes to the kernel
  void sync();   // flush + fsync: durable on return
  void close();  // flush + close; throws on failure
  bool is_open() const { return fd_ >= 0; }
  // Bytes in the file once everything written so far is flushed.
  std::uint64_t offset() const { return file_offset_ + buffer_.size(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  void write_all(const char* data, std::size_t size);
  std::filesystem::path path_;
  int fd_ = -1;
  std::string buffer_;
  std::uint64_t file_offset_ = 0;
};

// Writes to a temporary file beside `target` and renames it over `target` on commit(), after
// fsync of the file and its directory. Destroyed uncommitted, it removes the temporary file.
class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path target);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  FileWriter& writer() { return writer_; }
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path temp_;
  FileWriter writer_;
  bool committed_ = false;
};

// fsync of a directory, so that a rename or a new file in it survives a crash.
void sync_directory(const std::filesystem::path& dir);

}  // namespace mcinfer
