#include "data/formats.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace mcinfer::data {

namespace {

std::string lower_extension(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

}  // namespace

std::optional<OutputFormat> format_of_extension(const std::filesystem::path& path) {
  const std::string ext = lower_extension(path);
  if (ext == ".csv") return OutputFormat::kCsv;
  if (ext == ".jsonl" || ext == ".json" || ext == ".ndjson") return OutputFormat::kJsonl;
  if (ext == ".parquet" || ext == ".pq") return OutputFormat::kParquet;
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

std::optional<LineFormat> line_format(OutputFormat format) {
  switch (format) {
    case OutputFormat::kCsv:
      return LineFormat::kCsv;
    case OutputFormat::kJsonl:
      return LineFormat::kJsonl;
    case OutputFormat::kParquet:
      return std::nullopt;
  }
  return std::nullopt;
}

LineFormat shard_format(OutputFormat format) {
  switch (format) {
    case OutputFormat::kCsv:
    case OutputFormat::kParquet:
      return LineFormat::kCsv;
    case OutputFormat::kJsonl:
      return LineFormat::kJsonl;
  }
  return LineFormat::kCsv;
}

}  // namespace mcinfer::data
