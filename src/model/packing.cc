#include "model/packing.h"

#include <algorithm>

#include "core/error.h"

namespace mcinfer::model {

std::int64_t PackedBatch::longest() const {
  std::int64_t longest = 0;
  for (const Span& s : spans) longest = std::max(longest, s.length);
  return longest;
}

void pack_batch(const ModelConfig& c, std::span<const SequenceInput> batch, PackedBatch& out) {
  out.ids.clear();
  out.types.clear();
  out.positions.clear();
  out.spans.clear();
  const std::int64_t max_len = c.max_sequence_length();
  for (std::size_t s = 0; s < batch.size(); ++s) {
    const SequenceInput& in = batch[s];
    const std::size_t n = in.ids.size();
    if (!in.type_ids.empty() && in.type_ids.size() != n) {
      fail("sequence {} of the batch: {} token type ids for {} tokens", s, in.type_ids.size(), n);
    }
    if (!in.attention_mask.empty() && in.attention_mask.size() != n) {
      fail("sequence {} of the batch: attention mask of {} for {} tokens", s,
           in.attention_mask.size(), n);
    }
    if (static_cast<std::int64_t>(n) > max_len) {
      fail("sequence {} of the batch has {} tokens; the model's position table allows {}", s, n,
           max_len);
    }
    const std::int64_t offset = out.tokens();
    // RoBERTa-style numbering counts from padding_idx; a pad token inside the row is the token
    // whose id equals padding_idx (MPNet fixes both at 1, RoBERTa uses its pad_token_id).
    const auto padding_idx = static_cast<std::int32_t>(c.position_padding_idx.value_or(0));
    std::int32_t roberta_position = padding_idx;
    for (std::size_t i = 0; i < n; ++i) {
      const std::int32_t id = in.ids[i];
      if (id < 0 || id >= c.vocab_size) {
        fail(
            "sequence {} of the batch: token id {} at position {} is outside the vocabulary [0, "
            "{})",
            s, id, i, c.vocab_size);
      }
      // Position ids as transformers computes them, from the unpadded layout of the row.
      std::int32_t position;
      if (c.position_padding_idx) {
        // Non-pad tokens are numbered from padding_idx + 1; pad tokens get padding_idx.
        position = id != padding_idx ? ++roberta_position : padding_idx;
      } else {
        position = static_cast<std::int32_t>(i);
      }
      if (!in.attention_mask.empty() && in.attention_mask[i] == 0) continue;
      const std::int32_t type = in.type_ids.empty() ? 0 : in.type_ids[i];
      if (type < 0 || (c.type_vocab_size > 0 && type >= c.type_vocab_size) ||
          (c.type_vocab_size == 0 && type != 0)) {
        fail("sequence {} of the batch: token type id {} at position {} is outside [0, {})", s,
             type, i, std::max<std::int64_t>(c.type_vocab_size, 1));
      }
      out.ids.push_back(id);
      out.types.push_back(type);
      out.positions.push_back(position);
    }
    const std::int64_t length = out.tokens() - offset;
    if (length == 0) fail("sequence {} of the batch has no tokens", s);
    out.spans.push_back({offset, length});
  }
}

}  // namespace mcinfer::model
