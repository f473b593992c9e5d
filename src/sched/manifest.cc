#include "sched/manifest.h"

#include <fmt/format.h>

#include <charconv>
#include <fstream>

#include "core/crc32.h"
#include "core/error.h"
#include "core/fault.h"
#include "core/mapped_file.h"

namespace mcinfer::sched {
namespace {

namespace fs = std::filesystem;

bool parse_u64(std::string_view text, std::uint64_t& out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool parse_hex32(std::string_view text, std::uint32_t& out) {
  if (text.size() != 8) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 16);
  return ec == std::errc() && end == text.data() + text.size();
}

// Parses one manifest line (without its newline); false when torn or corrupted.
bool parse_record(std::string_view line, ManifestRecord& record) {
  const std::size_t hash = line.rfind(" #");
  if (hash == std::string_view::npos) return false;
  std::uint32_t line_crc = 0;
  if (!parse_hex32(line.substr(hash + 2), line_crc) || crc32(line.substr(0, hash)) != line_crc)
    return false;
  std::vector<std::string_view> fields;
  std::string_view body = line.substr(0, hash);
  while (!body.empty()) {
    std::size_t space = body.find(' ');
    fields.push_back(body.substr(0, space));
    if (space == std::string_view::npos) break;
    body.remove_prefix(space + 1);
  }
  if (fields.size() < 3) return false;
  record = ManifestRecord();
  if (!parse_u64(fields[0], record.batch) || !parse_u64(fields[1], record.end) ||
      !parse_hex32(fields[2], record.crc)) {
    return false;
  }
  for (std::size_t i = 3; i < fields.size(); ++i) {
    std::uint64_t p = 0;
    if (!parse_u64(fields[i], p)) return false;
    record.positions.push_back(p);
  }
  return true;
}

void truncate_to(const fs::path& path, std::uint64_t size) {
  std::error_code ec;
  fs::resize_file(path, size, ec);
  if (ec) fail("{}: cannot truncate to {} bytes: {}", path.string(), size, ec.message());
}

}  // namespace

fs::path manifest_path(const fs::path& shard) {
  fs::path p = shard;
  p += ".manifest";
  return p;
}

std::string format_record(const ManifestRecord& r) {
  std::string body = fmt::format("{} {} {:08x}", r.batch, r.end, r.crc);
  for (std::uint64_t p : r.positions) fmt::format_to(std::back_inserter(body), " {}", p);
  return fmt::format("{} #{:08x}\n", body, crc32(body));
}

RecoveredShard recover_shard(const fs::path& shard, const std::string& header) {
  RecoveredShard out;
  std::error_code ec;
  const fs::path manifest = manifest_path(shard);
  if (!fs::exists(shard, ec)) {
    if (fs::exists(manifest, ec)) fs::remove(manifest, ec);
    return out;
  }
  std::string shard_bytes;
  {
    MappedFile file = MappedFile::open(shard);
    shard_bytes.assign(reinterpret_cast<const char*>(file.data()), file.size());
  }
  if (shard_bytes.compare(0, header.size(), header) != 0 || shard_bytes.size() < header.size()) {
    // Not even the header is intact: start the shard over.
    truncate_to(shard, 0);
    if (fs::exists(manifest, ec)) truncate_to(manifest, 0);
    out.discarded_bytes = shard_bytes.size();
    return out;
  }
  out.header_end = header.size();
  out.valid_end = header.size();
  std::string manifest_bytes;
  if (fs::exists(manifest, ec)) {
    MappedFile file = MappedFile::open(manifest);
    manifest_bytes.assign(reinterpret_cast<const char*>(file.data()), file.size());
  }
  std::uint64_t manifest_valid = 0;
  std::size_t pos = 0;
  while (pos < manifest_bytes.size()) {
    std::size_t nl = manifest_bytes.find('\n', pos);
    if (nl == std::string::npos) break;  // torn last line
    ManifestRecord record;
    std::string_view line(manifest_bytes.data() + pos, nl - pos);
    if (!parse_record(line, record)) break;
    if (record.end < out.valid_end || record.end > shard_bytes.size()) break;
    std::string_view bytes(shard_bytes.data() + out.valid_end, record.end - out.valid_end);
    if (crc32(bytes) != record.crc) break;
    out.valid_end = record.end;
    out.records.push_back(std::move(record));
    pos = nl + 1;
    manifest_valid = pos;
  }
  if (manifest_valid < manifest_bytes.size()) {
    std::size_t lines = 0;
    for (std::size_t i = manifest_valid; i < manifest_bytes.size(); ++i)
      lines += manifest_bytes[i] == '\n';
    out.discarded_records = std::max<std::size_t>(lines, 1);
    truncate_to(manifest, manifest_valid);
  }
  if (out.valid_end < shard_bytes.size()) {
    out.discarded_bytes = shard_bytes.size() - out.valid_end;
    truncate_to(shard, out.valid_end);
  }
  return out;
}

ManifestWriter::ManifestWriter(const fs::path& path) {
  file_ = FileWriter::open(path, FileWriter::Mode::kAppend);
}

void ManifestWriter::append(const ManifestRecord& record) {
  const std::string line = format_record(record);
  // Half a line reaches the file before the fault point: a crash there leaves a torn record.
  file_.write(std::string_view(line).substr(0, line.size() / 2));
  file_.flush();
  fault_point("manifest-write");
  file_.write(std::string_view(line).substr(line.size() / 2));
  file_.sync();
}

}  // namespace mcinfer::sched
