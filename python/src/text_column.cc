#include "text_column.h"

#include <cstring>
#include <optional>
#include <string>

namespace nb = nanobind;

namespace mcinfer::python {
namespace {

// How an Arrow string array lays out its values.
enum class Layout { kOffsets32, kOffsets64, kViews };

std::optional<Layout> string_layout(std::string_view format) {
  if (format == "u") return Layout::kOffsets32;
  if (format == "U") return Layout::kOffsets64;
  if (format == "vu") return Layout::kViews;
  return std::nullopt;
}

// A dictionary's index type: its width in bytes and whether it is signed; 0 for another format.
struct IndexType {
  int width = 0;
  bool is_signed = true;
};
IndexType index_type(std::string_view format) {
  if (format.size() != 1) return {};
  switch (format[0]) {
    case 'c':
      return {1, true};
    case 'C':
      return {1, false};
    case 's':
      return {2, true};
    case 'S':
      return {2, false};
    case 'i':
      return {4, true};
    case 'I':
      return {4, false};
    case 'l':
      return {8, true};
    case 'L':
      return {8, false};
    default:
      return {};
  }
}

template <typename T>
T load(const void* base, std::int64_t index) {
  T value;
  std::memcpy(&value, static_cast<const char*>(base) + index * std::int64_t{sizeof(T)}, sizeof(T));
  return value;
}

[[noreturn]] void value_error(const std::string& message) {
  throw nb::value_error(message.c_str());
}

bool is_valid(const ArrowArray& array, std::int64_t i) {  // i: physical index (offset applied)
  if (array.null_count == 0 || array.buffers[0] == nullptr) return true;
  const auto* bits = static_cast<const std::uint8_t*>(array.buffers[0]);
  return ((bits[i >> 3] >> (i & 7)) & 1) != 0;
}

// The checks of one array's shape that the C data interface leaves to the consumer.
void check_array(const ArrowArray& array, const char* what) {
  // Validity, offsets (or views) and data (or the data buffers' sizes): three at least.
  if (array.length < 0 || array.offset < 0 || array.n_buffers < 3 || array.buffers == nullptr)
    value_error(std::string(what) + ": a malformed Arrow array (length, offset or buffers)");
  if (array.length > 0 && array.buffers[1] == nullptr)
    value_error(std::string(what) + ": an Arrow string array without its offsets or views");
}

// The string at physical index i of a string array; the row number is for errors.
std::string_view string_at(const ArrowArray& array, Layout layout, std::int64_t i, const char* what,
                           std::size_t row) {
  std::int64_t begin = 0, end = 0;
  const char* data = nullptr;
  switch (layout) {
    case Layout::kOffsets32:
      begin = load<std::int32_t>(array.buffers[1], i);
      end = load<std::int32_t>(array.buffers[1], i + 1);
      data = static_cast<const char*>(array.buffers[2]);
      break;
    case Layout::kOffsets64:
      begin = load<std::int64_t>(array.buffers[1], i);
      end = load<std::int64_t>(array.buffers[1], i + 1);
      data = static_cast<const char*>(array.buffers[2]);
      break;
    case Layout::kViews: {
      const auto* view = static_cast<const char*>(array.buffers[1]) + 16 * i;
      const auto length = load<std::int32_t>(view, 0);
      if (length < 0) {
        begin = -1;
        break;
      }
      if (length <= 12) return {view + 4, static_cast<std::size_t>(length)};
      const auto buffer = load<std::int32_t>(view + 8, 0);
      const auto offset = load<std::int32_t>(view + 12, 0);
      // Data buffers are buffers[2 .. n_buffers - 2]; the last one holds their sizes.
      if (buffer < 0 || buffer + 3 >= array.n_buffers || offset < 0) {
        begin = -1;
        break;
      }
      data = static_cast<const char*>(array.buffers[2 + buffer]);
      begin = offset;
      end = std::int64_t{offset} + length;
      break;
    }
  }
  if (begin < 0 || end < begin || (end > begin && data == nullptr))
    value_error(std::string(what) + "[" + std::to_string(row) + "]: malformed Arrow offsets");
  return {data + begin, static_cast<std::size_t>(end - begin)};
}

std::string type_error_text(const ArrowSchema& schema, const char* what) {
  std::string text = std::string(what) + ": Arrow type '" + schema.format + "'";
  if (std::string_view(schema.format) == "+s") {
    text += " (a table or struct of";
    for (std::int64_t c = 0; c < schema.n_children; ++c)
      text += std::string(c ? ", '" : " '") + schema.children[c]->name + "'";
    text += "): give one column, e.g. table['text']";
  } else {
    text += ", expected string, large_string, string_view or a dictionary of them";
  }
  return text;
}

}  // namespace

struct TextColumn::ArrowChunk {
  ArrowArray array{};
  ArrowChunk() = default;
  ArrowChunk(const ArrowChunk&) = delete;
  ArrowChunk& operator=(const ArrowChunk&) = delete;
  ~ArrowChunk() {
    if (array.release != nullptr) array.release(&array);
  }
};

TextColumn::TextColumn() = default;
TextColumn::TextColumn(TextColumn&&) noexcept = default;
TextColumn& TextColumn::operator=(TextColumn&&) noexcept = default;
TextColumn::~TextColumn() = default;

void TextColumn::add_arrow(const ArrowSchema& schema, ArrowArray received, const char* what) {
  auto chunk = std::make_unique<ArrowChunk>();
  chunk->array = received;
  chunks_.push_back(std::move(chunk));
  const ArrowArray& array = chunks_.back()->array;
  const ArrowSchema* value_schema = schema.dictionary != nullptr ? schema.dictionary : &schema;
  const std::optional<Layout> layout = string_layout(value_schema->format);
  const IndexType index = schema.dictionary != nullptr ? index_type(schema.format) : IndexType{};
  if (!layout || (schema.dictionary != nullptr && index.width == 0))
    throw nb::type_error(type_error_text(schema, what).c_str());
  const ArrowArray* values = schema.dictionary != nullptr ? array.dictionary : &array;
  if (values == nullptr) value_error(std::string(what) + ": a dictionary array without values");
  check_array(*values, what);
  if (schema.dictionary != nullptr && (array.length < 0 || array.offset < 0 || array.n_buffers < 2))
    value_error(std::string(what) + ": a malformed Arrow dictionary array");
  views_.reserve(views_.size() + static_cast<std::size_t>(array.length));
  for (std::int64_t r = 0; r < array.length; ++r) {
    const std::size_t row = views_.size();
    const std::int64_t i = array.offset + r;
    if (!is_valid(array, i))
      value_error(std::string(what) + "[" + std::to_string(row) + "] is null");
    std::int64_t v = i;
    if (schema.dictionary != nullptr) {
      std::int64_t k = 0;
      switch (index.width) {
        case 1:
          k = index.is_signed ? load<std::int8_t>(array.buffers[1], i)
                              : load<std::uint8_t>(array.buffers[1], i);
          break;
        case 2:
          k = index.is_signed ? load<std::int16_t>(array.buffers[1], i)
                              : load<std::uint16_t>(array.buffers[1], i);
          break;
        case 4:
          k = index.is_signed ? load<std::int32_t>(array.buffers[1], i)
                              : static_cast<std::int64_t>(load<std::uint32_t>(array.buffers[1], i));
          break;
        default:
          k = load<std::int64_t>(array.buffers[1], i);
          break;
      }
      if (k < 0 || k >= values->length)
        value_error(std::string(what) + "[" + std::to_string(row) + "]: dictionary index " +
                    std::to_string(k) + " outside its " + std::to_string(values->length) +
                    " values");
      v = values->offset + k;
      if (!is_valid(*values, v))
        value_error(std::string(what) + "[" + std::to_string(row) + "] is null");
    }
    views_.push_back(string_at(*values, *layout, v, what, row));
  }
}

TextColumn TextColumn::from_python(nb::handle source, const char* what) {
  TextColumn column;
  if (nb::hasattr(source, "__arrow_c_stream__")) {
    nb::object capsule = source.attr("__arrow_c_stream__")();
    auto* given =
        static_cast<ArrowArrayStream*>(PyCapsule_GetPointer(capsule.ptr(), "arrow_array_stream"));
    if (given == nullptr) throw nb::python_error();
    if (given->release == nullptr) value_error(std::string(what) + ": a released Arrow stream");
    ArrowArrayStream stream = *given;  // moved out: the capsule no longer releases it
    given->release = nullptr;
    struct StreamOwner {
      ArrowArrayStream* s;
      ~StreamOwner() { s->release(s); }
    } stream_owner{&stream};
    auto stream_error = [&](int code) {
      const char* message = stream.get_last_error ? stream.get_last_error(&stream) : nullptr;
      value_error(std::string(what) + ": the Arrow stream failed (" +
                  (message ? message : "error " + std::to_string(code)) + ")");
    };
    ArrowSchema schema{};
    if (int code = stream.get_schema(&stream, &schema); code != 0) stream_error(code);
    struct SchemaOwner {
      ArrowSchema* s;
      ~SchemaOwner() {
        if (s->release) s->release(s);
      }
    } schema_owner{&schema};
    for (;;) {
      ArrowArray array{};
      if (int code = stream.get_next(&stream, &array); code != 0) stream_error(code);
      if (array.release == nullptr) break;  // the end of the stream
      column.add_arrow(schema, array, what);
    }
    return column;
  }
  if (nb::hasattr(source, "__arrow_c_array__")) {
    nb::tuple pair = nb::borrow<nb::tuple>(source.attr("__arrow_c_array__")());
    auto* schema =
        static_cast<ArrowSchema*>(PyCapsule_GetPointer(nb::object(pair[0]).ptr(), "arrow_schema"));
    auto* given =
        static_cast<ArrowArray*>(PyCapsule_GetPointer(nb::object(pair[1]).ptr(), "arrow_array"));
    if (schema == nullptr || given == nullptr) throw nb::python_error();
    ArrowArray array = *given;  // moved out, as from a stream
    given->release = nullptr;
    column.add_arrow(*schema, array, what);
    return column;
  }
  if (PyUnicode_Check(source.ptr()) || PyBytes_Check(source.ptr()))
    throw nb::type_error((std::string(what) + ": one string; give a list of strings").c_str());
  PyObject* rows = PySequence_Tuple(source.ptr());  // a list may change while the GIL is free
  if (rows == nullptr) {
    PyErr_Clear();
    throw nb::type_error((std::string(what) +
                          ": expected a sequence of str or an Arrow array, not " +
                          nb::type_name(source.type()).c_str())
                             .c_str());
  }
  column.keep_ = nb::steal(rows);
  const Py_ssize_t n = PyTuple_Size(rows);
  column.views_.reserve(static_cast<std::size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PyTuple_GetItem(rows, i);
    const std::string where = std::string(what) + "[" + std::to_string(i) + "]";
    if (!PyUnicode_Check(item)) {
      if (item == Py_None) value_error(where + " is None");
      throw nb::type_error(
          (where + " is " + nb::type_name(nb::handle(item).type()).c_str() + ", expected str")
              .c_str());
    }
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(item, &size);  // cached in the str object
    if (utf8 == nullptr) {
      PyErr_Clear();
      value_error(where + ": not encodable as UTF-8 (a lone surrogate)");
    }
    column.views_.emplace_back(utf8, static_cast<std::size_t>(size));
  }
  return column;
}

TextColumn TextColumn::from_fixed_width(nb::bytes data, std::size_t count, std::size_t width) {
  if (data.size() != count * width) value_error("a fixed-width string array of the wrong size");
  TextColumn column;
  column.keep_ = data;
  const char* base = data.c_str();
  column.views_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::string_view row(base + i * width, width);
    const std::size_t end = row.find_last_not_of('\0');
    column.views_.push_back(row.substr(0, end == std::string_view::npos ? 0 : end + 1));
  }
  return column;
}

}  // namespace mcinfer::python
