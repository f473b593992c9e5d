#include "backends/cpu/gemm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "backends/cpu/gemm_avx2.h"
#include "backends/cpu/gemm_engine.h"
#include "backends/cpu/isa.h"
#include "core/error.h"
#include "core/fault.h"

namespace mcinfer::cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

constexpr std::int64_t kRowQuantum = 16;
// An s8 GEMM runs a block of rows per thread at a time, then our epilogue reads its s32 products
// while they are still in L2: as many rows as fill 768 KiB of products, 64 to 256 (rounded down
// to a multiple of round_rows' step). oneDNN 2.6 AMX-INT8, one core, 4096 rows (ms per GEMM, with
// our epilogue, f32 out):
//   768 → 3072: 64 rows 17.6, 128 18.5, 256 18.1, one call 23.4
//   3072 → 768: 64 rows 12.9, 128 12.5, 256 12.2, one call 12.0
// (its own epilogue cannot take our per-row scales: a per-row binary post-op drops it to the
// reference kernel).
constexpr std::int64_t kS8BlockBytes = 768 * 1024;

// Below AVX-512, oneDNN 2.6 has no f32 matmul kernel on blocked weights: its matmul is
// "gemm:jit", the sgemm, which picks its kernel by the row count, each grouping a row's sums its
// own way, so a row's outputs changed with the batch it was in (2.2e-7 on MiniLM, Zen 3). Our
// AVX2 GEMM (gemm_avx2.h) runs there instead. Where it cannot (MCINFER_MAX_ISA=generic, or a CPU
// without AVX2) the sgemm still runs, on calls of a multiple of 48 rows and at most 240, which
// always take its no-copy kernel with no partial unroll (its rule: 1/m + 1/n >= 0.0038), so that
// a row's sums do not depend on the other rows (F32RowOutputsDoNotDependOnTheRowCount).
constexpr std::int64_t kSgemmRowQuantum = 48;
constexpr std::int64_t kSgemmCallRows = 240;

