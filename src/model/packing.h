#pragma once
// A batch of sequences as every backend feeds it to the encoder: the kept tokens (attention mask
// 1) of each sequence one after the other, with their token types and the position ids that
// transformers computes from the row as given. Validated here, once for all backends: ids inside
// the vocabulary, types inside the type table, lengths inside the position table.

#include <cstdint>
#include <span>
#include <vector>

#include "model/config.h"
#include "model/task.h"

namespace mcinfer::model {

struct PackedBatch {
  struct Span {
    std::int64_t offset = 0;  // first token's index in ids/types/positions
    std::int64_t length = 0;  // kept tokens (at least 1)
  };
  std::vector<std::int32_t> ids, types, positions;  // [tokens]
  std::vector<Span> spans;                          // [batch]
  std::int64_t tokens() const { return static_cast<std::int64_t>(ids.size()); }
  std::int64_t longest() const;
};

// Refills `out` (its capacity is kept). Throws Error naming the sequence (its index in the
// batch) and the position of an id outside the vocabulary, a type id outside the token-type
// table, a sequence longer than the position table or one with no kept token.
void pack_batch(const ModelConfig& config, std::span<const SequenceInput> batch, PackedBatch& out);

}  // namespace mcinfer::model
