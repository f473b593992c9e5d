// The arithmetic ceiling of one core: multiply-adds per second of the three AVX-512 dot-product
// instructions the encoder's GEMMs and attention run on, issued back to back on 12 independent
// 512-bit accumulators (more than latency × throughput on the CPUs we run on), one thread.
//   isa_peak            -> one JSON line: GFLOP/s (fp32 FMA, bf16 VDPBF16PS) and GOP/s (VPDPBUSD)
// An operation is a multiply or an add (a multiply-add counts 2), as in the GEMM rates of
// `mcinfer bench`. Compiled for AVX-512 (src/backends/cpu/CMakeLists.txt), so it runs on AVX-512
// CPUs only; there, an instruction the CPU lacks (AVX512_BF16, AVX512_VNNI) is reported as null.

#include <cpuid.h>
#include <immintrin.h>

#include <chrono>
#include <cstdio>

namespace {

bool os_saves_avx512() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 0xE6u) == 0xE6u;
}

// Leaf 7, subleaf `sub`: bit `bit` of register `reg` (0 eax, 1 ebx, 2 ecx).
bool cpuid7(unsigned sub, int reg, int bit) {
  unsigned r[4] = {};
  if (!__get_cpuid_count(7, sub, &r[0], &r[1], &r[2], &r[3])) return false;
  return (r[reg] >> bit) & 1u;
}

// Seconds for `iterations` rounds of `step` on each of 12 accumulators. The empty asm makes each
// accumulator live and opaque after every round, so that none is folded or dropped.
template <typename V, typename Step>
double time_chains(V seed, V increment, long iterations, Step step) {
  V a0 = seed, a1 = seed + increment, a2 = a1 + increment, a3 = a2 + increment;
  V a4 = a3 + increment, a5 = a4 + increment, a6 = a5 + increment, a7 = a6 + increment;
  V a8 = a7 + increment, a9 = a8 + increment, a10 = a9 + increment, a11 = a10 + increment;
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < iterations; ++i) {
    a0 = step(a0), a1 = step(a1), a2 = step(a2), a3 = step(a3), a4 = step(a4), a5 = step(a5);
    a6 = step(a6), a7 = step(a7), a8 = step(a8), a9 = step(a9), a10 = step(a10), a11 = step(a11);
    __asm__ volatile(""
                     : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6),
                       "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

constexpr long kIterations = 100'000'000;
constexpr double kChains = 12;

double fp32_gflops() {
  typedef float V __attribute__((vector_size(64)));
  const __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(1e-7f);
  const double s = time_chains<V>(V{} + 1.0f, V{} + 1.0f, kIterations,
                                  [&](V a) { return (V)_mm512_fmadd_ps((__m512)a, x, y); });
  return kIterations * kChains * 16 * 2 / s * 1e-9;
}

double bf16_gflops() {
  typedef float V __attribute__((vector_size(64)));
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3F80), y = (__m512bh)_mm512_set1_epi16(0x3380);
  const double s = time_chains<V>(V{} + 1.0f, V{} + 1.0f, kIterations,
                                  [&](V a) { return (V)_mm512_dpbf16_ps((__m512)a, x, y); });
  return kIterations * kChains * 32 * 2 / s * 1e-9;
}

double vnni_gops() {
  typedef int V __attribute__((vector_size(64)));
  const __m512i x = _mm512_set1_epi8(1), y = _mm512_set1_epi8(2);
  const double s = time_chains<V>(V{} + 1, V{} + 1, kIterations,
                                  [&](V a) { return (V)_mm512_dpbusd_epi32((__m512i)a, x, y); });
  return kIterations * kChains * 64 * 2 / s * 1e-9;
}

void print(const char* key, bool has, double (*measure)(), const char* tail) {
  if (has) {
    std::printf("\"%s\": %.1f%s", key, measure(), tail);
  } else {
    std::printf("\"%s\": null%s", key, tail);
  }
}

}  // namespace

int main() {
  const bool avx512 = os_saves_avx512() && cpuid7(0, 1, 16) && cpuid7(0, 1, 30);  // F, BW
  std::printf("{");
  print("fp32_fma_gflops", avx512, fp32_gflops, ", ");
  print("bf16_dpbf16ps_gflops", avx512 && cpuid7(1, 0, 5), bf16_gflops, ", ");
  print("int8_vpdpbusd_gops", avx512 && cpuid7(0, 2, 11), vnni_gops, "");
  std::printf("}\n");
}