bool library_has_avx512() {
  return (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
}

bool own_kernels_have_avx2() { return best_isa() >= Isa::kAvx2; }

// f32 GEMMs on our AVX2 kernels where the library has no AVX-512 (its sgemm reached ~63% of a
// Zen 3 core's FMA peak, ours ~90%: bench/RESULTS.md).
bool own_f32() { return !library_has_avx512() && own_kernels_have_avx2(); }

// s8 GEMMs on our AVX2 kernels where the library has no VNNI (its u8·s8 pair sums saturate).
bool own_s8() { return native_int8_isa().empty() && own_kernels_have_avx2(); }

// bf16 GEMMs on our AVX2 kernels where the library has no AVX-512: it has no bf16 matmul there at
// all, and ours lets the bf16 numerics run (MCINFER_EMULATED_BF16=1) on AVX2 CPUs.
bool own_bf16() { return !library_has_avx512() && own_kernels_have_avx2(); }

bool row_count_picks_sgemm_kernel() { return !library_has_avx512() && !own_f32(); }

std::int64_t row_quantum() {
  return row_count_picks_sgemm_kernel() ? kSgemmRowQuantum : kRowQuantum;
}

std::int64_t s8_block_rows(std::int64_t out) {
  const std::int64_t rows = std::clamp<std::int64_t>(kS8BlockBytes / (out * 4), 64, 256);
  return rows / row_quantum() * row_quantum();
}

dnnl::algorithm eltwise_for(Activation act) {
  switch (act) {
    case Activation::kGeluErf:
      return dnnl::algorithm::eltwise_gelu_erf;
    case Activation::kGeluTanh:
      return dnnl::algorithm::eltwise_gelu_tanh;
    case Activation::kRelu:
      return dnnl::algorithm::eltwise_relu;
    case Activation::kTanh:
      return dnnl::algorithm::eltwise_tanh;
    case Activation::kSilu:  // swish with alpha 1 (make_pd passes it)
      return dnnl::algorithm::eltwise_swish;
    case Activation::kNone:
      break;
  }
  return dnnl::algorithm::undef;
}

dt library_type(DType type) {
  switch (type) {
    case DType::kBf16:
      return dt::bf16;
    case DType::kS8:
      return dt::s8;
    case DType::kF32:
      break;
  }
  return dt::f32;
}

// Element i of [out, in] weights of f32 or bf16.
float weight_value(const void* weight, DType weight_type, std::int64_t i) {
  if (weight_type == DType::kBf16) {
    const std::uint32_t bits = static_cast<std::uint32_t>(static_cast<const Bf16*>(weight)[i])
                               << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  return static_cast<const float*>(weight)[i];
}

// W [out, in] (f32 or bf16), each column i multiplied by smooth[i] when smooth is not null →
// q [out, in] and one scale per output channel.
void quantize_weights(const void* weight, DType weight_type, std::int64_t out, std::int64_t in,
                      const float* smooth, std::int8_t* q, float* scales) {
  constexpr float levels = 127.0f;
  auto value = [&](std::int64_t o, std::int64_t i) {
    const float w = weight_value(weight, weight_type, o * in + i);
    return smooth ? w * smooth[i] : w;
  };
  for (std::int64_t o = 0; o < out; ++o) {
    float amax = 0;
    for (std::int64_t i = 0; i < in; ++i) amax = std::max(amax, std::fabs(value(o, i)));
    if (!std::isfinite(amax)) fail("a weight row of a {}x{} layer is not finite", out, in);
    scales[o] = amax / levels;
    const float inv = amax > 0 ? levels / amax : 0.0f;
    for (std::int64_t i = 0; i < in; ++i) {
      const float v = std::nearbyint(value(o, i) * inv);
      q[o * in + i] = static_cast<std::int8_t>(std::clamp(v, -levels, levels));
    }
  }
}

// SmoothQuant's factors with α = 0.5: s[i] = sqrt(input_max[i] / max_o |W[o, i]|), 1 where
// either is 0 (a channel never seen, or a dead weight column), within [1, 1e4]. Below 1 a channel
// whose calibrated range was smaller than its weights' would be amplified by 1/s; a row with a
// value there that the calibration rows never showed then set the row's scale and crushed its
// other channels (MiniLM's corpus row 2462, "！？\t[PAD],": cosine 0.946 to fp32, every other row
// ≥ 0.992; with s ≥ 1 that row is 0.993 and the corpus mean unchanged, 0.99804, Zen 3). So
// smoothing only moves range out of the activations, never into them.
std::vector<float> smoothing(const void* weight, DType weight_type, std::int64_t out,
                             std::int64_t in, const float* input_max) {
  std::vector<float> column_max(static_cast<std::size_t>(in), 0.0f);
  for (std::int64_t o = 0; o < out; ++o)
    for (std::int64_t i = 0; i < in; ++i)
      column_max[i] =
          std::max(column_max[i], std::fabs(weight_value(weight, weight_type, o * in + i)));
  std::vector<float> s(static_cast<std::size_t>(in), 1.0f);
  for (std::int64_t i = 0; i < in; ++i) {
    if (!(input_max[i] > 0) || !(column_max[i] > 0) || !std::isfinite(input_max[i])) continue;
    s[i] = std::clamp(std::sqrt(input_max[i] / column_max[i]), 1.0f, 1e4f);
  }
  return s;
}

// src is of the weights' type; dst of `dst_type`.
dnnl::matmul::primitive_desc make_pd(const dnnl::engine& engine, std::int64_t rows, std::int64_t in,
                                     std::int64_t out, const dnnl::memory::desc& weights,
                                     bool has_bias, Activation act, dt dst_type) {
  dnnl::memory::desc src({rows, in}, weights.data_type(), tag::ab);
  dnnl::memory::desc dst({rows, out}, dst_type, tag::ab);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (act != Activation::kNone) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, eltwise_for(act), act == Activation::kSilu ? 1.0f : 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  if (has_bias) {
    dnnl::memory::desc bias({1, out}, dt::f32, tag::ab);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, bias, dst), attr, engine);
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, dst), attr, engine);
}

// The output rows from `row` on (rows of `cols` values).
Int8Output rows_from(Int8Output out, std::int64_t row, std::int64_t cols) {
  if (out.f32) out.f32 += row * cols;
  if (out.bf16) out.bf16 += row * cols;
  if (out.s8) out.s8 += row * cols;
  if (out.s8_scales) out.s8_scales += row;
  return out;
}

}  // namespace

