#include "cpu/gemm.h"

#include <omp.h>

#include <dnnl.hpp>
#include <unordered_map>

#include "core/error.h"
#include "cpu/gemm_engine.h"

namespace mcinfer::cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

constexpr std::int64_t kRowQuantum = 16;

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
    case Activation::kNone:
      break;
  }
  return dnnl::algorithm::undef;
}

dt library_type(DType type) { return type == DType::kBf16 ? dt::bf16 : dt::f32; }

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
    ops.append_eltwise(1.0f, eltwise_for(act), 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  if (has_bias) {
    dnnl::memory::desc bias({1, out}, dt::f32, tag::ab);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, bias, dst), attr, engine);
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, dst), attr, engine);
}

}  // namespace

std::string native_bf16_isa() {
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  if (isa == dnnl_cpu_isa_avx512_core_amx) return "amx_bf16";
  // The ISA values are bit sets: avx512_core_bf16 includes every bit of the ISAs below it.
  if ((isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16) return "avx512_bf16";
  return "";
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
  bool has_bias = false;
  const dnnl::engine* engine = nullptr;
};

PackedLinear::PackedLinear(const GemmEngine& engine, const void* weight, DType weight_type,
                           const float* bias, std::int64_t out, std::int64_t in, DType compute)
    : in_(in), out_(out), compute_(compute), impl_(std::make_unique<Impl>()) {
  const dnnl::engine& eng = engine.impl().engine;
  impl_->engine = &eng;
  // The library chooses the blocked layout; it does not depend on the row count, so one packing
  // serves every batch (checked when each row count's kernel is created).
  dnnl::memory::desc any({in, out}, library_type(compute), tag::any);
  auto pd = make_pd(eng, 128, in, out, any, bias != nullptr, Activation::kNone, dt::f32);
  impl_->packed_desc = pd.weights_desc();
  impl_->packed = dnnl::memory(impl_->packed_desc, eng);
  // Wᵀ as [in, out] is W [out, in] read with strides (1, in): the 'ba' layout. The reorder also
  // converts f32 to bf16 (rounding to nearest even) when the types differ.
  dnnl::memory plain({{in, out}, library_type(weight_type), tag::ba}, eng,
                     const_cast<void*>(weight));
  dnnl::stream stream(eng);
  dnnl::reorder(plain, impl_->packed).execute(stream, plain, impl_->packed);
  stream.wait();
  if (bias != nullptr) {
    impl_->has_bias = true;
    impl_->bias.resize(static_cast<std::size_t>(out));
    std::memcpy(impl_->bias.data(), bias, sizeof(float) * static_cast<std::size_t>(out));
  }
}

PackedLinear::~PackedLinear() = default;
PackedLinear::PackedLinear(PackedLinear&&) noexcept = default;

const float* PackedLinear::bias() const { return impl_->has_bias ? impl_->bias.data() : nullptr; }

std::size_t PackedLinear::packed_bytes() const {
  return impl_->packed_desc.get_size() + impl_->bias.capacity_bytes();
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
};

GemmRunner::GemmRunner(const GemmEngine& engine, int threads)
    : impl_(std::make_unique<Impl>()), threads_(threads < 1 ? 1 : threads) {
  impl_->engine = &engine;
  impl_->stream = dnnl::stream(engine.impl().engine);
  impl_->scratch.resize(64);
}

GemmRunner::~GemmRunner() = default;

std::int64_t GemmRunner::round_rows(std::int64_t rows) {
  return rows <= kRowQuantum ? rows : (rows + kRowQuantum - 1) / kRowQuantum * kRowQuantum;
}

std::size_t GemmRunner::compiled_kernels() const { return impl_->kernels.size(); }

void GemmRunner::linear(const PackedLinear& w, const void* x, std::int64_t rows, void* y,
                        DType y_type, Activation act, bool with_bias) {
  if (rows <= 0) return;
  if (w.compute_type() == DType::kF32 && y_type != DType::kF32)
    fail("internal: an f32 GEMM writes f32 only");
  // The OpenMP team size is per calling thread: each replica thread sets its own.
  if (omp_get_max_threads() != threads_) omp_set_num_threads(threads_);
  const PackedLinear::Impl& wi = w.impl();
  const std::int64_t padded = round_rows(rows);
  const bool bias = wi.has_bias && with_bias;
  Impl::Key key{w.in_features(), w.out_features(), w.compute_type(), padded, act, bias, y_type};
  auto it = impl_->kernels.find(key);
  if (it == impl_->kernels.end()) {
    auto pd = make_pd(*wi.engine, padded, w.in_features(), w.out_features(), wi.packed_desc, bias,
                      act, library_type(y_type));
    if (pd.weights_desc() != wi.packed_desc) {
      fail("internal: GEMM weight layout differs for {} rows", padded);
    }
    std::size_t need = pd.scratchpad_desc().get_size();
    if (need > impl_->scratch.size()) impl_->scratch.resize(need);
    it = impl_->kernels.emplace(key, Impl::Kernel{dnnl::matmul(pd), pd.weights_desc()}).first;
  } else if (it->second.weights != wi.packed_desc) {
    fail("internal: GEMM weight layout differs between two {}x{} matrices", w.out_features(),
         w.in_features());
  }
  const dnnl::engine& eng = *wi.engine;
  dnnl::memory src({{padded, w.in_features()}, library_type(w.compute_type()), tag::ab}, eng,
                   const_cast<void*>(x));
  dnnl::memory dst({{padded, w.out_features()}, library_type(y_type), tag::ab}, eng, y);
  dnnl::memory scratch({{static_cast<std::int64_t>(impl_->scratch.size())}, dt::u8, tag::a}, eng,
                       impl_->scratch.data());
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, src},
                                                {DNNL_ARG_WEIGHTS, wi.packed},
                                                {DNNL_ARG_DST, dst},
                                                {DNNL_ARG_SCRATCHPAD, scratch}};
  if (bias) {
    args.emplace(DNNL_ARG_BIAS, dnnl::memory({{1, w.out_features()}, dt::f32, tag::ab}, eng,
                                             const_cast<float*>(wi.bias.data())));
  }
  it->second.matmul.execute(impl_->stream, args);
  impl_->stream.wait();
}

}  // namespace mcinfer::cpu
