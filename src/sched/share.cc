#include "sched/share.h"

#include <algorithm>

namespace mcinfer::sched {

std::uint64_t row_weight(const data::Row& row) {
  if (row.pretokenized) return 4 * static_cast<std::uint64_t>(row.input_ids.size());
  return row.text.size() + (row.text_pair ? row.text_pair->size() : 0);
}

RowShare RowShare::static_sampler(int rank, int world, int local_replicas) {
  RowShare share;
  share.kind_ = world > 1 ? Kind::kStatic : Kind::kAll;
  share.rank_ = rank;
  share.world_ = world;
  share.local_replicas_ = local_replicas;
  return share;
}

RowShare RowShare::dynamic_blocks(int rank, int world, std::uint64_t input_bytes) {
  RowShare share;
  share.kind_ = world > 1 ? Kind::kDynamic : Kind::kAll;
  share.rank_ = rank;
  share.world_ = world;
  share.block_weight_ = std::max<std::uint64_t>(
      1, input_bytes / (kDynamicBlocksPerRank * static_cast<std::uint64_t>(world)));
  return share;
}

int RowShare::owner_of_next(std::uint64_t ordinal, std::uint64_t weight) {
  switch (kind_) {
    case Kind::kAll:
      return 0;
    case Kind::kStatic: {
      const auto replicas =
          static_cast<std::uint64_t>(world_) * static_cast<std::uint64_t>(local_replicas_);
      return static_cast<int>(ordinal % replicas / static_cast<std::uint64_t>(local_replicas_));
    }
    case Kind::kDynamic: {
      // The block a row starts in: the same row always lands in the same block, whatever the
      // rows around it weigh.
      const std::uint64_t block = weight_before_ / block_weight_;
      weight_before_ += weight;
      return static_cast<int>(block % static_cast<std::uint64_t>(world_));
    }
  }
  return 0;
}

bool RowShare::needs_unowned(std::uint64_t ordinal) const {
  return kind_ == Kind::kStatic &&
         ordinal < static_cast<std::uint64_t>(world_) * static_cast<std::uint64_t>(local_replicas_);
}

}  // namespace mcinfer::sched
