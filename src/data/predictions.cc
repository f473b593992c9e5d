#include "data/predictions.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace mcinfer::data {
namespace {

template <typename T>
void append_number(T value, LineFormat format, std::string& out) {
  if (!std::isfinite(value) && format == LineFormat::kJsonl) {
    out.append("null");
    return;
  }
  char buf[48];
  char* end = fmt::format_to(buf, FMT_COMPILE("{}"), value);  // shortest round-trip form
  out.append(buf, end);
}

void append_json_id(std::string_view id, bool id_is_string, std::string& out) {
  out.append("{\"id\":");
  if (id_is_string) {
    append_json_string(id, out);
  } else {
    out.append(id);
  }
}

template <typename T>
void append_array(std::span<const T> values, std::string& out) {
  out.push_back('[');
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out.push_back(',');
    append_number(values[i], LineFormat::kJsonl, out);
  }
  out.push_back(']');
}

// JSONL fields of a sparse row: ,"indices":[3,17],"values":[0.25,1.5] (the nonzeros, as float32).
template <typename T>
void append_sparse(std::span<const T> values, std::string& out) {
  out.append(",\"indices\":[");
  bool first = true;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] == 0) continue;
    if (!first) out.push_back(',');
    first = false;
    char buf[24];
    char* end = fmt::format_to(buf, FMT_COMPILE("{}"), i);
    out.append(buf, end);
  }
  out.append("],\"values\":[");
  first = true;
  for (T v : values) {
    if (v == 0) continue;
    if (!first) out.push_back(',');
    first = false;
    append_number(static_cast<float>(v), LineFormat::kJsonl, out);
  }
  out.push_back(']');
}

// JSONL fields of the output groups: "probs":{"neg":0.1,"pos":0.9},"cls":[...]
template <typename T>
void append_groups(const PredictionSchema& schema, std::span<const T> values, std::string& out) {
  std::size_t at = 0;
  for (const OutputGroup& group : schema.groups) {
    out.push_back(',');
    append_json_string(group.name, out);
    out.push_back(':');
    const std::size_t n = std::min(group.count, values.size() - std::min(at, values.size()));
    if (!group.labelled) {
      append_array(values.subspan(at, n), out);
    } else {
      out.push_back('{');
      for (std::size_t i = 0; i < n; ++i) {
        if (i > 0) out.push_back(',');
        // The column is "<group>.<label>".
        append_json_string(std::string_view(schema.columns[at + i]).substr(group.name.size() + 1),
                           out);
        out.push_back(':');
        append_number(values[at + i], LineFormat::kJsonl, out);
      }
      out.push_back('}');
    }
    at += group.count;
  }
}

template <typename T>
void append_row(const PredictionSchema& schema, LineFormat format, std::string_view id,
                bool id_is_string, std::span<const T> values, std::string& out) {
  if (format == LineFormat::kCsv) {
    append_csv_field(id, out);
    for (T v : values) {
      out.push_back(',');
      append_number(v, format, out);
    }
    out.push_back('\n');
    return;
  }
  append_json_id(id, id_is_string, out);
  if (!schema.groups.empty()) {
    append_groups(schema, values, out);
    out.append("}\n");
    return;
  }
  if (schema.sparse) {
    append_sparse(values, out);
    out.append("}\n");
    return;
  }
  if (schema.embedding) {
    out.append(",\"embedding\":");
    append_array(values, out);
    out.append("}\n");
    return;
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    out.push_back(',');
    append_json_string(
        i < schema.columns.size() ? std::string_view(schema.columns[i]) : std::string_view("?"),
        out);
    out.push_back(':');
    append_number(values[i], format, out);
  }
  out.append("}\n");
}

}  // namespace

RowKind row_kind(const PredictionSchema& schema) {
  if (schema.sparse) return RowKind::kSparse;
  if (!schema.groups.empty()) return RowKind::kGroups;
  return schema.embedding ? RowKind::kEmbedding : RowKind::kColumns;
}

void append_sparse_prediction(std::string_view id, bool id_is_string,
                              std::span<const std::int32_t> indices, std::span<const double> values,
                              std::string& out) {
  append_json_id(id, id_is_string, out);
  out.append(",\"indices\":[");
  for (std::size_t i = 0; i < indices.size(); ++i) {
    if (i > 0) out.push_back(',');
    char buf[16];
    char* end = fmt::format_to(buf, FMT_COMPILE("{}"), indices[i]);
    out.append(buf, end);
  }
  out.append("],\"values\":[");
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out.push_back(',');
    append_number(static_cast<float>(values[i]), LineFormat::kJsonl, out);
  }
  out.append("]}\n");
}

void append_csv_field(std::string_view text, std::string& out) {
  bool quote = !text.empty() && (text.front() == ' ' || text.front() == '\t' ||
                                 text.back() == ' ' || text.back() == '\t');
  if (!quote) {
    for (char c : text) {
      if (c == ',' || c == '"' || c == '\n' || c == '\r') {
        quote = true;
        break;
      }
    }
  }
  if (!quote) {
    out.append(text);
    return;
  }
  out.push_back('"');
  for (char c : text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}

void append_json_string(std::string_view text, std::string& out) {
  out.push_back('"');
  for (char c : text) {
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          char* end = fmt::format_to(buf, "\\u{:04x}", static_cast<unsigned>(c));
          out.append(buf, end);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

bool is_embedding_columns(const std::vector<std::string>& columns) {
  if (columns.empty()) return false;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] != fmt::format("e{}", i)) return false;
  }
  return true;
}

bool is_output_group_name(std::string_view name) {
  return std::find(std::begin(kOutputGroupNames), std::end(kOutputGroupNames), name) !=
         std::end(kOutputGroupNames);
}

std::vector<OutputGroup> output_groups_of(const std::vector<std::string>& columns) {
  std::vector<OutputGroup> groups;
  for (const std::string& column : columns) {
    const std::size_t dot = column.find('.');
    if (dot == std::string::npos) return {};
    const std::string_view name = std::string_view(column).substr(0, dot);
    if (!is_output_group_name(name)) return {};
    if (groups.empty() || groups.back().name != name) {
      for (const OutputGroup& g : groups)
        if (g.name == name) return {};  // not consecutive
      groups.push_back({std::string(name), 0, false});
    }
    ++groups.back().count;
  }
  // A group whose columns are exactly e0..e{n-1} is a vector; anything else is labelled.
  std::size_t at = 0;
  for (OutputGroup& g : groups) {
    for (std::size_t i = 0; i < g.count && !g.labelled; ++i)
      g.labelled =
          std::string_view(columns[at + i]).substr(g.name.size() + 1) != fmt::format("e{}", i);
    at += g.count;
  }
  return groups;
}

std::string prediction_header(const PredictionSchema& schema, LineFormat format) {
  if (format != LineFormat::kCsv) return "";
  std::string out = "id";
  for (const auto& c : schema.columns) {
    out.push_back(',');
    append_csv_field(c, out);
  }
  out.push_back('\n');
  return out;
}

void append_prediction(const PredictionSchema& schema, LineFormat format, const RowId& id,
                       std::span<const float> values, std::string& out) {
  append_row(schema, format, id.text, id.is_string, values, out);
}

void append_prediction(const PredictionSchema& schema, LineFormat format, const RowId& id,
                       std::span<const double> values, std::string& out) {
  append_row(schema, format, id.text, id.is_string, values, out);
}

void append_prediction(const PredictionSchema& schema, LineFormat format, std::string_view id,
                       bool id_is_string, std::span<const double> values, std::string& out) {
  append_row(schema, format, id, id_is_string, values, out);
}

}  // namespace mcinfer::data
