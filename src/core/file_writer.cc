#include "core/file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "core/fault.h"

namespace mcinfer {
namespace {
constexpr std::size_t kBufferBytes = 1 << 20;
}

FileWriter FileWriter::open(const std::filesystem::path& path, Mode mode) {
  FileWriter w;
  w.path_ = path;
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (mode == Mode::kAppend ? O_APPEND : O_TRUNC);
  w.fd_ = ::open(path.c_str(), flags, 0644);
  if (w.fd_ < 0) fail("{}: cannot open for writing: {}", path.string(), std::strerror(errno));
  if (mode == Mode::kAppend) {
    off_t end = ::lseek(w.fd_, 0, SEEK_END);
    w.file_offset_ = end < 0 ? 0 : static_cast<std::uint64_t>(end);
  }
  w.buffer_.reserve(kBufferBytes);
  return w;
}

FileWriter::FileWriter(FileWriter&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      buffer_(std::move(other.buffer_)),
      file_offset_(other.file_offset_) {}

FileWriter& FileWriter::operator=(FileWriter&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    buffer_ = std::move(other.buffer_);
    file_offset_ = other.file_offset_;
  }
  return *this;
}

FileWriter::~FileWriter() {
  if (fd_ >= 0) {
    try {
      flush();
    } catch (const Error&) {
    }
    ::close(fd_);
  }
}

void FileWriter::write_all(const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("{}: write failed: {}", path_.string(), std::strerror(errno));
    }
    data += n;
    size -= static_cast<std::size_t>(n);
    file_offset_ += static_cast<std::uint64_t>(n);
  }
}

void FileWriter::write(std::string_view bytes) {
  if (fd_ < 0) fail("{}: write to a closed file", path_.string());
  if (buffer_.size() + bytes.size() > kBufferBytes) {
    flush();
    if (bytes.size() >= kBufferBytes) {
      write_all(bytes.data(), bytes.size());
      return;
    }
  }
  buffer_.append(bytes);
}

void FileWriter::flush() {
  if (fd_ < 0 || buffer_.empty()) return;
  std::string pending;
  pending.swap(buffer_);
  buffer_.reserve(kBufferBytes);
  write_all(pending.data(), pending.size());
}

void FileWriter::sync() {
  flush();
  if (fd_ >= 0 && ::fsync(fd_) != 0)
    fail("{}: fsync failed: {}", path_.string(), std::strerror(errno));
}

void FileWriter::close() {
  if (fd_ < 0) return;
  flush();
  int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail("{}: close failed: {}", path_.string(), std::strerror(errno));
}

void sync_directory(const std::filesystem::path& dir) {
  auto d = dir.empty() ? std::filesystem::path(".") : dir;
  int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("{}: cannot open directory: {}", d.string(), std::strerror(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL)
    fail("{}: fsync of directory failed: {}", d.string(), std::strerror(err));
}

AtomicFile::AtomicFile(std::filesystem::path target) : target_(std::move(target)) {
  temp_ = target_;
  temp_ += fmt::format(".tmp-{}", ::getpid());
  writer_ = FileWriter::open(temp_, FileWriter::Mode::kTruncate);
}

AtomicFile::~AtomicFile() {
  if (!committed_) {
    writer_ = FileWriter();
    std::error_code ec;
    std::filesystem::remove(temp_, ec);
  }
}

void AtomicFile::commit() {
  fault_point("atomic-commit");
  writer_.sync();
  writer_.close();
  std::error_code ec;
  std::filesystem::rename(temp_, target_, ec);
  if (ec)
    fail("{}: cannot rename {} into place: {}", target_.string(), temp_.string(), ec.message());
  committed_ = true;
  sync_directory(target_.parent_path());
}

}  // namespace mcinfer
