// CSV input rows: never a crash, and the same rows whatever the read size.
#include <cstddef>
#include <cstdint>

#include "fuzz_support_data.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return mcinfer::fuzz::fuzz_input_rows(data, size, mcinfer::data::LineFormat::kCsv);
}
