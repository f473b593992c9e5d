// Parquet in a build without Arrow: every entry point refuses it with the way to get it.

#include <fmt/format.h>

#include "core/error.h"
#include "data/parquet.h"
#include "data/prediction_reader.h"
#include "data/prediction_writer.h"
#include "data/row_readers.h"

namespace mcinfer::data {
namespace {

[[noreturn]] void refuse(const std::filesystem::path& path) {
  fail(
      "{}: this mcinfer was built without Parquet support; rebuild with -DMCINFER_ARROW=ON after "
      "scripts/setup.sh (which installs pyarrow's Arrow C++ libraries into .venv-arrow), or use "
      "CSV or JSONL",
      path.string());
}

}  // namespace

std::string parquet_library() { return "none"; }

bool parquet_available() { return false; }

std::unique_ptr<RowReader> make_parquet_row_reader(const std::filesystem::path& path,
                                                   const ColumnSpec&, const ReaderOptions&) {
  refuse(path);
}

std::unique_ptr<PredictionReader> make_parquet_prediction_reader(
    const std::filesystem::path& path) {
  refuse(path);
}

std::unique_ptr<PredictionWriter> make_parquet_prediction_writer(const std::filesystem::path& path,
                                                                 const PredictionSchema&,
                                                                 const TableFacts&) {
  refuse(path);
}

}  // namespace mcinfer::data
