#include "merge/sparse_sums.h"

#include <algorithm>

#include "core/error.h"
#include "merge/merge.h"

namespace mcinfer::merge {

void SparseSums::new_slot() {
  entries_.emplace_back();
  weights_.push_back(0);
  rows_.push_back(0);
}

void SparseSums::add(std::uint32_t slot, std::span<const std::int32_t> indices,
                     std::span<const double> values, double weight, bool first) {
  ++rows_[slot];
  weights_[slot] += weight;
  if (reduce_ == Reduce::kFirst && !first) return;
  std::vector<Entry>& entries = entries_[slot];
  const double scale = reduce_ == Reduce::kMean ? weight : 1.0;
  for (std::size_t k = 0; k < indices.size(); ++k)
    entries.push_back({indices[k], scale * values[k]});
}

void SparseSums::reduce(std::uint32_t slot, std::vector<std::int32_t>& indices,
                        std::vector<double>& values) {
  indices.clear();
  values.clear();
  std::vector<Entry>& entries = entries_[slot];
  // Stable: an index's values stay in row order (the sums are then the same whatever the
  // sort), and each row holds an index once, so a run of one index has one entry per row.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.index < b.index; });
  const std::uint32_t rows = rows_[slot];
  for (std::size_t at = 0; at < entries.size();) {
    std::size_t end = at;
    while (end < entries.size() && entries[end].index == entries[at].index) ++end;
    const auto present = static_cast<std::uint32_t>(end - at);
    const bool some_zero = present < rows;  // rows without this index hold 0 there
    double v = 0;
    switch (reduce_) {
      case Reduce::kMean:
        for (std::size_t e = at; e < end; ++e) v += entries[e].value;
        v /= weights_[slot];
        break;
      case Reduce::kFirst:
        v = entries[at].value;
        break;
      case Reduce::kMax:
      case Reduce::kMin: {
        v = entries[at].value;
        for (std::size_t e = at + 1; e < end; ++e)
          v = reduce_ == Reduce::kMax ? std::max(v, entries[e].value)
                                      : std::min(v, entries[e].value);
        if (some_zero) v = reduce_ == Reduce::kMax ? std::max(v, 0.0) : std::min(v, 0.0);
        break;
      }
      case Reduce::kMedian: {
        column_.assign(rows - present, 0.0);
        for (std::size_t e = at; e < end; ++e) column_.push_back(entries[e].value);
        const std::size_t k = column_.size() / 2;
        std::nth_element(column_.begin(), column_.begin() + static_cast<std::ptrdiff_t>(k),
                         column_.end());
        v = column_[k];
        if (column_.size() % 2 == 0)
          v = (v + *std::max_element(column_.begin(),
                                     column_.begin() + static_cast<std::ptrdiff_t>(k))) /
              2;
        break;
      }
    }
    if (v != 0) {
      indices.push_back(entries[at].index);
      values.push_back(v);
    }
    at = end;
  }
  // The slot is written once: its entries are no longer needed.
  entries = {};
}

}  // namespace mcinfer::merge
