#pragma once
// Token <-> id tables shared by the models.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/flat_map.h"

namespace mcinfer::tokenizer {

class Vocab {
 public:
  // Later duplicates of a token win, as when HF builds its HashMap. Throws Error naming
  // `origin` for negative or absurdly sparse ids.
  void build(const std::vector<std::pair<std::string, std::int32_t>>& entries,
             const std::string& origin);

  std::int32_t find(std::string_view token) const { return ids_.find(token); }
  const std::string* token(std::int32_t id) const {
    if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size() || !present_[id]) return nullptr;
    return &tokens_[id];
  }
  std::size_t size() const { return ids_.size(); }
  const StringIdMap& map() const { return ids_; }

 private:
  StringIdMap ids_;
  std::vector<std::string> tokens_;
  std::vector<bool> present_;
};

}  // namespace mcinfer::tokenizer
