#pragma once
// Open-addressing hash maps built once at load and read by every thread: strings -> ids (keys
// live in one arena) and 64-bit keys -> 64-bit values (BPE merges). No per-lookup allocation.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace mcinfer::tokenizer {

inline std::uint64_t hash_bytes(std::string_view s) {
  // 64-bit multiply-xorshift over 8-byte words; good enough spread for vocabularies.
  constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ULL;
  std::uint64_t h = 0x243F6A8885A308D3ULL ^ (s.size() * kMul);
  const char* p = s.data();
  std::size_t n = s.size();
  while (n >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    std::uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  }
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ULL;
  h ^= h >> 32;
  return h;
}

inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDULL;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ULL;
  x ^= x >> 33;
  return x;
}

// string -> int32. insert() keeps the first value unless `overwrite`.
class StringIdMap {
 public:
  void reserve(std::size_t n) {
    std::size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    if (cap > slots_.size()) rehash(cap);
  }

  // Returns true when the key was new.
  bool insert(std::string_view key, std::int32_t value, bool overwrite) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.empty() ? 16 : slots_.size() * 2);
    std::uint64_t h = hash_bytes(key);
    std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.length == kEmpty) {
        s.hash = h;
        s.offset = arena_.size();
        s.length = static_cast<std::uint32_t>(key.size());
        s.value = value;
        arena_.append(key);
        ++size_;
        return true;
      }
      if (s.hash == h && key_of(s) == key) {
        if (overwrite) s.value = value;
        return false;
      }
    }
  }

  // Returns -1 when absent.
  std::int32_t find(std::string_view key) const {
    if (size_ == 0) return -1;
    std::uint64_t h = hash_bytes(key);
    std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.length == kEmpty) return -1;
      if (s.hash == h && s.length == key.size() &&
          std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0) {
        return s.value;
      }
    }
  }

  std::size_t size() const { return size_; }

  template <typename F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_) {
      if (s.length != kEmpty) f(key_of(s), s.value);
    }
  }

 private:
  static constexpr std::uint32_t kEmpty = 0xFFFFFFFFu;
  struct Slot {
    std::uint64_t hash = 0;
    std::size_t offset = 0;
    std::uint32_t length = kEmpty;
    std::int32_t value = 0;
  };
  std::string_view key_of(const Slot& s) const {
    return std::string_view(arena_.data() + s.offset, s.length);
  }
  void rehash(std::size_t cap) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(cap, Slot{});
    std::size_t mask = cap - 1;
    for (const Slot& s : old) {
      if (s.length == kEmpty) continue;
      std::size_t i = s.hash & mask;
      while (slots_[i].length != kEmpty) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }
  std::vector<Slot> slots_;
  std::string arena_;
  std::size_t size_ = 0;
};

// uint64 -> uint64; the all-ones key is reserved.
class U64Map {
 public:
  static constexpr std::uint64_t kNoKey = ~0ULL;

  void reserve(std::size_t n) {
    std::size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    if (cap > keys_.size()) rehash(cap);
  }

  void insert_or_assign(std::uint64_t key, std::uint64_t value) {
    if ((size_ + 1) * 2 > keys_.size()) rehash(keys_.empty() ? 16 : keys_.size() * 2);
    std::size_t mask = keys_.size() - 1;
    for (std::size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
      if (keys_[i] == kNoKey) {
        keys_[i] = key;
        values_[i] = value;
        ++size_;
        return;
      }
      if (keys_[i] == key) {
        values_[i] = value;
        return;
      }
    }
  }

  const std::uint64_t* find(std::uint64_t key) const {
    if (size_ == 0) return nullptr;
    std::size_t mask = keys_.size() - 1;
    for (std::size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
      if (keys_[i] == key) return &values_[i];
      if (keys_[i] == kNoKey) return nullptr;
    }
  }

  std::size_t size() const { return size_; }

 private:
  void rehash(std::size_t cap) {
    std::vector<std::uint64_t> old_keys = std::move(keys_);
    std::vector<std::uint64_t> old_values = std::move(values_);
    keys_.assign(cap, kNoKey);
    values_.assign(cap, 0);
    std::size_t mask = cap - 1;
    for (std::size_t k = 0; k < old_keys.size(); ++k) {
      if (old_keys[k] == kNoKey) continue;
      std::size_t i = mix64(old_keys[k]) & mask;
      while (keys_[i] != kNoKey) i = (i + 1) & mask;
      keys_[i] = old_keys[k];
      values_[i] = old_values[k];
    }
  }
  std::vector<std::uint64_t> keys_;
  std::vector<std::uint64_t> values_;
  std::size_t size_ = 0;
};

}  // namespace mcinfer::tokenizer
