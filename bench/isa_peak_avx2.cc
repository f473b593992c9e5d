// The arithmetic ceiling of one core on AVX2 (no AVX-512): the instructions our AVX2 GEMMs
// (src/backends/cpu/gemm_avx2.h) and the GEMM library's AVX2 int8 kernels run on, issued back to
// back on 12 independent 256-bit accumulators, one thread.
//   isa_peak_avx2   -> one JSON line: GFLOP/s of vfmadd231ps (f32: 8 lanes, 2 operations each),
//                      GOP/s of vpmaddwd (s16·s16 pairs into s32: 16 multiply-adds, ours for s8)
//                      and of vpmaddubsw (u8·s8 pairs into saturating s16: 32 multiply-adds, the
//                      library's without VNNI), each counted as multiplies plus adds.
// Compiled for AVX2 and FMA (src/backends/cpu/CMakeLists.txt): it runs on any x86-64 CPU with
// them, AVX-512 ones included; bench/isa_peak covers the AVX-512 instructions.

#include <immintrin.h>

#include <chrono>
#include <cstdio>

namespace {

constexpr long kIterations = 200'000'000;
constexpr double kChains = 12;

// Seconds for kIterations rounds of `step` on each of 12 accumulators; the empty asm keeps each
// accumulator live and opaque after every round, so that none is folded, hoisted or dropped.
template <typename V, typename Step>
double time_chains(V seed, Step step) {
  V a0 = seed, a1 = seed, a2 = seed, a3 = seed, a4 = seed, a5 = seed;
  V a6 = seed, a7 = seed, a8 = seed, a9 = seed, a10 = seed, a11 = seed;
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < kIterations; ++i) {
    a0 = step(a0), a1 = step(a1), a2 = step(a2), a3 = step(a3), a4 = step(a4), a5 = step(a5);
    a6 = step(a6), a7 = step(a7), a8 = step(a8), a9 = step(a9), a10 = step(a10), a11 = step(a11);
    __asm__ volatile(""
                     : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6),
                       "+x"(a7), "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double per_second(double seconds, double ops_per_instruction) {
  return kIterations * kChains * ops_per_instruction / seconds * 1e-9;
}

}  // namespace

int main() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::printf(
        "{\"fp32_fma_ymm_gflops\": null, \"s16_vpmaddwd_ymm_gops\": null, "
        "\"u8s8_vpmaddubsw_ymm_gops\": null}\n");
    return 0;
  }
  const __m256 x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(1e-7f);
  const double fma =
      time_chains(_mm256_set1_ps(1.0f), [&](__m256 a) { return _mm256_fmadd_ps(a, x, y); });
  const __m256i w16 = _mm256_set1_epi16(3), w8 = _mm256_set1_epi8(2);
  const double madd =
      time_chains(_mm256_set1_epi32(1), [&](__m256i a) { return _mm256_madd_epi16(a, w16); });
  const double maddubs =
      time_chains(_mm256_set1_epi32(1), [&](__m256i a) { return _mm256_maddubs_epi16(a, w8); });
  std::printf(
      "{\"fp32_fma_ymm_gflops\": %.1f, \"s16_vpmaddwd_ymm_gops\": %.1f, "
      "\"u8s8_vpmaddubsw_ymm_gops\": %.1f}\n",
      per_second(fma, 16), per_second(madd, 32), per_second(maddubs, 64));
}
