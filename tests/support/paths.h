#pragma once
// Locations that tests read from: the source tree's fixtures and a scratch directory.

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

namespace mcinfer::testing {

inline std::filesystem::path source_dir() {
  if (const char* env = std::getenv("MCINFER_SOURCE_DIR")) return env;
  return MCINFER_SOURCE_DIR;
}

inline std::filesystem::path fixture(const std::string& relative) {
  return source_dir() / "tests" / "fixtures" / relative;
}

// Removes the scratch directories a test process made when it exits.
struct ScratchCleaner {
  std::vector<std::filesystem::path> dirs;
  ~ScratchCleaner() {
    std::error_code ec;
    for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
  }
};
inline ScratchCleaner scratch_cleaner;

// A fresh, empty directory for one test, private to this process (ctest runs tests in parallel).
inline std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("mcinfer_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  scratch_cleaner.dirs.push_back(dir);
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