std::string native_bf16_isa() {
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  if (isa == dnnl_cpu_isa_avx512_core_amx) return "amx_bf16";
  // The ISA values are bit sets: avx512_core_bf16 includes every bit of the ISAs below it.
  if ((isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16) return "avx512_bf16";
  return "";
}

std::string emulated_bf16_isa() {
  if (library_has_avx512()) return "avx512_core";
  return own_bf16() ? "avx2 (ours)" : "";
}

bool bf16_gemm_is_ours() { return own_bf16(); }

std::string native_int8_isa() {
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  if (isa == dnnl_cpu_isa_avx512_core_amx) return "amx_int8";
  if ((isa & dnnl_cpu_isa_avx512_core_vnni) == dnnl_cpu_isa_avx512_core_vnni) return "avx512_vnni";
  if ((isa & dnnl_cpu_isa_avx2_vnni) == dnnl_cpu_isa_avx2_vnni) return "avx2_vnni";
  return "";
}

std::string int8_isa() {
  std::string native = native_int8_isa();
  if (!native.empty()) return native;
  return own_s8() ? "avx2" : "";
}

std::string gemm_isa_name() {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    default:
      return "sse41 or older";
  }
}

std::string gemm_description() {
  std::string ours;
  for (const auto& [runs, name] :
       {std::pair{own_f32(), "f32"}, std::pair{own_bf16(), "bf16"}, std::pair{own_s8(), "s8"}}) {
    if (!runs) continue;
    if (!ours.empty()) ours += ", ";
    ours += name;
  }
  if (ours.empty()) return "oneDNN GEMM up to " + gemm_isa_name();
  return "GEMMs: " + ours + " ours (avx2), others oneDNN up to " + gemm_isa_name();
}

GemmEngine::GemmEngine() : impl_(std::make_unique<Impl>()) {
  // Each GemmRunner caches its compiled kernels itself. oneDNN 2.6's own process-wide cache is
  // turned off: ThreadSanitizer reports races in it when replicas create kernels at once.
  dnnl::set_primitive_cache_capacity(0);
}
GemmEngine::~GemmEngine() = default;

struct PackedLinear::Impl {
  dnnl::memory::desc packed_desc;
  dnnl::memory packed;
  AlignedBuffer<float> bias;
  AlignedBuffer<float> weight_scales;     // s8 weights only
  AlignedBuffer<float> input_multiplier;  // s8 weights with smoothing only
  bool has_bias = false;
  const dnnl::engine* engine = nullptr;
  // Where our AVX2 kernels run this layer (own_f32, own_s8): their panels (gemm_avx2.h) instead
  // of the library's layout.
  bool own = false;
  AlignedBuffer<float> own_f32;
  AlignedBuffer<Bf16> own_bf16;
  AlignedBuffer<std::int8_t> own_s8;

  // Packs `weight` (of the compute type, or f32/bf16 widened for f32) in the library's layout.
  void pack_for_library(const dnnl::engine& eng, const void* weight, DType weight_type,
                        std::int64_t out, std::int64_t in, DType compute, bool with_bias);
  void pack_own(const void* weight, DType weight_type, std::int64_t out, std::int64_t in,
                DType compute);
};

void PackedLinear::Impl::pack_for_library(const dnnl::engine& eng, const void* weight,
                                          DType weight_type, std::int64_t out, std::int64_t in,
                                          DType compute, bool with_bias) {
  // The library chooses the blocked layout; it does not depend on the row count, so one packing
  // serves every batch (checked when each row count's kernel is created).
  dnnl::memory::desc any({in, out}, library_type(compute), tag::any);
  const bool s8 = compute == DType::kS8;
  // An s8 GEMM writes s32 and takes its bias in our epilogue.
  auto pd =
      make_pd(eng, 128, in, out, any, with_bias && !s8, Activation::kNone, s8 ? dt::s32 : dt::f32);
  packed_desc = pd.weights_desc();
  packed = dnnl::memory(packed_desc, eng);
  // Wᵀ as [in, out] is W [out, in] read with strides (1, in): the 'ba' layout. The reorder also
  // converts f32 to bf16 (rounding to nearest even) when the types differ.
  dnnl::memory plain({{in, out}, library_type(weight_type), tag::ba}, eng,
                     const_cast<void*>(weight));
  dnnl::stream stream(eng);
  dnnl::reorder(plain, packed).execute(stream, plain, packed);
  stream.wait();
}

