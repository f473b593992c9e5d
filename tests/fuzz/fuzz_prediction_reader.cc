// Prediction tables (merge inputs): never a crash, and the same rows whatever the read size.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/prediction_reader.h"
#include "fuzz_support_data.h"

namespace {

std::vector<std::string> read_all(std::string_view body, mcinfer::data::LineFormat format,
                                  const mcinfer::data::ReaderOptions& o) {
  std::vector<std::string> events;
  try {
    auto reader = mcinfer::data::PredictionReader::open_bytes(body, "fuzz", format, o);
    if (reader->has_schema()) {
      events.push_back(fmt::format("schema {} {}", fmt::join(reader->schema().columns, ","),
                                   reader->schema().embedding));
    }
    mcinfer::data::PredictionRow row;
    while (reader->next(row)) {
      events.push_back(fmt::format("{} {}{} {} {}", row.line, row.id, row.id_is_string ? "s" : "n",
                                   fmt::join(row.indices, ","), fmt::join(row.values, ",")));
      // A sparse row has one value per index, ascending; a dense row one per column.
      if (reader->schema().sparse) {
        if (row.values.size() != row.indices.size()) __builtin_trap();
        for (std::size_t k = 1; k < row.indices.size(); ++k)
          if (row.indices[k] <= row.indices[k - 1] || row.indices[0] < 0) __builtin_trap();
      } else if (row.values.size() != reader->schema().columns.size() || !row.indices.empty()) {
        __builtin_trap();
      }
    }
    if (reader->warning()) events.push_back("warning " + *reader->warning());
  } catch (const mcinfer::Error& e) {
    events.push_back(std::string("error ") + e.what());
  }
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto split = mcinfer::fuzz::split_options(data, size);
  auto format = (size > 0 && (data[0] & 0x40)) ? mcinfer::data::LineFormat::kJsonl
                                               : mcinfer::data::LineFormat::kCsv;
  auto a = read_all(split.body, format, split.small);
  auto b = read_all(split.body, format, split.large);
  if (a != b) __builtin_trap();  // the read size changed what was read
  return 0;
}
