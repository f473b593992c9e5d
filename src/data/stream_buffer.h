#pragma once
// A growable window over a file (read(2) in large chunks) or over bytes in memory (tests and
// fuzzing). Parsers scan [begin(), end()) directly; when a row does not fit they ask for more
// and rescan it from its start. More is always at least as much as is already buffered, so a
// row is rescanned O(1) times on average, and the window never grows past the caller's limit.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>

namespace mcinfer::data {

class StreamBuffer {
 public:
  static constexpr std::size_t kDefaultChunk = 1 << 20;

  StreamBuffer() = default;
  // Throws Error naming the file when it cannot be opened or is not a regular file.
  static StreamBuffer open_file(const std::filesystem::path& path, std::size_t chunk);
  // `bytes` must outlive the buffer.
  static StreamBuffer from_bytes(std::string_view bytes, std::size_t chunk);

  StreamBuffer(StreamBuffer&& other) noexcept;
  StreamBuffer& operator=(StreamBuffer&& other) noexcept;
  StreamBuffer(const StreamBuffer&) = delete;
  StreamBuffer& operator=(const StreamBuffer&) = delete;
  ~StreamBuffer();

  // Unconsumed bytes. Writable so that parsers may unescape a finished row in place.
  char* begin() { return buf_.get() + pos_; }
  char* end() { return buf_.get() + end_; }
  std::size_t available() const { return end_ - pos_; }
  void consume(std::size_t n) {
    pos_ += n;
    consumed_ += n;
  }

  // Reads more input after what is buffered, keeping the unconsumed bytes (pointers from
  // begin()/end() are invalidated). Never holds more than max(limit, chunk) unconsumed bytes.
  // Returns false when nothing more could be read: the end of the input.
  bool read_more(std::size_t limit);
  bool eof() const { return eof_; }

  std::uint64_t consumed() const { return consumed_; }
  std::uint64_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::size_t read_source(char* dst, std::size_t max);

  std::filesystem::path path_;
  int fd_ = -1;
  std::string_view memory_;  // the source when fd_ < 0
  std::size_t memory_pos_ = 0;
  std::unique_ptr<char[]> buf_;
  std::size_t capacity_ = 0;
  std::size_t pos_ = 0;
  std::size_t end_ = 0;
  std::size_t chunk_ = kDefaultChunk;
  std::uint64_t consumed_ = 0;
  std::uint64_t size_ = 0;
  bool eof_ = false;
};

}  // namespace mcinfer::data
