#pragma once
// Whether XLA's CPU PJRT plugin is at hand (scripts/get_pjrt_cpu.sh installs it and prints its
// path; scripts/test.sh exports it as MCINFER_PJRT_CPU_PLUGIN). Tests that need it skip when it
// is absent, unless MCINFER_REQUIRE_PJRT=1 (set by scripts/test.sh and CI): then its absence is
// a failure.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace mcinfer::testing {

inline std::string pjrt_cpu_plugin() {
  const char* env = std::getenv("MCINFER_PJRT_CPU_PLUGIN");
  return env != nullptr && std::filesystem::exists(env) ? std::string(env) : std::string();
}

inline bool pjrt_required() {
  const char* env = std::getenv("MCINFER_REQUIRE_PJRT");
  return env != nullptr && std::string(env) == "1";
}

}  // namespace mcinfer::testing

#define MCINFER_NEED_PJRT_CPU()                                                                \
  do {                                                                                         \
    if (::mcinfer::testing::pjrt_cpu_plugin().empty()) {                                       \
      if (::mcinfer::testing::pjrt_required()) {                                               \
        FAIL() << "the PJRT CPU plugin is not at MCINFER_PJRT_CPU_PLUGIN; run "                \
                  "scripts/get_pjrt_cpu.sh";                                                   \
      }                                                                                        \
      GTEST_SKIP() << "no PJRT CPU plugin (MCINFER_PJRT_CPU_PLUGIN); scripts/get_pjrt_cpu.sh"; \
    }                                                                                          \
  } while (0)
