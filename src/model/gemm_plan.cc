#include "model/gemm_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/error.h"

namespace mcinfer::model {
namespace {

struct SlotNames {
  GemmSlot slot;
  std::string_view key, label;
};
constexpr SlotNames kSlots[] = {{GemmSlot::kQkv, "qkv", "QKV"},
                                {GemmSlot::kAttnOut, "attn_out", "attention out"},
                                {GemmSlot::kFfnIn, "ffn_in", "FFN in"},
                                {GemmSlot::kFfnOut, "ffn_out", "FFN out"}};

const SlotNames& names(GemmSlot slot) { return kSlots[static_cast<int>(slot)]; }

}  // namespace

void InputRanges::add(GemmId id, const float* x, std::int64_t rows, std::int64_t in) {
  const std::size_t i = index(id);
  if (max_abs.size() <= i) max_abs.resize(i + 1);
  std::vector<float>& m = max_abs[i];
  if (m.empty()) m.assign(static_cast<std::size_t>(in), 0.0f);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < in; ++c) m[c] = std::max(m[c], std::fabs(x[r * in + c]));
}

void InputRanges::merge(const InputRanges& other) {
  if (max_abs.size() < other.max_abs.size()) max_abs.resize(other.max_abs.size());
  for (std::size_t i = 0; i < other.max_abs.size(); ++i) {
    const auto& o = other.max_abs[i];
    if (o.empty()) continue;
    if (max_abs[i].empty()) max_abs[i].assign(o.size(), 0.0f);
    for (std::size_t c = 0; c < o.size(); ++c) max_abs[i][c] = std::max(max_abs[i][c], o[c]);
  }
}

std::string gemm_key(GemmId id) { return fmt::format("{}.{}", id.layer, names(id.slot).key); }

std::string gemm_label(GemmId id) {
  return fmt::format("layer {} {}", id.layer, names(id.slot).label);
}

std::vector<GemmId> parse_gemm_list(std::string_view text, std::int64_t layers) {
  std::vector<GemmId> out;
  if (text == "none") return out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    start = comma + 1;
    const std::size_t dot = item.find('.');
    const std::string_view number = item.substr(0, dot);
    std::int64_t layer = -1;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), layer);
    if (item.empty() || ec != std::errc{} || end != number.data() + number.size()) {
      fail_usage(
          "--int8-keep: '{}' is not a layer number or LAYER.GEMM (e.g. 11 or 11.ffn_out; GEMMs: "
          "qkv, attn_out, ffn_in, ffn_out; or none)",
          item);
    }
    if (layer < 0 || layer >= layers)
      fail_usage("--int8-keep: layer {} does not exist (the model has layers 0 to {})", layer,
                 layers - 1);
    if (dot == std::string_view::npos) {
      for (const SlotNames& s : kSlots) out.push_back({layer, s.slot});
      continue;
    }
    const std::string_view key = item.substr(dot + 1);
    const auto it = std::find_if(std::begin(kSlots), std::end(kSlots),
                                 [&](const SlotNames& s) { return s.key == key; });
    if (it == std::end(kSlots))
      fail_usage("--int8-keep: '{}' names no GEMM (qkv, attn_out, ffn_in, ffn_out)", item);
    out.push_back({layer, it->slot});
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string int8_plan_summary(std::span<const GemmId> kept, std::int64_t layers,
                              std::string_view kept_precision) {
  const std::int64_t total = layers * kGemmSlots;
  std::string s =
      fmt::format("int8: {} of {} GEMMs", total - static_cast<std::int64_t>(kept.size()), total);
  if (kept.empty()) return s;
  s += fmt::format(", {}:", kept_precision);
  for (std::size_t i = 0; i < kept.size(); ++i)
    s += fmt::format("{} {}", i == 0 ? "" : ",", gemm_label(kept[i]));
  return s;
}

}  // namespace mcinfer::model
