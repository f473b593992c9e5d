#pragma once
// The file formats mcinfer reads and writes, as three separate choices: what a run reads
// (InputFormat), what a run or `merge` writes as its final table (OutputFormat), and the two
// line formats that shards, the line readers and the line writers use (LineFormat: a shard is
// always appended line by line, whatever the final table's format). Every switch over them is
// exhaustive, so that a new format cannot silently take another's branch.
//
// What each table format is — its name, extensions, line format, the kinds of rows it holds,
// whether it needs Arrow, its reader and its writer — is one entry of kOutputFormatTable
// (formats.cc): extensions, shard formats and every refusal of a format for a kind of rows are
// read from it, so a new format or kind is one entry (and its reader and writer).

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
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

// What a prediction table's rows hold (PredictionSchema says which: row_kind()).
enum class RowKind {
  kColumns,    // one number per named column (a classifier's labels)
  kEmbedding,  // one vector (JSONL: "embedding", Parquet: a fixed_size_list)
  kGroups,     // several outputs side by side (run --outputs)
  kSparse,     // token weights: the nonzeros' indices and values (--task sparse)
};
inline constexpr EnumNames<RowKind, 4> kRowKindNames{{{{RowKind::kColumns, "columns"},
                                                       {RowKind::kEmbedding, "embedding"},
                                                       {RowKind::kGroups, "output groups"},
                                                       {RowKind::kSparse, "sparse rows"}}}};

inline std::string_view format_name(InputFormat f) { return kInputFormatNames.name(f); }
inline std::string_view format_name(OutputFormat f) { return kOutputFormatNames.name(f); }
inline std::string_view format_name(LineFormat f) { return kLineFormatNames.name(f); }

struct PredictionSchema;
struct TableFacts;
struct ReaderOptions;
class PredictionReader;
class PredictionWriter;

// One table format: everything the rest of mcinfer asks about it.
struct OutputFormatInfo {
  OutputFormat format;
  std::string_view title;                        // in messages: "CSV"
  std::span<const std::string_view> extensions;  // lower case, the first is the usual one
  std::optional<LineFormat> lines;               // appended line by line (shards can be)
  std::span<const RowKind> kinds;                // the rows it holds
  bool needs_arrow = false;                      // absent from builds without Arrow
  std::unique_ptr<PredictionReader> (*open_reader)(const std::filesystem::path&,
                                                   const ReaderOptions&) = nullptr;
  std::unique_ptr<PredictionWriter> (*open_writer)(const std::filesystem::path&,
                                                   const PredictionSchema&,
                                                   const TableFacts&) = nullptr;
  bool holds(RowKind kind) const;
};

// Every table format, in OutputFormat order.
std::span<const OutputFormatInfo> output_format_table();
const OutputFormatInfo& format_info(OutputFormat format);

// Whether this build reads and writes Parquet (Arrow linked: parquet_tables.cc) or not
// (parquet_none.cc).
bool parquet_available();

// Refuses, before any row is computed, a table of `kind` rows written as `format` at `path`:
// a UsageError when the format cannot hold the kind (naming the formats that can), an Error when
// this build cannot write the format (`have_arrow`: parquet_available(), a parameter so that
// both builds' answers can be tested in either). nullopt kind: only the build is checked.
void check_table_format(const std::filesystem::path& path, OutputFormat format,
                        std::optional<RowKind> kind, bool have_arrow);

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
// What a run's shards are written in for a final table of `format` holding `kind` rows: the
// format's own lines when it has them, else the first line format of the table that holds the
// kind (dense rows for Parquet: CSV; sparse rows: JSONL, never vocabulary-wide dense rows).
LineFormat shard_format(OutputFormat format, RowKind kind);

}  // namespace mcinfer::data
