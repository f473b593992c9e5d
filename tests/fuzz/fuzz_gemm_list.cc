// --int8-keep lists (model::parse_gemm_list): any text either parses into valid, sorted, distinct
// GEMMs of the model, or is refused with a UsageError naming the flag; never a crash or a GEMM
// outside the model.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/error.h"
#include "model/gemm_plan.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::int64_t layers = 1 + data[0] % 24;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    const auto gemms = mcinfer::model::parse_gemm_list(text, layers);
    for (std::size_t i = 0; i < gemms.size(); ++i) {
      if (gemms[i].layer < 0 || gemms[i].layer >= layers) std::abort();
      if (i > 0 && !(gemms[i - 1] < gemms[i])) std::abort();
      // Every GEMM's key parses back to itself.
      const auto again =
          mcinfer::model::parse_gemm_list(mcinfer::model::gemm_key(gemms[i]), layers);
      if (again.size() != 1 || again[0] != gemms[i]) std::abort();
    }
  } catch (const mcinfer::UsageError& e) {
    if (std::string_view(e.what()).find("--int8-keep") == std::string_view::npos) std::abort();
  }
  return 0;
}
