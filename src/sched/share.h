#pragma once
// Which rows each rank of a distributed run computes. Every rank reads the whole input (one
// sequential pass, as a single process does) and sees the same good rows in the same order, so
// each decides alone, with no messages, which rows are its own; only those are tokenised.
//
//   static:  position p of DistributedSampler's padded stream goes to global replica
//            g = p mod (world × local replicas), which is local replica g mod local replicas
//            of rank g / local replicas: the seed's split across TPU cores, across hosts.
//   dynamic: the good rows, in input order, are cut into blocks of about the same text
//            weight (bytes of text, 4 per token of a pre-tokenised row), and block k goes to
//            rank k mod world: shares balanced by the tokens' proxy as well as the input order
//            allows, without tokenising anything first. Inside a rank, replicas balance
//            dynamically as on one machine.
//
// Threading: one RowShare per reader; not shared.

#include <cstdint>

#include "data/rows.h"

namespace mcinfer::sched {

// What a dynamic share's blocks weigh: the input's size cut into this many blocks per rank.
// 64 keeps each rank's share within a few percent of 1/world on long-tailed inputs while a
// block still holds many rows of a large file.
inline constexpr std::uint64_t kDynamicBlocksPerRank = 64;

// The weight of a row for the dynamic split: its text bytes, or 4 per token when pre-tokenised.
std::uint64_t row_weight(const data::Row& row);

class RowShare {
 public:
  // Every row: a single-process run.
  RowShare() = default;
  static RowShare static_sampler(int rank, int world, int local_replicas);
  static RowShare dynamic_blocks(int rank, int world, std::uint64_t input_bytes);

  bool everything() const { return world_ == 1; }
  int rank() const { return rank_; }
  int world() const { return world_; }

  // The rank that computes the next good row (ordinal: its position among the good rows,
  // weight: row_weight). Call once for each good row, in input order: the dynamic split is a
  // running sum. Static: the owner of the row's own sampler position, not of its padding copies.
  int owner_of_next(std::uint64_t ordinal, std::uint64_t weight);
  // Whether this rank needs good row `ordinal` although another rank owns it: under the static
  // schedule the first world × local replicas rows, which the sampler's padding repeats.
  bool needs_unowned(std::uint64_t ordinal) const;

 private:
  enum class Kind { kAll, kStatic, kDynamic };
  Kind kind_ = Kind::kAll;
  int rank_ = 0;
  int world_ = 1;
  int local_replicas_ = 1;
  std::uint64_t block_weight_ = 1;
  std::uint64_t weight_before_ = 0;  // dynamic: of the good rows before the next one
};

}  // namespace mcinfer::sched
