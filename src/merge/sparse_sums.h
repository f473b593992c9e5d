#pragma once
// The reduction of sparse rows (--task sparse tables) that share an id, exactly as the same
// reduction of their dense vectors would be: over the union of the rows' indices, an index a
// row lacks counting as 0 in that row (pandas' groupby(id).mean() of the dense vectors, and
// its median, max, min, first). A result that is 0 is not written (the rows hold nonzeros).
//
// Each id keeps its rows' (index, value) entries as read, not a vocabulary-wide vector: a
// SPLADE row has ~100 nonzeros of ~30,000 indices.

#include <cstdint>
#include <span>
#include <vector>

namespace mcinfer::merge {

enum class Reduce;

class SparseSums {
 public:
  explicit SparseSums(Reduce reduce) : reduce_(reduce) {}

  void new_slot();
  // One row of `slot` (indices strictly ascending), with its file's weight (mean only); `first`:
  // the slot's first row.
  void add(std::uint32_t slot, std::span<const std::int32_t> indices,
           std::span<const double> values, double weight, bool first);
  // The slot's reduced row: its nonzeros, indices ascending.
  void reduce(std::uint32_t slot, std::vector<std::int32_t>& indices, std::vector<double>& values);

 private:
  struct Entry {
    std::int32_t index;
    double value;  // mean: weight × value
  };
  Reduce reduce_;
  std::vector<std::vector<Entry>> entries_;  // per slot, in row order
  std::vector<double> weights_;              // per slot: the sum of its rows' weights
  std::vector<std::uint32_t> rows_;          // per slot
  std::vector<double> column_;               // median: one index's values
};

}  // namespace mcinfer::merge
