#pragma once
// 64-byte aligned storage for activations and packed weights: cache-line and AVX-512 aligned.
// Large buffers come straight from the kernel (mmap): their pages are zero, committed only when
// first touched, and returned the moment the buffer is freed or regrown, so a replica's resident
// memory is what its largest batch touched, never heap fragments of earlier, smaller batches.

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace mcinfer {

template <typename T>
class AlignedBuffer {
 public:
  static constexpr std::size_t kAlignment = 64;
  static constexpr std::size_t kMapBytes = std::size_t{1} << 20;  // mmap from here up

  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t count) { resize(count); }
  AlignedBuffer(AlignedBuffer&& other) noexcept { swap(other); }
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    AlignedBuffer(std::move(other)).swap(*this);
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { release(); }

  // Grows (never shrinks) the capacity; contents are not preserved, and new storage is
  // uninitialised (the kernels overwrite every element they read).
  void resize(std::size_t count) { grow(count, false); }

  // As resize, but storage that a growth brings is all zeros (free for mapped buffers).
  void resize_zeroed(std::size_t count) { grow(count, true); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t capacity_bytes() const { return capacity_ * sizeof(T); }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  void grow(std::size_t count, bool zeroed) {
    if (count <= capacity_) {
      size_ = count;
      return;
    }
    release();  // before allocating: the old contents are not kept, so never hold both
    const std::size_t bytes = (count * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
    void* p = nullptr;
    if (bytes >= kMapBytes) {
      p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      mapped_ = true;
    } else {
      p = std::aligned_alloc(kAlignment, bytes);
      if (p == nullptr) throw std::bad_alloc();
      if (zeroed) std::memset(p, 0, bytes);
      mapped_ = false;
    }
    data_ = static_cast<T*>(p);
    bytes_ = bytes;
    capacity_ = count;
    size_ = count;
  }

  void release() {
    if (data_ != nullptr) {
      if (mapped_) {
        munmap(data_, bytes_);
      } else {
        std::free(data_);
      }
    }
    data_ = nullptr;
    bytes_ = capacity_ = size_ = 0;
  }

  void swap(AlignedBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
    std::swap(mapped_, other.mapped_);
  }

  T* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  bool mapped_ = false;
};

}  // namespace mcinfer
