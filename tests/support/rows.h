#pragma once
// Many pre-tokenised input rows for the run and resume tests, made from a model fixture's
// reference inputs: real token ids, each row cut to a random length so that batches vary.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/json.h"
#include "support/paths.h"
#include "support/reference.h"

namespace mcinfer::testing {

// Writes `count` JSONL rows {"id": id_of(i), "input_ids": [...]} to `path`; `seed` fixes the
// lengths.
inline std::filesystem::path write_varied_rows(const std::filesystem::path& path,
                                               const std::string& model, int count, unsigned seed,
                                               const std::function<std::string(int)>& id_of) {
  Reference ref(fixture("models/" + model + "/reference.safetensors"));
  auto shape = ref.shape("input_ids");
  auto ids = ref.ints("input_ids"), mask = ref.ints("attention_mask");
  std::ofstream out(path);
  std::mt19937 rng(seed);
  for (int i = 0; i < count; ++i) {
    const std::int64_t b = i % shape[0];
    std::vector<int> row;
    for (std::int64_t j = 0; j < shape[1]; ++j) {
      if (mask[b * shape[1] + j]) row.push_back(ids[b * shape[1] + j]);
    }
    row.resize(1 + rng() % row.size());
    out << Json({{"id", id_of(i)}, {"input_ids", row}}).dump() << "\n";
  }
  return path;
}

}  // namespace mcinfer::testing
