#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/json.h"

namespace mcinfer::io {
namespace {

constexpr std::uint64_t kMaxHeaderBytes = 100u << 20;  // the format's own limit
constexpr std::size_t kMaxRank = 8;

}  // namespace

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
    case DType::kI16:
      return 2;
    case DType::kI8:
    case DType::kU8:
    case DType::kBool:
      return 1;
  }
  return 1;
}

std::int64_t TensorView::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string TensorView::shape_string() const {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path) {
  auto st = std::unique_ptr<SafetensorsFile>(new SafetensorsFile());
  st->file_ = MappedFile::open(path);
  const std::string file_name = path.string();
  const std::uint64_t file_size = st->file_.size();
  if (file_size < 8)
    fail("{}: truncated safetensors file ({} bytes, no header length)", file_name, file_size);
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i)
    header_len = (header_len << 8) | static_cast<std::uint8_t>(st->file_.data()[i]);
  if (header_len > kMaxHeaderBytes) {
    fail("{}: header length {} exceeds the {}-byte limit", file_name, header_len, kMaxHeaderBytes);
  }
  if (header_len > file_size - 8) {
    fail("{}: header length {} runs past the end of the file ({} bytes)", file_name, header_len,
         file_size);
  }
  const std::uint64_t data_start = 8 + header_len;
  const std::uint64_t data_size = file_size - data_start;
  std::string_view header(reinterpret_cast<const char*>(st->file_.data()) + 8, header_len);
  Json json = parse_json(header, file_name + " (header)");
  if (!json.is_object()) fail("{}: header is not a JSON object", file_name);

  struct Span {
    std::uint64_t begin, end;
    std::size_t tensor;
  };
  std::vector<Span> spans;
  for (auto it = json.begin(); it != json.end(); ++it) {
    const std::string& name = it.key();
    const Json& entry = it.value();
    if (name == "__metadata__") {
      if (!entry.is_object()) fail("{}: '__metadata__' is not an object", file_name);
      for (auto m = entry.begin(); m != entry.end(); ++m) {
        if (!m.value().is_string())
          fail("{}: '__metadata__' field '{}' is not a string", file_name, m.key());
        st->metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto bad = [&](std::string_view what) -> void {
      fail("{}: tensor '{}': {}", file_name, name, what);
    };
    if (!entry.is_object()) bad("entry is not an object");
    TensorView view;
    view.name = name;
    auto dtype_it = entry.find("dtype");
    if (dtype_it == entry.end() || !dtype_it->is_string()) bad("missing or non-string 'dtype'");
    const std::optional<DType> dtype = kDTypeNames.parse(dtype_it->get<std::string>());
    if (!dtype) bad(fmt::format("unknown dtype '{}'", dtype_it->get<std::string>()));
    view.dtype = *dtype;
    auto shape_it = entry.find("shape");
    if (shape_it == entry.end() || !shape_it->is_array()) bad("missing or non-array 'shape'");
    if (shape_it->size() > kMaxRank)
      bad(fmt::format("rank {} is more than {}", shape_it->size(), kMaxRank));
    std::uint64_t elements = 1;
    bool overflow = false;
    for (const auto& d : *shape_it) {
      if (!d.is_number_integer() && !d.is_number_unsigned()) bad("shape holds a non-integer");
      if (d.is_number_integer() && d.get<std::int64_t>() < 0) bad("shape holds a negative size");
      std::uint64_t dim = d.get<std::uint64_t>();
      if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        bad("shape size out of range");
      view.shape.push_back(static_cast<std::int64_t>(dim));
      if (dim != 0 && elements > std::numeric_limits<std::uint64_t>::max() / dim) overflow = true;
      elements *= dim;
    }
    const std::uint64_t esize = dtype_size(view.dtype);
    if (overflow || elements > std::numeric_limits<std::uint64_t>::max() / esize) {
      bad(fmt::format("shape {} overflows", view.shape_string()));
    }
    auto off_it = entry.find("data_offsets");
    if (off_it == entry.end() || !off_it->is_array() || off_it->size() != 2) {
      bad("missing or malformed 'data_offsets' (want [begin, end])");
    }
    for (const auto& o : *off_it) {
      if (!o.is_number_unsigned() && !(o.is_number_integer() && o.get<std::int64_t>() >= 0)) {
        bad("'data_offsets' holds a negative or non-integer value");
      }
    }
    const std::uint64_t begin = (*off_it)[0].get<std::uint64_t>();
    const std::uint64_t end = (*off_it)[1].get<std::uint64_t>();
    if (begin > end) bad(fmt::format("data_offsets [{}, {}] are reversed", begin, end));
    if (end > data_size) {
      bad(fmt::format("data_offsets [{}, {}] run past the end of the data ({} bytes)", begin, end,
                      data_size));
    }
    if (end - begin != elements * esize) {
      bad(fmt::format("{} × {} needs {} bytes but data_offsets give {}", dtype_name(view.dtype),
                      view.shape_string(), elements * esize, end - begin));
    }
    if ((data_start + begin) % esize != 0) {
      bad(fmt::format("data at file offset {} is not aligned to its {}-byte elements",
                      data_start + begin, esize));
    }
    view.bytes = static_cast<std::size_t>(end - begin);
    view.file_offset = static_cast<std::size_t>(data_start + begin);
    view.data = st->file_.data() + view.file_offset;
    spans.push_back({begin, end, st->tensors_.size()});
    st->tensors_.push_back(std::move(view));
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (std::size_t i = 1; i < spans.size(); ++i) {
    const Span& prev = spans[i - 1];
    const Span& cur = spans[i];
    if (cur.begin < prev.end && cur.begin != cur.end && prev.begin != prev.end) {
      fail("{}: tensors '{}' and '{}' overlap", file_name, st->tensors_[prev.tensor].name,
           st->tensors_[cur.tensor].name);
    }
  }
  for (std::size_t i = 0; i < st->tensors_.size(); ++i) {
    st->tensors_[i].file = &st->file_.path();
    st->index_.emplace(st->tensors_[i].name, i);
  }
  return st;
}

const TensorView* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Checkpoint Checkpoint::open(const std::filesystem::path& model_dir) {
  namespace fs = std::filesystem;
  Checkpoint ck;
  std::error_code ec;
  if (!fs::is_directory(model_dir, ec)) fail("{}: not a model directory", model_dir.string());
  const fs::path single = model_dir / "model.safetensors";
  const fs::path index = model_dir / "model.safetensors.index.json";
  if (fs::exists(single, ec)) {
    ck.files_.push_back(SafetensorsFile::open(single));
    for (const auto& t : ck.files_.back()->tensors()) ck.by_name_.emplace(t.name, &t);
    return ck;
  }
  if (fs::exists(index, ec)) {
    Json json = read_json_file(index);
    JsonObject obj(json, index.string());
    const Json& map = obj.raw("weight_map");
    if (!map.is_object()) obj.fail_field("weight_map", "expected an object of tensor name -> file");
    std::map<std::string, std::size_t> file_index;
    std::map<std::string, std::string> expected;  // tensor -> part file
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (!it.value().is_string())
        obj.fail_field("weight_map", fmt::format("entry '{}' is not a file name", it.key()));
      std::string part = it.value().get<std::string>();
      if (part.empty() || part.find('/') != std::string::npos || part == "." || part == "..") {
        obj.fail_field("weight_map",
                       fmt::format("entry '{}' names '{}', not a file in the model directory",
                                   it.key(), part));
      }
      expected[it.key()] = part;
      if (!file_index.count(part)) {
        file_index[part] = ck.files_.size();
        ck.files_.push_back(SafetensorsFile::open(model_dir / part));
      }
    }
    for (const auto& [name, part] : expected) {
      const auto& file = ck.files_[file_index[part]];
      const TensorView* t = file->find(name);
      if (t == nullptr)
        fail("{}: tensor '{}' is listed for {} but that file lacks it", index.string(), name, part);
      ck.by_name_.emplace(name, t);
    }
    for (const auto& file : ck.files_) {
      for (const auto& t : file->tensors()) {
        auto it = expected.find(t.name);
        if (it == expected.end()) {
          fail("{}: tensor '{}' is not listed in {}", file->path().string(), t.name,
               index.filename().string());
        }
      }
    }
    return ck;
  }
  if (fs::exists(model_dir / "pytorch_model.bin", ec)) {
    fail(
        "{}: only pytorch_model.bin found. mcinfer does not load pickle files (unpickling can run "
        "arbitrary code). Convert it once to model.safetensors with transformers: "
        "CLS.from_pretrained(DIR).save_pretrained(DIR, safe_serialization=True), where CLS is the "
        "class named in config.json's \"architectures\" (e.g. BertForSequenceClassification)",
        model_dir.string());
  }
  fail("{}: no model.safetensors or model.safetensors.index.json", model_dir.string());
}

const TensorView* Checkpoint::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<const TensorView*> Checkpoint::tensors() const {
  std::vector<const TensorView*> out;
  out.reserve(by_name_.size());
  for (const auto& [name, t] : by_name_) out.push_back(t);
  return out;
}

std::uint64_t Checkpoint::total_bytes() const {
  std::uint64_t total = 0;
  for (const auto& [name, t] : by_name_) total += t->bytes;
  return total;
}

void Checkpoint::release(const TensorView& tensor) const {
  for (const auto& file : files_) {
    if (&file->path() == tensor.file) {
      file->file().release_pages(tensor.file_offset, tensor.bytes);
      return;
    }
  }
}

}  // namespace mcinfer::io
