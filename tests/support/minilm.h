#pragma once
// Where the real all-MiniLM-L6-v2 checkpoint is (scripts/get_minilm.sh puts it there). Tests that
// need it skip when it is absent, unless MCINFER_REQUIRE_MINILM=1 (set by scripts/test.sh and CI),
// which turns its absence into a failure.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/paths.h"

namespace mcinfer::testing {

inline std::filesystem::path minilm_dir() {
  if (const char* env = std::getenv("MCINFER_MINILM_DIR")) return env;
  return source_dir() / "models" / "all-MiniLM-L6-v2";
}

inline bool minilm_required() {
  const char* env = std::getenv("MCINFER_REQUIRE_MINILM");
  return env != nullptr && std::string(env) == "1";
}

}  // namespace mcinfer::testing

#define MCINFER_NEED_MINILM()                                                               \
  do {                                                                                      \
    if (!std::filesystem::exists(::mcinfer::testing::minilm_dir() / "model.safetensors")) { \
      if (::mcinfer::testing::minilm_required()) {                                          \
        FAIL() << "all-MiniLM-L6-v2 not found at " << ::mcinfer::testing::minilm_dir()      \
               << "; run scripts/get_minilm.sh";                                            \
      }                                                                                     \
      GTEST_SKIP() << "all-MiniLM-L6-v2 not found; run scripts/get_minilm.sh";              \
    }                                                                                       \
  } while (0)
