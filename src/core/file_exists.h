#pragma once
// Whether a path exists, without throwing: a directory we cannot stat reads as absent, and the
// caller's own message (naming the file it needs) follows, not std::filesystem's.

#include <filesystem>
#include <system_error>

namespace mcinfer {

inline bool file_exists(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::exists(p, ec);
}

}  // namespace mcinfer
