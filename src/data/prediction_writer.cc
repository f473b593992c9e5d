#include "data/prediction_writer.h"

#include <charconv>
#include <cstdint>

#include "core/error.h"
#include "core/file_writer.h"

namespace mcinfer::data {
namespace {

constexpr std::size_t kFlushBytes = std::size_t{1} << 20;

class LineWriter final : public PredictionWriter {
 public:
  LineWriter(const std::filesystem::path& path, LineFormat format, const PredictionSchema& schema)
      : file_(path), format_(format), schema_(schema) {
    buf_ = prediction_header(schema_, format_);
  }

  void add(std::string_view id, bool id_is_string, std::span<const double> values) override {
    append_prediction(schema_, format_, id, id_is_string, values, buf_);
    maybe_flush();
  }

  void add_sparse(std::string_view id, bool id_is_string, std::span<const std::int32_t> indices,
                  std::span<const double> values) override {
    // check_table_format keeps sparse rows out of CSV.
    append_sparse_prediction(id, id_is_string, indices, values, buf_);
    maybe_flush();
  }

  void commit() override {
    file_.writer().write(buf_);
    buf_.clear();
    file_.commit();
  }

 private:
  void maybe_flush() {
    if (buf_.size() >= kFlushBytes) {
      file_.writer().write(buf_);
      buf_.clear();
    }
  }

  AtomicFile file_;
  LineFormat format_;
  PredictionSchema schema_;
  std::string buf_;
};

}  // namespace

bool is_canonical_int64(std::string_view id) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), v);
  if (ec != std::errc() || end != id.data() + id.size()) return false;
  char buf[24];
  auto [out, ec2] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string_view(buf, static_cast<std::size_t>(out - buf)) == id;
}

std::unique_ptr<PredictionWriter> PredictionWriter::open(const std::filesystem::path& path,
                                                         OutputFormat format,
                                                         const PredictionSchema& schema,
                                                         const TableFacts& facts) {
  check_table_format(path, format, row_kind(schema), parquet_available());
  return format_info(format).open_writer(path, schema, facts);
}

std::unique_ptr<PredictionWriter> make_line_prediction_writer(const std::filesystem::path& path,
                                                              LineFormat format,
                                                              const PredictionSchema& schema) {
  return std::make_unique<LineWriter>(path, format, schema);
}

}  // namespace mcinfer::data
