// Arbitrary bytes as a shard and its manifest, as a crash (or a hostile user) may leave them:
// recovery keeps a consistent prefix or throws mcinfer::Error, never crashes, and what it keeps
// is self-consistent.
//
// Input: the first two bytes give the shard's length (little-endian, capped at the input); the
// shard is the next bytes, the manifest the rest.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "sched/manifest.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  static const fs::path dir = [] {
    fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    fs::path d = base / ("mcinfer_fuzz_shard_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  std::size_t shard_len = std::min<std::size_t>(data[0] | (data[1] << 8), size - 2);
  const fs::path shard = dir / "shard_0.csv";
  std::ofstream(shard, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data + 2), static_cast<std::streamsize>(shard_len));
  std::ofstream(mcinfer::sched::manifest_path(shard), std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data + 2 + shard_len),
             static_cast<std::streamsize>(size - 2 - shard_len));
  try {
    auto r = mcinfer::sched::recover_shard(shard, "id,a\n");
    if (fs::file_size(shard) != r.valid_end) std::abort();
    std::uint64_t previous = r.header_end;
    for (const auto& record : r.records) {
      if (record.end < previous || record.end > r.valid_end) std::abort();
      previous = record.end;
    }
  } catch (const mcinfer::Error&) {
  }
  return 0;
}