void PackedLinear::Impl::pack_own(const void* weight, DType weight_type, std::int64_t out,
                                  std::int64_t in, DType compute) {
  own = true;
  if (weight_type == DType::kS8) {
    own_s8.resize(static_cast<std::size_t>(avx2::packed_s8_size(out, in)));
    avx2::pack_s8(static_cast<const std::int8_t*>(weight), out, in, own_s8.data());
    return;
  }
  if (compute == DType::kBf16) {
    // f32 weights rounded to nearest even, as the library's reorder rounds them.
    std::vector<Bf16> rounded;
    const Bf16* w = static_cast<const Bf16*>(weight);
    if (weight_type == DType::kF32) {
      rounded.resize(static_cast<std::size_t>(out * in));
      avx2_kernels().to_bf16(static_cast<const float*>(weight), rounded.data(), out * in);
      w = rounded.data();
    }
    own_bf16.resize(static_cast<std::size_t>(avx2::packed_bf16_size(out, in)));
    avx2::pack_bf16(w, out, in, in, own_bf16.data());
    return;
  }
  std::vector<float> widened;
  const float* w = static_cast<const float*>(weight);
  if (weight_type == DType::kBf16) {  // a bf16 checkpoint run in fp32
    widened.resize(static_cast<std::size_t>(out * in));
    for (std::int64_t i = 0; i < out * in; ++i) widened[i] = weight_value(weight, weight_type, i);
    w = widened.data();
  }
  own_f32.resize(static_cast<std::size_t>(avx2::packed_f32_size(out, in)));
  avx2::pack_f32(w, out, in, own_f32.data());
}

PackedLinear::PackedLinear(const GemmEngine& engine, const void* weight, DType weight_type,
                           const float* bias, std::int64_t out, std::int64_t in, DType compute)
    : PackedLinear(engine, weight, weight_type, bias, out, in, compute, nullptr) {}

PackedLinear::PackedLinear(const GemmEngine& engine, const void* weight, DType weight_type,
                           const float* bias, std::int64_t out, std::int64_t in,
                           const float* input_max)
    : PackedLinear(engine, weight, weight_type, bias, out, in, DType::kS8, input_max) {}

PackedLinear::PackedLinear(const GemmEngine& engine, const void* weight, DType weight_type,
                           const float* bias, std::int64_t out, std::int64_t in, DType compute,
                           const float* input_max)
    : in_(in), out_(out), compute_(compute), impl_(std::make_unique<Impl>()) {
  const dnnl::engine& eng = engine.impl().engine;
  impl_->engine = &eng;
  AlignedBuffer<std::int8_t> quantized;
  if (compute == DType::kS8) {
    quantized.resize(static_cast<std::size_t>(out * in));
    impl_->weight_scales.resize(static_cast<std::size_t>(out));
    std::vector<float> smooth;
    if (input_max) {
      smooth = smoothing(weight, weight_type, out, in, input_max);
      impl_->input_multiplier.resize(static_cast<std::size_t>(in));
      for (std::int64_t i = 0; i < in; ++i) impl_->input_multiplier.data()[i] = 1.0f / smooth[i];
    }
    quantize_weights(weight, weight_type, out, in, input_max ? smooth.data() : nullptr,
                     quantized.data(), impl_->weight_scales.data());
    weight = quantized.data();
    weight_type = DType::kS8;
  }
  if ((compute == DType::kF32 && own_f32()) || (compute == DType::kS8 && own_s8()) ||
      (compute == DType::kBf16 && own_bf16())) {
    impl_->pack_own(weight, weight_type, out, in, compute);
  } else {
    impl_->pack_for_library(eng, weight, weight_type, out, in, compute, bias != nullptr);
  }
  if (bias != nullptr) {
    impl_->has_bias = true;
    impl_->bias.resize(static_cast<std::size_t>(out));
    std::memcpy(impl_->bias.data(), bias, sizeof(float) * static_cast<std::size_t>(out));
  }
}

