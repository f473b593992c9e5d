#include "sched/shard_writer.h"

#include <fmt/format.h>

#include "core/crc32.h"
#include "core/fault.h"

namespace mcinfer::sched {

ShardWriter::ShardWriter(std::filesystem::path path, data::LineFormat format,
                         const data::PredictionSchema& schema)
    : path_(std::move(path)), format_(format), schema_(schema) {
  file_ = FileWriter::open(path_, FileWriter::Mode::kAppend);
  if (file_.offset() == 0) {
    file_.write(data::prediction_header(schema_, format_));
    file_.sync();
  }
  manifest_ = ManifestWriter(manifest_path(path_));
}

void ShardWriter::write_batch(const Batch& batch, std::span<const float> values, std::int64_t dim) {
  buffer_.clear();
  ManifestRecord record;
  record.batch = batch.number;
  for (std::size_t i = 0; i < batch.items.size(); ++i) {
    data::append_prediction(
        schema_, format_, batch.items[i].id,
        values.subspan(i * static_cast<std::size_t>(dim), static_cast<std::size_t>(dim)), buffer_);
    record.positions.push_back(batch.items[i].position);
  }
  // Half the batch reaches the file before the fault point: a crash there leaves a torn tail.
  const std::size_t half = buffer_.size() / 2;
  file_.write(std::string_view(buffer_).substr(0, half));
  file_.flush();
  fault_point("shard-write");
  file_.write(std::string_view(buffer_).substr(half));
  file_.sync();
  record.end = file_.offset();
  record.crc = crc32(buffer_);
  manifest_.append(record);
}

void ShardWriter::close() {
  file_.close();
  manifest_.close();
}

}  // namespace mcinfer::sched
