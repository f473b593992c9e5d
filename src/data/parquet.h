#pragma once
// What this build knows of Parquet: parquet_rows.cc and parquet_tables.cc read and write it
// through the Arrow C++ libraries; parquet_none.cc, in builds without Arrow, refuses it with
// an Error saying how to get it. The readers and the writer themselves are reached through
// RowReader::open, PredictionReader::open and PredictionWriter::open.

#include <string>

namespace mcinfer::data {

// "Arrow 26.0.1", or "none" in a build without Arrow (`mcinfer --version` prints it).
std::string parquet_library();

}  // namespace mcinfer::data