PackedLinear::~PackedLinear() = default;
PackedLinear::PackedLinear(PackedLinear&&) noexcept = default;

const float* PackedLinear::bias() const { return impl_->has_bias ? impl_->bias.data() : nullptr; }

const float* PackedLinear::weight_scales() const {
  return compute_ == DType::kS8 ? impl_->weight_scales.data() : nullptr;
}

const float* PackedLinear::input_multiplier() const {
  return impl_->input_multiplier.size() > 0 ? impl_->input_multiplier.data() : nullptr;
}

std::size_t PackedLinear::packed_bytes() const {
  return (impl_->own ? impl_->own_f32.capacity_bytes() + impl_->own_bf16.capacity_bytes() +
                           impl_->own_s8.capacity_bytes()
                     : impl_->packed_desc.get_size()) +
         impl_->bias.capacity_bytes() + impl_->weight_scales.capacity_bytes() +
         impl_->input_multiplier.capacity_bytes();
}

struct GemmRunner::Impl {
  const GemmEngine* engine;
  dnnl::stream stream;
  // Kernels are compiled per shape, not per weight matrix: the 12 layers of a BERT share four
  // shapes. Keyed by weights, a 5,000-row run of long-tailed lengths compiled 48 kernels per
  // padded row count, and their code grew a bert-base process by ~300 MiB.
  struct Key {
    std::int64_t in, out;
    DType compute;
    std::int64_t rows;
    Activation act;
    bool with_bias;
    DType dst;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return (static_cast<std::size_t>(k.in) * 0x100000001B3ULL) ^
             (static_cast<std::size_t>(k.out) * 0xC2B2AE3D27D4EB4FULL) ^
             (static_cast<std::size_t>(k.compute) << 9) ^
             (static_cast<std::size_t>(k.rows) * 0x9E3779B97F4A7C15ULL) ^
             (static_cast<std::size_t>(k.act) << 1) ^ static_cast<std::size_t>(k.with_bias) ^
             (static_cast<std::size_t>(k.dst) << 5);
    }
  };
  struct Kernel {
    dnnl::matmul matmul;
    dnnl::memory::desc weights;  // the packed layout it reads
  };
  std::unordered_map<Key, Kernel, KeyHash> kernels;
  AlignedBuffer<std::uint8_t> scratch;
  AlignedBuffer<std::int32_t> s32;  // one block of an s8 GEMM's products
  AlignedBuffer<std::int16_t> s16;  // our s8 kernels' inputs widened (gemm_avx2.h)
  AlignedBuffer<float> f32;         // our bf16 kernels' inputs widened (gemm_avx2.h)

  // The kernel for `rows` (already rounded) of w, compiled on first use.
  const Kernel& kernel(const PackedLinear& w, std::int64_t rows, Activation act, bool bias,
                       DType y_type);
  void run(const Kernel& kernel, const PackedLinear& w, const void* x, std::int64_t rows, void* y,
           dt y_type, bool bias);
  // y[rows, out] = x · Wᵀ in s32 for s8 weights, on our kernels or the library's.
  void run_s8(const PackedLinear& w, const std::int8_t* x, std::int64_t rows, std::int32_t* y,
              int threads);
};

void GemmRunner::Impl::run_s8(const PackedLinear& w, const std::int8_t* x, std::int64_t rows,
                              std::int32_t* y, int threads) {
  const PackedLinear::Impl& wi = w.impl();
  if (wi.own) {
    const std::size_t need = static_cast<std::size_t>(avx2::s8_scratch_size(rows, w.in_features()));
    if (s16.size() < need) s16.resize(need);
    avx2::gemm_s8(wi.own_s8.data(), x, rows, w.in_features(), w.out_features(), y, s16.data(),
                  threads);
    return;
  }
  // The library's kernels take whole steps of rows (x and y have room for them).
  const std::int64_t padded = round_rows(rows);
  const Kernel& k = kernel(w, padded, Activation::kNone, false, DType::kS8);
  run(k, w, x, padded, y, dt::s32, false);
}

