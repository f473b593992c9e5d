#pragma once
// Compact storage for merging tens of millions of rows: an open-addressing hash of id bytes
// to dense slot numbers (slots count up in insertion order), with the id bytes in an arena,
// and fixed-stride per-slot arrays in blocks that never move (no realloc-and-copy peaks).

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace mcinfer::merge {

// Elements of `stride` T per index, in blocks of 2^16 indices.
template <typename T>
class BlockArray {
 public:
  static constexpr std::size_t kShift = 16;
  static constexpr std::size_t kBlock = std::size_t{1} << kShift;

  explicit BlockArray(std::size_t stride = 1) : stride_(stride == 0 ? 1 : stride) {}

  std::size_t size() const { return size_; }
  std::size_t stride() const { return stride_; }
  T* operator[](std::size_t i) { return blocks_[i >> kShift].get() + (i & (kBlock - 1)) * stride_; }
  const T* operator[](std::size_t i) const {
    return blocks_[i >> kShift].get() + (i & (kBlock - 1)) * stride_;
  }
  // Appends one index, its elements zeroed.
  T* append() {
    if ((size_ >> kShift) == blocks_.size()) {
      blocks_.push_back(std::make_unique_for_overwrite<T[]>(kBlock * stride_));
    }
    T* p = (*this)[size_++];
    std::memset(static_cast<void*>(p), 0, stride_ * sizeof(T));
    return p;
  }
  std::size_t memory_bytes() const { return blocks_.size() * kBlock * stride_ * sizeof(T); }

 private:
  std::size_t stride_;
  std::size_t size_ = 0;
  std::vector<std::unique_ptr<T[]>> blocks_;
};

class IdTable {
 public:
  // `seed` randomises the hash so that crafted ids cannot force collisions.
  explicit IdTable(std::uint64_t seed) : seed_(seed) { buckets_.assign(1024, 0); }

  std::uint32_t size() const { return size_; }

  // The slot of `id`; a new id gets slot size() and `inserted` is set.
  std::uint32_t insert(std::string_view id, bool& inserted) {
    std::uint64_t h = hash(id);
    std::uint64_t tag = h >> 32;
    std::size_t mask = buckets_.size() - 1;
    std::size_t i = h & mask;
    for (;;) {
      std::uint64_t b = buckets_[i];
      if (b == 0) break;
      if ((b >> 32) == tag) {
        auto slot = static_cast<std::uint32_t>(b) - 1;
        if (id_of(slot) == id) {
          inserted = false;
          return slot;
        }
      }
      i = (i + 1) & mask;
    }
    if (size_ == UINT32_MAX - 1) fail("more than {} distinct ids", UINT32_MAX - 1);
    if ((size_ + 1) * 4 > buckets_.size() * 3) {  // keep the load under 3/4
      grow();
      mask = buckets_.size() - 1;
      i = h & mask;
      while (buckets_[i] != 0) i = (i + 1) & mask;
    }
    std::uint32_t slot = size_++;
    buckets_[i] = (tag << 32) | (slot + 1);
    *ids_.append() = store(id);
    inserted = true;
    return slot;
  }

  // Makes room for `count` ids in all without growing again (one rehash now instead of
  // several on the way).
  void reserve(std::size_t count) {
    std::size_t want = buckets_.size();
    while (count * 4 > want * 3) want *= 2;
    if (want > buckets_.size()) rehash(want);
  }

  std::string_view id_of(std::uint32_t slot) const {
    const char* p = *ids_[slot];
    std::uint32_t n;
    std::memcpy(&n, p, sizeof n);
    return {p + sizeof n, n};
  }

  std::size_t memory_bytes() const {
    return buckets_.capacity() * sizeof(std::uint64_t) + ids_.memory_bytes() +
           arena_.size() * kArenaBlock;
  }

 private:
  static constexpr std::size_t kArenaBlock = std::size_t{1} << 20;

  static std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ULL;
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ULL;
    x ^= x >> 32;
    return x;
  }

  std::uint64_t hash(std::string_view s) const {
    std::uint64_t h = seed_ ^ (s.size() * 0x9e3779b97f4a7c15ULL);
    const char* p = s.data();
    std::size_t n = s.size();
    while (n >= 8) {
      std::uint64_t v;
      std::memcpy(&v, p, 8);
      h = (h ^ v) * 0x9e3779b97f4a7c15ULL;
      h ^= h >> 29;
      p += 8;
      n -= 8;
    }
    if (n > 0) {
      std::uint64_t v = 0;
      std::memcpy(&v, p, n);
      h = (h ^ v) * 0x9e3779b97f4a7c15ULL;
    }
    return mix(h);
  }

  void grow() { rehash(buckets_.size() * 2); }

  void rehash(std::size_t buckets) {
    std::vector<std::uint64_t> bigger(buckets, 0);
    std::size_t mask = bigger.size() - 1;
    for (std::uint32_t slot = 0; slot < size_; ++slot) {
      std::uint64_t h = hash(id_of(slot));
      std::size_t i = h & mask;
      while (bigger[i] != 0) i = (i + 1) & mask;
      bigger[i] = ((h >> 32) << 32) | (slot + 1);
    }
    buckets_.swap(bigger);
  }

  // Copies the id, prefixed by its length, into the arena.
  const char* store(std::string_view id) {
    std::size_t need = sizeof(std::uint32_t) + id.size();
    if (arena_.empty() || arena_used_ + need > arena_cap_) {
      arena_cap_ = std::max(kArenaBlock, need);
      arena_.push_back(std::make_unique_for_overwrite<char[]>(arena_cap_));
      arena_used_ = 0;
    }
    char* p = arena_.back().get() + arena_used_;
    auto n = static_cast<std::uint32_t>(id.size());
    std::memcpy(p, &n, sizeof n);
    if (!id.empty()) std::memcpy(p + sizeof n, id.data(), id.size());
    arena_used_ += need;
    return p;
  }

  std::uint64_t seed_;
  std::uint32_t size_ = 0;
  std::vector<std::uint64_t> buckets_;  // 0: empty; else (hash >> 32) << 32 | (slot + 1)
  BlockArray<const char*> ids_;
  std::vector<std::unique_ptr<char[]>> arena_;
  std::size_t arena_used_ = 0;
  std::size_t arena_cap_ = 0;
};

}  // namespace mcinfer::merge
