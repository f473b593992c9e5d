#pragma once
// The file formats mcinfer reads and writes, as three separate choices: what a run reads
// (InputFormat), what a run or `merge` writes as its final table (OutputFormat), and the two
// line formats that shards, the line readers and the line writers use (LineFormat: a shard is
// always appended line by line, whatever the final table's format). Every switch over them is
// exhaustive, so that a new format cannot silently take another's branch.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "core/enum_names.h"

namespace mcinfer::data {

enum class InputFormat { kCsv, kJsonl, kParquet };
enum class OutputFormat { kCsv, kJsonl, kParquet };
enum class LineFormat { kCsv, kJsonl };

inline constexpr EnumNames<InputFormat, 3> kInputFormatNames{
    {{{InputFormat::kCsv, "csv"},
      {InputFormat::kJsonl, "jsonl"},
      {InputFormat::kParquet, "parquet"}}}};
inline constexpr EnumNames<OutputFormat, 3> kOutputFormatNames{
    {{{OutputFormat::kCsv, "csv"},
      {OutputFormat::kJsonl, "jsonl"},
      {OutputFormat::kParquet, "parquet"}}}};
inline constexpr EnumNames<LineFormat, 2> kLineFormatNames{
    {{{LineFormat::kCsv, "csv"}, {LineFormat::kJsonl, "jsonl"}}}};

inline std::string_view format_name(InputFormat f) { return kInputFormatNames.name(f); }
inline std::string_view format_name(OutputFormat f) { return kOutputFormatNames.name(f); }
inline std::string_view format_name(LineFormat f) { return kLineFormatNames.name(f); }

// The format a file's extension names (case-insensitive): .csv; .jsonl, .json, .ndjson;
// .parquet, .pq. nullopt for any other.
std::optional<OutputFormat> format_of_extension(const std::filesystem::path& path);

// An input's format: `flag` when given (its value must be one of kInputFormatNames, else a
// UsageError naming `flag_name`), else the extension's; a UsageError naming the file when the
// extension says none (.tsv: not supported).
InputFormat resolve_input_format(const std::filesystem::path& path,
                                 const std::optional<std::string>& flag,
                                 std::string_view flag_name = "--format");
// A table's format (merge's output and inputs): from the extension, else a UsageError naming
// the file.
OutputFormat resolve_output_format(const std::filesystem::path& path);
// A run's --output: .parquet/.pq and .jsonl/.json/.ndjson by extension, anything else CSV.
OutputFormat run_output_format(const std::filesystem::path& path);

// The line format of an output format that has one; nullopt for Parquet.
std::optional<LineFormat> line_format(OutputFormat format);
// What a run's shards are written in for a final table of `format`: JSONL for JSONL, else CSV.
LineFormat shard_format(OutputFormat format);

}  // namespace mcinfer::data