const GemmRunner::Impl::Kernel& GemmRunner::Impl::kernel(const PackedLinear& w, std::int64_t rows,
                                                         Activation act, bool bias, DType y_type) {
  const PackedLinear::Impl& wi = w.impl();
  Key key{w.in_features(), w.out_features(), w.compute_type(), rows, act, bias, y_type};
  auto it = kernels.find(key);
  if (it == kernels.end()) {
    const dt dst = w.compute_type() == DType::kS8 ? dt::s32 : library_type(y_type);
    auto pd = make_pd(*wi.engine, rows, w.in_features(), w.out_features(), wi.packed_desc, bias,
                      act, dst);
    if (pd.weights_desc() != wi.packed_desc) {
      fail("internal: GEMM weight layout differs for {} rows", rows);
    }
    std::size_t need = pd.scratchpad_desc().get_size();
    if (need > scratch.size()) scratch.resize(need);
    it = kernels.emplace(key, Kernel{dnnl::matmul(pd), pd.weights_desc()}).first;
  } else if (it->second.weights != wi.packed_desc) {
    fail("internal: GEMM weight layout differs between two {}x{} matrices", w.out_features(),
         w.in_features());
  }
  return it->second;
}

void GemmRunner::Impl::run(const Kernel& kernel, const PackedLinear& w, const void* x,
                           std::int64_t rows, void* y, dt y_type, bool bias) {
  const PackedLinear::Impl& wi = w.impl();
  const dnnl::engine& eng = *wi.engine;
  dnnl::memory src({{rows, w.in_features()}, library_type(w.compute_type()), tag::ab}, eng,
                   const_cast<void*>(x));
  dnnl::memory dst({{rows, w.out_features()}, y_type, tag::ab}, eng, y);
  dnnl::memory scratch_memory({{static_cast<std::int64_t>(scratch.size())}, dt::u8, tag::a}, eng,
                              scratch.data());
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, src},
                                                {DNNL_ARG_WEIGHTS, wi.packed},
                                                {DNNL_ARG_DST, dst},
                                                {DNNL_ARG_SCRATCHPAD, scratch_memory}};
  if (bias) {
    args.emplace(DNNL_ARG_BIAS, dnnl::memory({{1, w.out_features()}, dt::f32, tag::ab}, eng,
                                             const_cast<float*>(wi.bias.data())));
  }
  kernel.matmul.execute(stream, args);
  stream.wait();
}

GemmRunner::GemmRunner(const GemmEngine& engine, int threads)
    : impl_(std::make_unique<Impl>()), threads_(threads < 1 ? 1 : threads) {
  impl_->engine = &engine;
  impl_->stream = dnnl::stream(engine.impl().engine);
  impl_->scratch.resize(64);
}

GemmRunner::~GemmRunner() = default;

std::int64_t GemmRunner::round_rows(std::int64_t rows) {
  const std::int64_t step = row_quantum();
  // Blocked-weight kernels take any count up to one step as it is; the sgemm needs whole steps.
  if (step == kRowQuantum && rows <= step) return rows;
  return (rows + step - 1) / step * step;
}

std::size_t GemmRunner::compiled_kernels() const { return impl_->kernels.size(); }

