#include "data/formats.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "core/error.h"
#include "data/prediction_reader.h"
#include "data/prediction_writer.h"

namespace mcinfer::data {

namespace {

constexpr std::string_view kCsvExtensions[] = {".csv"};
constexpr std::string_view kJsonlExtensions[] = {".jsonl", ".json", ".ndjson"};
constexpr std::string_view kParquetExtensions[] = {".parquet", ".pq"};
// Sparse rows have no fixed columns, so CSV cannot hold them.
constexpr RowKind kCsvKinds[] = {RowKind::kColumns, RowKind::kEmbedding, RowKind::kGroups};
constexpr RowKind kAllKinds[] = {RowKind::kColumns, RowKind::kEmbedding, RowKind::kGroups,
                                 RowKind::kSparse};

std::unique_ptr<PredictionReader> open_csv(const std::filesystem::path& path,
                                           const ReaderOptions& options) {
  return open_line_prediction_reader(path, LineFormat::kCsv, options);
}
std::unique_ptr<PredictionReader> open_jsonl(const std::filesystem::path& path,
                                             const ReaderOptions& options) {
  return open_line_prediction_reader(path, LineFormat::kJsonl, options);
}
std::unique_ptr<PredictionReader> open_parquet(const std::filesystem::path& path,
                                               const ReaderOptions&) {
  return make_parquet_prediction_reader(path);
}
std::unique_ptr<PredictionWriter> write_csv(const std::filesystem::path& path,
                                            const PredictionSchema& schema, const TableFacts&) {
  return make_line_prediction_writer(path, LineFormat::kCsv, schema);
}
std::unique_ptr<PredictionWriter> write_jsonl(const std::filesystem::path& path,
                                              const PredictionSchema& schema, const TableFacts&) {
  return make_line_prediction_writer(path, LineFormat::kJsonl, schema);
}

const OutputFormatInfo kOutputFormatTable[] = {
    {.format = OutputFormat::kCsv,
     .title = "CSV",
     .extensions = kCsvExtensions,
     .lines = LineFormat::kCsv,
     .kinds = kCsvKinds,
     .open_reader = open_csv,
     .open_writer = write_csv},
    {.format = OutputFormat::kJsonl,
     .title = "JSONL",
     .extensions = kJsonlExtensions,
     .lines = LineFormat::kJsonl,
     .kinds = kAllKinds,
     .open_reader = open_jsonl,
     .open_writer = write_jsonl},
    {.format = OutputFormat::kParquet,
     .title = "Parquet",
     .extensions = kParquetExtensions,
     .lines = std::nullopt,
     .kinds = kAllKinds,
     .needs_arrow = true,
     .open_reader = open_parquet,
     .open_writer = make_parquet_prediction_writer},
};
static_assert(std::size(kOutputFormatTable) == kOutputFormatNames.entries.size(),
              "every output format has its entry");

std::string lower_extension(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

}  // namespace

bool OutputFormatInfo::holds(RowKind kind) const {
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

std::span<const OutputFormatInfo> output_format_table() { return kOutputFormatTable; }

const OutputFormatInfo& format_info(OutputFormat format) {
  for (const OutputFormatInfo& info : kOutputFormatTable)
    if (info.format == format) return info;
  fail("internal: output format {}", static_cast<int>(format));
}

void check_table_format(const std::filesystem::path& path, OutputFormat format,
                        std::optional<RowKind> kind, bool have_arrow) {
  const OutputFormatInfo& info = format_info(format);
  if (kind && !info.holds(*kind)) {
    std::vector<std::string> able;
    for (const OutputFormatInfo& other : kOutputFormatTable) {
      if (other.holds(*kind))
        able.push_back(fmt::format("{} ({})", other.title, other.extensions.front()));
    }
    std::string list;
    for (std::size_t i = 0; i < able.size(); ++i)
      list += (i == 0 ? "" : i + 1 == able.size() ? " or " : ", ") + able[i];
    fail_usage("{}: {} cannot hold {}; write {}", path.string(), info.title,
               kRowKindNames.name(*kind), list);
  }
  if (info.needs_arrow && !have_arrow) {
    std::vector<std::string> able;
    for (const OutputFormatInfo& other : kOutputFormatTable) {
      if (!other.needs_arrow && (!kind || other.holds(*kind)))
        able.push_back(fmt::format("{} ({})", other.title, other.extensions.front()));
    }
    fail(
        "{}: this mcinfer was built without {} support (Arrow); rebuild with -DMCINFER_ARROW=ON "
        "after scripts/setup.sh (which installs pyarrow's Arrow C++ libraries into .venv-arrow), "
        "or write {}",
        path.string(), info.title, fmt::join(able, " or "));
  }
}

std::optional<OutputFormat> format_of_extension(const std::filesystem::path& path) {
  const std::string ext = lower_extension(path);
  for (const OutputFormatInfo& info : kOutputFormatTable) {
    for (std::string_view e : info.extensions)
      if (ext == e) return info.format;
  }
  return std::nullopt;
}

namespace {

[[noreturn]] void fail_extension(const std::filesystem::path& path, std::string_view flag) {
  if (lower_extension(path) == ".tsv")
    fail_usage("{}: TSV is not supported; convert it to CSV, JSONL or Parquet", path.string());
  fail_usage("{}: cannot tell the format from the extension '{}'; use {} csv|jsonl|parquet",
             path.string(), path.extension().string(), flag);
}

}  // namespace

InputFormat resolve_input_format(const std::filesystem::path& path,
                                 const std::optional<std::string>& flag,
                                 std::string_view flag_name) {
  if (flag) {
    if (auto format = kInputFormatNames.parse(*flag)) return *format;
    fail_usage("{}: expected {}, got '{}'", flag_name, kInputFormatNames.choices(), *flag);
  }
  const auto format = format_of_extension(path);
  if (!format) fail_extension(path, flag_name);
  switch (*format) {
    case OutputFormat::kCsv:
      return InputFormat::kCsv;
    case OutputFormat::kJsonl:
      return InputFormat::kJsonl;
    case OutputFormat::kParquet:
      return InputFormat::kParquet;
  }
  fail_extension(path, flag_name);
}

OutputFormat resolve_output_format(const std::filesystem::path& path) {
  const auto format = format_of_extension(path);
  if (!format) {
    fail_usage(
        "{}: cannot tell the format from the extension '{}'; name it .csv, .jsonl or "
        ".parquet",
        path.string(), path.extension().string());
  }
  return *format;
}

OutputFormat run_output_format(const std::filesystem::path& path) {
  return format_of_extension(path).value_or(OutputFormat::kCsv);
}

std::optional<LineFormat> line_format(OutputFormat format) { return format_info(format).lines; }

LineFormat shard_format(OutputFormat format, RowKind kind) {
  const OutputFormatInfo& own = format_info(format);
  if (own.lines && own.holds(kind)) return *own.lines;
  for (const OutputFormatInfo& info : kOutputFormatTable) {
    if (info.lines && info.holds(kind)) return *info.lines;
  }
  fail("internal: no line format holds {}", kRowKindNames.name(kind));
}

}  // namespace mcinfer::data
