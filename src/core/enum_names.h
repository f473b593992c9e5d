#pragma once
// One table per enum gives both directions, name → value and value → name, so the spelling a
// flag accepts, the one a report writes and the one a resume fingerprint records are the same
// string by construction.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mcinfer {

template <typename Enum, std::size_t N>
struct EnumNames {
  std::array<std::pair<Enum, std::string_view>, N> entries;

  constexpr std::string_view name(Enum value) const {
    for (const auto& [v, n] : entries)
      if (v == value) return n;
    return "?";
  }
  constexpr std::optional<Enum> parse(std::string_view text) const {
    for (const auto& [v, n] : entries)
      if (n == text) return v;
    return std::nullopt;
  }
  // Every name, in the table's order: what a flag accepts.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : entries) out.emplace_back(entry.second);
    return out;
  }
  // "a, b or c": for messages that list what is accepted.
  std::string choices() const {
    std::string out;
    for (std::size_t i = 0; i < N; ++i) {
      if (i > 0) out += i + 1 == N ? " or " : ", ";
      out += entries[i].second;
    }
    return out;
  }
};

}  // namespace mcinfer