void GemmRunner::linear(const PackedLinear& w, const void* x, std::int64_t rows, void* y,
                        DType y_type, Activation act, bool with_bias) {
  if (rows <= 0) return;
  if (w.compute_type() == DType::kS8) fail("internal: s8 weights go through linear_s8");
  if (w.compute_type() == DType::kF32 && y_type != DType::kF32)
    fail("internal: an f32 GEMM writes f32 only");
  // The OpenMP team size is per calling thread: each replica thread sets its own.
  if (omp_get_max_threads() != threads_) omp_set_num_threads(threads_);
  const bool bias = w.impl().has_bias && with_bias;
  if (w.impl().own && w.compute_type() == DType::kBf16) {
    const std::int64_t in = w.in_features(), out = w.out_features();
    const auto need = static_cast<std::size_t>(avx2::bf16_scratch_size(rows, in));
    if (impl_->f32.size() < need) impl_->f32.resize(need);
    avx2::Bf16Output dst{nullptr, nullptr, out};
    if (y_type == DType::kBf16)
      dst.bf16 = static_cast<Bf16*>(y);
    else
      dst.f32 = static_cast<float*>(y);
    avx2::gemm_bf16(w.impl().own_bf16.data(), static_cast<const Bf16*>(x), in, rows, in, out,
                    bias ? w.impl().bias.data() : nullptr, act, avx2_kernels(), dst,
                    impl_->f32.data(), threads_);
    return;
  }
  if (w.impl().own) {
    avx2::gemm_f32(w.impl().own_f32.data(), static_cast<const float*>(x), rows, w.in_features(),
                   w.out_features(), bias ? w.impl().bias.data() : nullptr, act, avx2_kernels(),
                   static_cast<float*>(y), threads_);
    return;
  }
  const std::int64_t block = row_count_picks_sgemm_kernel() ? kSgemmCallRows : rows;
  const dt out_type = library_type(y_type);
  const std::size_t x_row_bytes =
      w.in_features() * dnnl::memory::data_type_size(library_type(w.compute_type()));
  const std::size_t y_row_bytes = w.out_features() * dnnl::memory::data_type_size(out_type);
  const auto* x_bytes = static_cast<const std::uint8_t*>(x);
  auto* y_bytes = static_cast<std::uint8_t*>(y);
  // Blocks start at multiples of `block` (a multiple of the rounding when it is not `rows`), so
  // each block's rounded row count stays inside the caller's round_rows(rows) rows.
  for (std::int64_t begin = 0; begin < rows; begin += block) {
    const std::int64_t padded = round_rows(std::min(block, rows - begin));
    const Impl::Kernel& kernel = impl_->kernel(w, padded, act, bias, y_type);
    impl_->run(kernel, w, x_bytes + begin * x_row_bytes, padded, y_bytes + begin * y_row_bytes,
               out_type, bias);
  }
}

void GemmRunner::library_s8(const PackedLinear& w, const std::int8_t* x, std::int64_t rows,
                            std::int32_t* y) {
  if (rows <= 0) return;
  if (w.compute_type() != DType::kS8) fail("internal: library_s8 needs s8 weights");
  if (omp_get_max_threads() != threads_) omp_set_num_threads(threads_);
  impl_->run_s8(w, x, rows, y, threads_);
}

void GemmRunner::linear_s8(const PackedLinear& w, const std::int8_t* x, const float* x_scales,
                           std::int64_t rows, Int8Output out, Activation act,
                           const KernelTable& kernels) {
  if (rows <= 0) return;
  if (w.compute_type() != DType::kS8) fail("internal: linear_s8 needs s8 weights");
  if (omp_get_max_threads() != threads_) omp_set_num_threads(threads_);
  const std::int64_t n = w.out_features(), k = w.in_features();
  const std::int64_t block = s8_block_rows(n) * threads_;
  const std::size_t need = static_cast<std::size_t>(block * n);
  if (impl_->s32.size() < need) impl_->s32.resize(need);
  const float* bias = w.bias();
  const float* col_scales = w.weight_scales();
  // Blocks start at multiples of `block` (a multiple of round_rows' step), so each block's
  // rounded row count stays inside the caller's padded_rows(rows) rows.
  for (std::int64_t begin = 0; begin < rows; begin += block) {
    const std::int64_t count = std::min(block, rows - begin);
    impl_->run_s8(w, x + begin * k, count, impl_->s32.data(), threads_);
    if (fault_active("int8-gemm-wrong")) {
      // A broken kernel for the tests that must catch one: the last 16 output channels lost.
      for (std::int64_t r = 0; r < count; ++r)
        std::fill_n(impl_->s32.data() + r * n + std::max<std::int64_t>(0, n - 16),
                    std::min<std::int64_t>(16, n), 0);
    }
    const Int8Output at = rows_from(out, begin, n);
    const float* row_scales = x_scales + begin;
    std::int32_t* acc = impl_->s32.data();
    const int threads = static_cast<int>(std::min<std::int64_t>(threads_, count));
    if (threads <= 1) {
      kernels.int8_epilogue(acc, count, n, row_scales, col_scales, bias, act, at);
      continue;
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; ++t) {
      const std::int64_t r0 = count * t / threads, r1 = count * (t + 1) / threads;
      kernels.int8_epilogue(acc + r0 * n, r1 - r0, n, row_scales + r0, col_scales, bias, act,
                            rows_from(at, r0, n));
    }
  }
}

}  // namespace mcinfer::cpu
