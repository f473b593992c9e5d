#pragma once
// Model fixtures' reference inputs as a user's input file.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "support/paths.h"
#include "support/reference.h"

namespace mcinfer::testing {

// Writes the reference inputs of a model fixture as pre-tokenised JSONL rows (padding included,
// with its attention mask), ids "row<i>".
inline std::filesystem::path write_fixture_rows(const std::filesystem::path& dir,
                                                const std::string& model, int copies = 1) {
  Reference ref(fixture("models/" + model + "/reference.safetensors"));
  auto shape = ref.shape("input_ids");
  auto ids = ref.ints("input_ids"), mask = ref.ints("attention_mask"),
       types = ref.ints("token_type_ids");
  auto path = dir / (model + ".jsonl");
  std::ofstream out(path);
  for (int c = 0; c < copies; ++c) {
    for (std::int64_t b = 0; b < shape[0]; ++b) {
      Json row = {{"id", fmt::format("row{}", b + c * shape[0])}};
      std::vector<int> i, m, t;
      for (std::int64_t j = 0; j < shape[1]; ++j) {
        i.push_back(ids[b * shape[1] + j]);
        m.push_back(mask[b * shape[1] + j]);
        t.push_back(types[b * shape[1] + j]);
      }
      row["input_ids"] = i;
      row["attention_mask"] = m;
      row["token_type_ids"] = t;
      out << row.dump() << "\n";
    }
  }
  return path;
}

}  // namespace mcinfer::testing
