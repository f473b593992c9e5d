#pragma once
// Names for the dense GEMMs of an encoder, for int8 plans: which GEMMs stay in a wider precision
// (`--int8-keep`, or chosen on the calibration rows) and how a report says so.

#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mcinfer::model {

// The four dense GEMMs of an encoder layer, in the order a layer runs them.
enum class GemmSlot { kQkv, kAttnOut, kFfnIn, kFfnOut };
inline constexpr int kGemmSlots = 4;

struct GemmId {
  std::int64_t layer = 0;
  GemmSlot slot = GemmSlot::kQkv;
  auto operator<=>(const GemmId&) const = default;
};

// Per dense GEMM of a model, the largest |x| seen per input channel on calibration rows: what
// int8's input smoothing is computed from. Empty for a GEMM never measured.
struct InputRanges {
  std::vector<std::vector<float>> max_abs;  // [layers · 4][in], indexed by index()
  static std::size_t index(GemmId id) {
    return static_cast<std::size_t>(id.layer) * kGemmSlots + static_cast<std::size_t>(id.slot);
  }
  const float* of(GemmId id) const {
    const std::size_t i = index(id);
    return i < max_abs.size() && !max_abs[i].empty() ? max_abs[i].data() : nullptr;
  }
  // Folds in rows [rows, in] of GEMM id's input.
  void add(GemmId id, const float* x, std::int64_t rows, std::int64_t in);
  // Folds in another set (the element-wise max).
  void merge(const InputRanges& other);
};

// "11.ffn_out": the --int8-keep syntax.
std::string gemm_key(GemmId id);
// "layer 11 FFN out": for reports.
std::string gemm_label(GemmId id);

// --int8-keep: comma-separated items, each "L" (all four GEMMs of layer L, counted from 0) or
// "L.qkv", "L.attn_out", "L.ffn_in", "L.ffn_out"; "none" keeps nothing. Layers are checked
// against `layers`. Sorted, without duplicates. Throws UsageError naming the bad item.
std::vector<GemmId> parse_gemm_list(std::string_view text, std::int64_t layers);

// "int8: 46 of 48 GEMMs, bf16: layer 11 FFN out, layer 3 QKV" (kept GEMMs in `kept_precision`).
std::string int8_plan_summary(std::span<const GemmId> kept, std::int64_t layers,
                              std::string_view kept_precision);

}  // namespace mcinfer::model
