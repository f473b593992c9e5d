#include "merge/shard_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string_view>

#include "core/error.h"

namespace mcinfer::merge {
namespace {

// A whole decimal number of at most 18 digits, else nullopt.
std::optional<std::uint64_t> parse_number(std::string_view digits) {
  std::uint64_t n = 0;
  if (digits.empty() || digits.size() > 18) return std::nullopt;
  auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (err != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return n;
}

std::optional<ShardFile> parse_shard_name(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  const std::string ext = path.extension().string();
  if (name.rfind("shard_", 0) != 0 || (ext != ".csv" && ext != ".jsonl")) return std::nullopt;
  const std::string_view numbers(name.data() + 6, name.size() - 6 - ext.size());
  ShardFile shard;
  shard.path = path;
  const std::size_t separator = numbers.find('_');
  std::optional<std::uint64_t> replica;
  if (separator == std::string_view::npos) {
    replica = parse_number(numbers);
  } else {
    shard.rank = parse_number(numbers.substr(0, separator));
    replica = parse_number(numbers.substr(separator + 1));
    if (!shard.rank) return std::nullopt;
  }
  if (!replica) return std::nullopt;
  shard.replica = *replica;
  return shard;
}

}  // namespace

std::string shard_file_name(std::optional<int> rank, int replica, data::LineFormat format) {
  const std::string_view ext = data::format_name(format);
  if (rank) return fmt::format("shard_{}_{}.{}", *rank, replica, ext);
  return fmt::format("shard_{}.{}", replica, ext);
}

std::vector<ShardFile> list_shards(const std::filesystem::path& dir) {
  std::vector<ShardFile> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (auto shard = parse_shard_name(entry.path())) found.push_back(std::move(*shard));
  }
  if (ec) fail("{}: cannot list directory: {}", dir.string(), ec.message());
  std::sort(found.begin(), found.end(), [](const ShardFile& a, const ShardFile& b) {
    // nullopt sorts before any rank.
    return std::tie(a.rank, a.replica) < std::tie(b.rank, b.replica);
  });
  return found;
}

}  // namespace mcinfer::merge
