#include "data/stream_buffer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace mcinfer::data {

StreamBuffer StreamBuffer::open_file(const std::filesystem::path& path, std::size_t chunk) {
  StreamBuffer b;
  b.path_ = path;
  b.chunk_ = std::max<std::size_t>(chunk, 1);
  b.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (b.fd_ < 0) fail("{}: cannot open: {}", path.string(), std::strerror(errno));
  struct stat st {};
  if (::fstat(b.fd_, &st) != 0) fail("{}: cannot stat: {}", path.string(), std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("{}: is a directory, not a file", path.string());
  // Pipes and FIFOs stream fine; their size is unknown (0) for progress only.
  b.size_ = S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
#ifdef POSIX_FADV_SEQUENTIAL
  ::posix_fadvise(b.fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  return b;
}

StreamBuffer StreamBuffer::from_bytes(std::string_view bytes, std::size_t chunk) {
  StreamBuffer b;
  b.path_ = "<memory>";
  b.chunk_ = std::max<std::size_t>(chunk, 1);
  b.memory_ = bytes;
  b.size_ = bytes.size();
  return b;
}

StreamBuffer::StreamBuffer(StreamBuffer&& other) noexcept { *this = std::move(other); }

StreamBuffer& StreamBuffer::operator=(StreamBuffer&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    memory_ = other.memory_;
    memory_pos_ = other.memory_pos_;
    buf_ = std::move(other.buf_);
    capacity_ = std::exchange(other.capacity_, 0);
    pos_ = std::exchange(other.pos_, 0);
    end_ = std::exchange(other.end_, 0);
    chunk_ = other.chunk_;
    consumed_ = other.consumed_;
    size_ = other.size_;
    eof_ = other.eof_;
  }
  return *this;
}

StreamBuffer::~StreamBuffer() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t StreamBuffer::read_source(char* dst, std::size_t max) {
  if (fd_ < 0) {
    std::size_t n = std::min(max, memory_.size() - memory_pos_);
    std::memcpy(dst, memory_.data() + memory_pos_, n);
    memory_pos_ += n;
    return n;
  }
  for (;;) {
    ssize_t n = ::read(fd_, dst, max);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno != EINTR) fail("{}: read failed: {}", path_.string(), std::strerror(errno));
  }
}

bool StreamBuffer::read_more(std::size_t limit) {
  if (eof_) return false;
  std::size_t live = end_ - pos_;
  if (pos_ > 0) {
    std::memmove(buf_.get(), buf_.get() + pos_, live);
    pos_ = 0;
    end_ = live;
  }
  // Doubling what is buffered keeps rescans of a growing row linear; the cap bounds memory.
  std::size_t want = std::max(chunk_, live);
  std::size_t cap = std::max(limit, chunk_);
  if (live + want > cap) want = cap > live ? cap - live : 0;
  if (want == 0) return false;
  if (capacity_ < live + want) {
    std::size_t grown = std::max(live + want, capacity_ + capacity_ / 2);
    grown = std::min(grown, std::max(cap, live + want));
    auto bigger = std::make_unique_for_overwrite<char[]>(grown);
    if (live > 0) std::memcpy(bigger.get(), buf_.get(), live);
    buf_ = std::move(bigger);
    capacity_ = grown;
  }
  std::size_t got = 0;
  while (got < want) {
    std::size_t n = read_source(buf_.get() + end_ + got, want - got);
    if (n == 0) {
      eof_ = true;
      break;
    }
    got += n;
  }
  end_ += got;
  return got > 0;
}

}  // namespace mcinfer::data
