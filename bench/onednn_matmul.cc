// oneDNN's matmul alone, one thread, on one GEMM shape of the encoder: the ceiling
// `bench/RESULTS.md` compares the model's GEMMs with ("the library alone on the run's shapes").
//   onednn_matmul M K N [f32|bf16|s8] [gelu] [REPS]
// prints one JSON line: the best and median GFLOP/s (GOP/s for s8) over REPS timed executions
// (default 10, after one untimed), y[M, N] = x[M, K] · w[K, N] (+ GELU-erf as a post-op with
// `gelu`; s8 writes s32 and takes no post-op). Weights in the layout the library picks (`any`),
// oneDNN 2.x API (Debian 12),
// as the CPU backend packs them; inputs random.

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <dnnl.hpp>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: onednn_matmul M K N [f32|bf16|s8] [gelu] [REPS]\n");
    return 2;
  }
  const dnnl::memory::dim m = std::stoll(argv[1]), k = std::stoll(argv[2]), n = std::stoll(argv[3]);
  const std::string type = argc > 4 ? argv[4] : "bf16";
  const bool gelu = argc > 5 && std::strcmp(argv[5], "gelu") == 0;
  const int reps = argc > 6 ? std::stoi(argv[6]) : 10;
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const dt in = type == "s8" ? dt::s8 : type == "bf16" ? dt::bf16 : dt::f32;
  const dt src_type = type == "s8" ? dt::u8 : in;  // oneDNN's int8 matmul: u8 · s8 on x86
  const dt out = type == "s8" ? dt::s32 : dt::f32;
  if (type == "s8" && gelu) {
    std::fprintf(stderr,
                 "onednn_matmul: s8 takes no post-op here (the model's epilogue is ours)\n");
    return 2;
  }
  omp_set_num_threads(1);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const dnnl::memory::desc x_md({m, k}, src_type, tag::ab), y_md({m, n}, out, tag::ab);
  const dnnl::memory::desc w_any({k, n}, in, tag::any), w_plain({k, n}, in, tag::ab);
  dnnl::primitive_attr attr;
  if (gelu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
    attr.set_post_ops(ops);
  }
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(x_md, w_any, y_md), attr, engine);
  dnnl::memory x(x_md, engine), w_src(w_plain, engine), w(pd.weights_desc(), engine),
      y(y_md, engine);
  // Random bytes are valid values of every type here except for NaNs in f32/bf16: fill with
  // small integers' bit patterns instead.
  auto fill = [](dnnl::memory& mem, std::size_t bytes) {
    auto* p = static_cast<unsigned char*>(mem.get_data_handle());
    for (std::size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>((i * 37 + 11) & 0x3F);
  };
  fill(x, x_md.get_size());
  fill(w_src, w_plain.get_size());
  dnnl::reorder(w_src, w).execute(stream, w_src, w);
  const dnnl::matmul mm(pd);
  auto run = [&] {
    mm.execute(stream, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, y}});
    stream.wait();
  };
  run();
  std::vector<double> rates;
  const double ops = 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(ops / s / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  std::printf(
      "{\"m\": %lld, \"k\": %lld, \"n\": %lld, \"type\": \"%s\", \"gelu\": %s, \"reps\": %d, "
      "\"best\": %.1f, \"median\": %.1f, \"impl\": \"%s\"}\n",
      static_cast<long long>(m), static_cast<long long>(k), static_cast<long long>(n), type.c_str(),
      gelu ? "true" : "false", reps, rates.back(), rates[rates.size() / 2], pd.impl_info_str());
  return 0;
}
