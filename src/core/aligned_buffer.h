#pragma once
// Uninitialised, 64-byte aligned storage for activations and packed weights: cache-line and
// AVX-512 aligned, never zeroed on allocation (the kernels overwrite every element they read).

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace mcinfer {

template <typename T>
class AlignedBuffer {
 public:
  static constexpr std::size_t kAlignment = 64;

  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t count) { resize(count); }

  // Grows (never shrinks) the capacity; contents are not preserved.
  void resize(std::size_t count) {
    if (count <= capacity_) {
      size_ = count;
      return;
    }
    std::size_t bytes = (count * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, bytes);
    if (p == nullptr) throw std::bad_alloc();
    data_.reset(static_cast<T*>(p));
    capacity_ = count;
    size_ = count;
  }

  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  std::size_t capacity_bytes() const { return capacity_ * sizeof(T); }
  T& operator[](std::size_t i) { return data_.get()[i]; }
  const T& operator[](std::size_t i) const { return data_.get()[i]; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace mcinfer
