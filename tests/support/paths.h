#pragma once
// Locations that tests read from: the source tree's fixtures and a scratch directory.

#include <cstdlib>
#include <filesystem>
#include <string>

namespace mcinfer::testing {

inline std::filesystem::path source_dir() {
  if (const char* env = std::getenv("MCINFER_SOURCE_DIR")) return env;
  return MCINFER_SOURCE_DIR;
}

inline std::filesystem::path fixture(const std::string& relative) {
  return source_dir() / "tests" / "fixtures" / relative;
}

// A fresh, empty directory for one test; removed by the next run of the same test.
inline std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("mcinfer_test_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string read_file(const std::filesystem::path& path);

}  // namespace mcinfer::testing

#include <fstream>
#include <sstream>

inline std::string mcinfer::testing::read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
