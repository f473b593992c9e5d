#pragma once
// What this CPU can run, from cpuid and the register state the OS enables (XCR0), never from
// mcinfer or its GEMM library: a test that needs an instruction set then fails, instead of
// skipping, when the code under test wrongly decides that the CPU lacks it.

#include <cpuid.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace mcinfer::testing {

struct CpuFeatures {
  bool avx2 = false;
  bool avx512 = false;  // F, DQ, BW, VL, with the OS saving the zmm and mask registers
  bool avx512_bf16 = false, avx512_vnni = false, avx_vnni = false;
  bool amx_bf16 = false, amx_int8 = false;  // with the OS saving the tile state

  // What mcinfer runs natively: bf16 dot products (its bf16 path), int8 dot products (int8).
  bool native_bf16() const { return (avx512 && avx512_bf16) || amx_bf16; }
  bool native_int8() const { return (avx512 && avx512_vnni) || avx_vnni || amx_int8; }
  // Where --precision int8 runs at all: natively, or on our AVX2 kernels.
  bool int8() const { return avx2; }
  // Where --precision bf16 runs at all: natively, or emulated (MCINFER_EMULATED_BF16=1) by the
  // GEMM library on AVX-512 or by our kernels on AVX2.
  bool bf16() const { return native_bf16() || avx2; }

  // The hardware paths this CPU cannot exercise, in words. Every precision runs on every CPU
  // with AVX2 (bf16 emulated, int8 on our kernels), so only instruction sets are listed.
  std::vector<std::string> not_exercised() const {
    std::vector<std::string> out;
    if (!avx512_bf16)
      out.push_back(native_bf16() || !avx2 ? "avx512_bf16 dot products"
                                           : "avx512_bf16 dot products (bf16 runs emulated)");
    if (!amx_bf16) out.push_back("AMX-BF16");
    if (!native_int8()) out.push_back("int8 on VNNI (no avx512_vnni, avx_vnni or AMX-INT8)");
    if (!amx_int8) out.push_back("AMX-INT8");
    if (!avx_vnni) out.push_back("avx2_vnni (no avx_vnni)");
    if (!avx512) out.push_back("avx512 kernels");
    if (!avx2) out.push_back("avx2 kernels (and with them int8 and emulated bf16)");
    return out;
  }
};

inline CpuFeatures read_cpu_features() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(1, 0, &a, &b, &c, &d) || !(c & (1u << 27))) return f;  // no OSXSAVE
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  const std::uint64_t xcr0 = (static_cast<std::uint64_t>(hi) << 32) | lo;
  const bool ymm = (xcr0 & 0x6) == 0x6;
  const bool zmm = ymm && (xcr0 & 0xE0) == 0xE0;
  const bool tiles = (xcr0 & (3ull << 17)) == (3ull << 17);
  unsigned a7 = 0, b7 = 0, c7 = 0, d7 = 0;
  if (!__get_cpuid_count(7, 0, &a7, &b7, &c7, &d7)) return f;
  unsigned a71 = 0, b71 = 0, c71 = 0, d71 = 0;
  __get_cpuid_count(7, 1, &a71, &b71, &c71, &d71);
  auto bit = [](unsigned reg, int n) { return ((reg >> n) & 1u) != 0; };
  f.avx2 = ymm && bit(b7, 5);
  f.avx512 = zmm && bit(b7, 16) && bit(b7, 17) && bit(b7, 30) && bit(b7, 31);
  f.avx512_vnni = f.avx512 && bit(c7, 11);
  f.avx512_bf16 = f.avx512 && bit(a71, 5);
  f.avx_vnni = ymm && bit(a71, 4);
  f.amx_bf16 = tiles && bit(d7, 24) && bit(d7, 22);
  f.amx_int8 = tiles && bit(d7, 24) && bit(d7, 25);
  return f;
}

// MCINFER_REQUIRE_<what>=1: a test that needs <what> fails rather than skips (CI sets them).
inline bool required(const char* what) {
  const char* env = std::getenv((std::string("MCINFER_REQUIRE_") + what).c_str());
  return env != nullptr && std::string(env) == "1";
}

inline const CpuFeatures& cpu_features() {
  static const CpuFeatures f = read_cpu_features();
  return f;
}

// Whether bf16 runs in this process: natively, or emulated where the test setup (CTest, through
// mcinfer_add_test) sets MCINFER_EMULATED_BF16=1.
inline bool bf16_runs() {
  const char* env = std::getenv("MCINFER_EMULATED_BF16");
  const bool emulated = env != nullptr && std::string(env) == "1";
  return cpu_features().native_bf16() || (cpu_features().bf16() && emulated);
}

}  // namespace mcinfer::testing

// Skips the test (saying so) when the CPU lacks `feature`, a member of CpuFeatures or a call.
#define NEED_CPU(feature, what)                           \
  do {                                                    \
    if (!::mcinfer::testing::cpu_features().feature)      \
      GTEST_SKIP() << "this CPU has no " what " (cpuid)"; \
  } while (0)

// A bf16 test: it runs natively, or emulated on AVX-512 and AVX2 CPUs (from cpuid: if bf16 broke
// here, the bf16 tests fail instead of skipping). It skips only on a CPU without AVX2, or when run
// outside CTest without MCINFER_EMULATED_BF16=1; MCINFER_REQUIRE_BF16=1 (CI) turns that skip into
// a failure: bf16 must have run.
#define NEED_BF16()                                                                           \
  do {                                                                                        \
    if (!::mcinfer::testing::bf16_runs()) {                                                   \
      if (::mcinfer::testing::required("BF16"))                                               \
        FAIL() << "MCINFER_REQUIRE_BF16=1 but bf16 did not run: no native bf16 and "          \
               << (::mcinfer::testing::cpu_features().avx2 ? "MCINFER_EMULATED_BF16 unset"    \
                                                           : "no AVX2 to emulate it on");     \
      GTEST_SKIP() << (::mcinfer::testing::cpu_features().avx2                                \
                           ? "no native bf16 and MCINFER_EMULATED_BF16 unset (CTest sets it)" \
                           : "this CPU has neither native bf16 nor AVX2 (cpuid)");            \
    }                                                                                         \
  } while (0)
