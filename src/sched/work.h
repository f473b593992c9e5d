#pragma once
// The unit of work of a run and the interface every schedule implements. A WorkSource hands
// batches to replicas; the in-process schedules live here, and a cross-process source (MPI ranks,
// Slurm/Kubernetes jobs) implements the same interface.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/rows.h"

namespace mcinfer::sched {

// One input row, tokenised and validated.
struct WorkItem {
  std::uint64_t ordinal = 0;   // position among the input's good rows (0-based)
  std::uint64_t position = 0;  // position in the schedule's stream (static: padded sampler
                               // stream, duplicates distinct; dynamic: the ordinal)
  data::RowId id;
  // --long-input chunk: this item is window `window` of the row's `windows` (see chunking.h);
  // every window of a row has the row's ordinal and position. Else 0 of 1.
  std::uint32_t window = 0;
  std::uint32_t windows = 1;
  std::vector<std::int32_t> ids;       // [length], special tokens included
  std::vector<std::int32_t> type_ids;  // [length] or empty
  std::vector<std::int32_t> mask;      // [length] or empty (pre-tokenised rows only)
};

struct Batch {
  std::uint64_t number = 0;  // order of creation, for logs and resume
  std::vector<WorkItem> items;
  std::int64_t real_tokens = 0;
  // What a padded engine would compute: rows × the longest row. mcinfer computes only real
  // tokens, but the budget (--batch-tokens) and the report count this, as the seed's recipe pays
  // it.
  std::int64_t padded_tokens = 0;

  void add(WorkItem item);
};

class WorkSource {
 public:
  virtual ~WorkSource() = default;
  // The next batch for `replica`, or nullopt when no work is left for it. Thread-safe; may block
  // while input is read. Throws Error for bad input (then every later call returns nullopt).
  virtual std::optional<Batch> next(int replica) = 0;
  // Makes every later next() return nullopt (a replica failed, or a stop was requested).
  virtual void stop() = 0;
};

}  // namespace mcinfer::sched
