#include "tokenizer/trie.h"

#include <algorithm>

namespace mcinfer::tokenizer {
namespace {

// Free-slot finder over the check array: next_[i] points at or before the next free slot >= i
// (path-compressed), so placing a node skips occupied runs quickly.
class FreeSlots {
 public:
  explicit FreeSlots(std::vector<std::int32_t>& check) : check_(check) { grow(check.size()); }

  void grow(std::size_t n) {
    std::size_t old = next_.size();
    next_.resize(n);
    for (std::size_t i = old; i < n; ++i) next_[i] = static_cast<std::uint32_t>(i);
  }

  // First free slot >= i; check_ must be large enough that one exists (the caller grows).
  std::uint32_t find(std::uint32_t i) {
    std::uint32_t r = i;
    while (r < check_.size() && check_[r] != -1) r = next_[r] == r ? r + 1 : next_[r];
    // Path compression.
    while (i < r && i < next_.size()) {
      std::uint32_t n = next_[i] == i ? i + 1 : next_[i];
      next_[i] = r;
      i = n;
    }
    return r;
  }

 private:
  std::vector<std::int32_t>& check_;
  std::vector<std::uint32_t> next_;
};

struct Pending {
  std::uint32_t node;
  std::size_t lo, hi, depth;
};

}  // namespace

void Trie::build(std::vector<std::pair<std::string, std::int32_t>> keys) {
  std::sort(keys.begin(), keys.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  base_.assign(256 + 1, 0);
  check_.assign(256 + 1, -1);
  value_.assign(256 + 1, -1);
  empty_ = keys.empty();
  FreeSlots free_slots(check_);
  auto ensure = [&](std::size_t n) {
    if (n <= check_.size()) return;
    std::size_t cap = check_.size();
    while (cap < n) cap *= 2;
    base_.resize(cap, 0);
    check_.resize(cap, -1);
    value_.resize(cap, -1);
    free_slots.grow(cap);
  };
  check_[0] = -2;  // the root is not a free slot
  std::vector<Pending> stack;
  stack.push_back({kRoot, 0, keys.size(), 0});
  std::vector<unsigned char> labels;
  std::vector<std::size_t> starts;
  std::uint32_t search_from = 1;
  while (!stack.empty()) {
    Pending p = stack.back();
    stack.pop_back();
    std::size_t lo = p.lo;
    if (lo < p.hi && keys[lo].first.size() == p.depth) {
      value_[p.node] = keys[lo].second;
      ++lo;
    }
    if (lo == p.hi) continue;
    labels.clear();
    starts.clear();
    for (std::size_t i = lo; i < p.hi; ++i) {
      unsigned char c = static_cast<unsigned char>(keys[i].first[p.depth]);
      if (labels.empty() || labels.back() != c) {
        labels.push_back(c);
        starts.push_back(i);
      }
    }
    starts.push_back(p.hi);
    // Find a base where every child slot is free.
    std::uint32_t first_label = labels.front();
    std::uint32_t t = free_slots.find(std::max(search_from, first_label + 1));
    std::uint32_t base;
    for (;;) {
      ensure(static_cast<std::size_t>(t) + 257);
      base = t - first_label;
      bool fits = true;
      for (unsigned char c : labels) {
        if (check_[base + c] != -1) {
          fits = false;
          break;
        }
      }
      if (fits) break;
      t = free_slots.find(t + 1);
    }
    base_[p.node] = base;
    for (std::size_t k = 0; k < labels.size(); ++k) {
      std::uint32_t child = base + labels[k];
      check_[child] = static_cast<std::int32_t>(p.node);
    }
    for (std::size_t k = labels.size(); k-- > 0;) {
      stack.push_back({base + labels[k], starts[k], starts[k + 1], p.depth + 1});
    }
    search_from = free_slots.find(search_from);
  }
  check_[0] = -1;
  // Trim the tail of unused slots (keep 256 so base + byte never needs a bounds check beyond
  // the size test in step()).
  std::size_t used = 1;
  for (std::size_t i = check_.size(); i-- > 0;) {
    if (check_[i] != -1) {
      used = i + 1;
      break;
    }
  }
  base_.resize(used);
  check_.resize(used);
  value_.resize(used);
  base_.shrink_to_fit();
  check_.shrink_to_fit();
  value_.shrink_to_fit();
}

}  // namespace mcinfer::tokenizer
