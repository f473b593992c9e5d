// The int8 GEMM epilogue alone (scale, bias, activation, store or quantize), one thread, on an
// s32 block in L2: bench/RESULTS.md's "epilogue microbenchmark".
//   epilogue_bench [ROWS COLS] [REPS]   (default 128 1536, 200)
// prints one line per case: ns per element, best of REPS passes, with the best ISA's kernels.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/cpu/isa.h"
#include "backends/cpu/kernels.h"

int main(int argc, char** argv) {
  using namespace mcinfer;
  using namespace mcinfer::cpu;
  const std::int64_t rows = argc > 2 ? std::stoll(argv[1]) : 128;
  const std::int64_t cols = argc > 2 ? std::stoll(argv[2]) : 1536;
  const int reps = argc > 3 ? std::stoi(argv[3]) : (argc == 2 ? std::stoi(argv[1]) : 200);
  const KernelTable& k = kernels_for(best_isa());
  const auto n = static_cast<std::size_t>(rows * cols);
  std::vector<std::int32_t> acc(n), scratch(n);
  for (std::size_t i = 0; i < n; ++i)
    acc[i] = static_cast<std::int32_t>((i * 7919) % 20001) - 10000;
  std::vector<float> row_scales(static_cast<std::size_t>(rows), 1e-4f),
      col_scales(static_cast<std::size_t>(cols), 2e-3f), bias(static_cast<std::size_t>(cols), 0.1f),
      mul(static_cast<std::size_t>(cols), 1.0f), f32(n), s8_scales(static_cast<std::size_t>(rows));
  std::vector<Bf16> bf16(n);
  std::vector<std::int8_t> s8(n);
  struct Case {
    const char* name;
    Activation act;
    Int8Output out;
  };
  const Case cases[] = {
      {"gelu -> s8",
       Activation::kGeluErf,
       {Int8Output::kS8, nullptr, nullptr, s8.data(), s8_scales.data(), mul.data()}},
      {"none -> s8",
       Activation::kNone,
       {Int8Output::kS8, nullptr, nullptr, s8.data(), s8_scales.data(), mul.data()}},
      {"none -> bf16", Activation::kNone, {Int8Output::kBf16, nullptr, bf16.data()}},
      {"none -> f32", Activation::kNone, {Int8Output::kF32, f32.data()}},
  };
  std::printf("int8 epilogue, %s kernels, [%lld, %lld] s32 block, best of %d passes\n",
              isa_name(best_isa()).data(), static_cast<long long>(rows),
              static_cast<long long>(cols), reps);
  for (const Case& c : cases) {
    double best = 1e30;
    for (int r = 0; r <= reps; ++r) {
      std::copy(acc.begin(), acc.end(), scratch.begin());  // the epilogue overwrites it
      const auto t0 = std::chrono::steady_clock::now();
      k.int8_epilogue(scratch.data(), rows, cols, row_scales.data(), col_scales.data(), bias.data(),
                      c.act, c.out);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r > 0) best = std::min(best, s);  // pass 0 warms up
    }
    std::printf("  %-13s %.3f ns per element\n", c.name, best * 1e9 / static_cast<double>(n));
  }
  return 0;
}
