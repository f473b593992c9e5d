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
