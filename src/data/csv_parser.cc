#include "data/csv_parser.h"

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>

namespace mcinfer::data {
namespace {

// Bytes that end an unquoted field.
constexpr std::array<bool, 256> kStops = [] {
  std::array<bool, 256> t{};
  t[static_cast<unsigned char>(',')] = true;
  t[static_cast<unsigned char>('\n')] = true;
  t[static_cast<unsigned char>('\r')] = true;
  return t;
}();

const char* scan_unquoted(const char* p, const char* e) {
  while (p < e && !kStops[static_cast<unsigned char>(*p)]) ++p;
  return p;
}

// Line breaks in [p, e): every LF, and every CR not followed by LF. A CR at e counts: the
// caller only passes ranges whose end is not the first half of a CRLF.
std::uint64_t count_lines(const char* p, const char* e) {
  std::uint64_t n = 0;
  for (const char* q = p; (q = static_cast<const char*>(std::memchr(q, '\n', e - q))); ++q) ++n;
  for (const char* q = p; (q = static_cast<const char*>(std::memchr(q, '\r', e - q))); ++q) {
    if (q + 1 == e || q[1] != '\n') ++n;
  }
  return n;
}

}  // namespace

std::string format_byte_size(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} bytes", bytes);
}

std::string quote_byte(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7F) return fmt::format("'{}'", c);
  return fmt::format("\\x{:02X}", u);
}

CsvParser::CsvParser(StreamBuffer& in, std::size_t max_record_bytes)
    : in_(in), max_record_(std::max<std::size_t>(max_record_bytes, 1)), window_(max_record_ + 1) {}

void CsvParser::skip_bom() {
  while (in_.available() < 3 && in_.read_more(window_)) {
  }
  if (in_.available() >= 3 && std::memcmp(in_.begin(), "\xEF\xBB\xBF", 3) == 0) in_.consume(3);
}

bool CsvParser::skip_blank_lines() {
  for (;;) {
    if (in_.available() == 0 && !in_.read_more(window_)) return false;
    char c = *in_.begin();
    if (c == '\n') {
      in_.consume(1);
      ++line_;
    } else if (c == '\r') {
      if (in_.available() < 2 && in_.read_more(window_)) continue;
      in_.consume(in_.available() >= 2 && in_.begin()[1] == '\n' ? 2 : 1);
      ++line_;
    } else {
      return true;
    }
  }
}

CsvParser::Scan CsvParser::scan(CsvRecord& record, std::size_t& record_bytes) {
  const char* s = in_.begin();
  const char* e = in_.end();
  const bool eof = in_.eof();
  const char* p = s;
  spans_.clear();
  unclosed_line_ = 0;
  record.problem = CsvRecord::Problem::kNone;
  record.terminated = true;
  auto note = [&](CsvRecord::Problem problem, char c, std::uint64_t line) {
    if (record.problem != CsvRecord::Problem::kNone) return;
    record.problem = problem;
    record.problem_field = spans_.size();
    record.problem_char = c;
    record.problem_line = line;
  };
  for (;;) {
    Span span{};
    if (p < e && *p == '"') {
      const char* q = p + 1;
      const char* close = nullptr;
      for (;;) {
        auto r = static_cast<const char*>(std::memchr(q, '"', e - q));
        if (r == nullptr) break;
        if (r + 1 == e) {
          if (!eof) return Scan::kNeedMore;  // a doubled quote or the closing one?
          close = r;
          break;
        }
        if (r[1] == '"') {
          span.escapes = true;
          q = r + 2;
          continue;
        }
        close = r;
        break;
      }
      if (close == nullptr) {
        if (!eof) return Scan::kNeedMore;
        unclosed_line_ = record.line + count_lines(s, p);
        note(CsvRecord::Problem::kUnclosedQuote, 0, unclosed_line_);
        spans_.push_back(
            {static_cast<std::size_t>(p + 1 - s), static_cast<std::size_t>(e - s), span.escapes});
        record.terminated = false;
        p = e;
        break;
      }
      span.begin = p + 1 - s;
      span.end = close - s;
      p = close + 1;
      if (p < e && !kStops[static_cast<unsigned char>(*p)]) {
        note(CsvRecord::Problem::kAfterQuote, *p, 0);
        p = scan_unquoted(p, e);
      }
    } else {
      const char* q = scan_unquoted(p, e);
      span.begin = p - s;
      span.end = q - s;
      p = q;
    }
    if (p == e) {
      if (!eof) return Scan::kNeedMore;
      spans_.push_back(span);
      record.terminated = false;
      break;
    }
    spans_.push_back(span);
    if (*p == ',') {
      ++p;
      continue;
    }
    if (*p == '\n') {
      ++p;
    } else {  // '\r': CRLF or a lone CR
      if (p + 1 == e && !eof) return Scan::kNeedMore;
      p += (p + 1 < e && p[1] == '\n') ? 2 : 1;
    }
    break;
  }
  record_bytes = p - s;
  return Scan::kDone;
}

// A record too long to hold: walk it byte by byte with the same grammar as scan(), keeping
// only the state, so that the next record starts where it would have.
void CsvParser::skip_oversized(CsvRecord& record) {
  enum class State { kFieldStart, kUnquoted, kQuoted, kQuoteSeen, kAfterCr };
  State state = State::kFieldStart;
  std::uint64_t lines = 0;
  std::uint64_t quote_line = 0;
  bool prev_cr = false;
  bool done = false;
  record.terminated = true;
  while (!done) {
    if (in_.available() == 0 && !in_.read_more(window_)) {
      record.terminated = state == State::kAfterCr;
      break;
    }
    const char* b = in_.begin();
    const char* e = in_.end();
    const char* p = b;
    for (; p < e && !done; ++p) {
      char c = *p;
      switch (state) {
        case State::kFieldStart:
        case State::kUnquoted:
        case State::kQuoteSeen:
          if (c == ',') {
            state = State::kFieldStart;
          } else if (c == '\n') {
            ++lines;
            done = true;
          } else if (c == '\r') {
            ++lines;
            state = State::kAfterCr;
          } else if (c == '"' && state == State::kFieldStart) {
            state = State::kQuoted;
            quote_line = record.line + lines;
          } else if (c == '"' && state == State::kQuoteSeen) {
            state = State::kQuoted;
          } else {
            state = State::kUnquoted;
          }
          break;
        case State::kQuoted:
          if (c == '"') {
            state = State::kQuoteSeen;
          } else if (c == '\r' || (c == '\n' && !prev_cr)) {
            ++lines;
          }
          break;
        case State::kAfterCr:
          done = true;
          if (c != '\n') --p;  // a lone CR: this byte starts the next record
          break;
      }
      prev_cr = c == '\r';
    }
    in_.consume(p - b);
  }
  if (!record.terminated && state == State::kQuoted) record.problem_line = quote_line;
  record.problem = CsvRecord::Problem::kTooLarge;
  record.problem_field = 0;
  record.fields.clear();
  record.lines = lines;
  line_ += lines;
}

bool CsvParser::next(CsvRecord& record) {
  if (!skip_blank_lines()) return false;
  record.line = line_;
  record.problem_line = 0;
  std::size_t record_bytes = 0;
  for (;;) {
    if (scan(record, record_bytes) == Scan::kDone) break;
    if (in_.available() >= window_ || (!in_.read_more(window_) && !in_.eof())) {
      skip_oversized(record);
      return true;
    }
  }
  char* s = in_.begin();
  if (record_bytes > max_record_) {
    record.lines = count_lines(s, s + record_bytes);
    record.problem = CsvRecord::Problem::kTooLarge;
    record.problem_field = 0;
    record.problem_line = unclosed_line_;
    record.fields.clear();
    line_ += record.lines;
    in_.consume(record_bytes);
    return true;
  }
  if (void* nul = std::memchr(s, '\0', record_bytes)) {
    std::size_t at = static_cast<char*>(nul) - s;
    std::size_t field = 0;
    while (field + 1 < spans_.size() && spans_[field + 1].begin <= at) ++field;
    if (record.problem == CsvRecord::Problem::kNone || field < record.problem_field) {
      record.problem = CsvRecord::Problem::kNul;
      record.problem_field = field;
    }
  }
  record.lines = count_lines(s, s + record_bytes);
  record.fields.clear();
  for (const Span& span : spans_) {
    char* b = s + span.begin;
    std::size_t n = span.end - span.begin;
    if (span.escapes) {  // collapse "" to " in place; the record is final now
      char* w = b;
      for (std::size_t i = 0; i < n; ++i) {
        *w++ = b[i];
        if (b[i] == '"' && i + 1 < n && b[i + 1] == '"') ++i;
      }
      n = w - b;
    }
    record.fields.emplace_back(b, n);
  }
  line_ += record.lines;
  in_.consume(record_bytes);
  return true;
}

std::string describe_csv_problem(const CsvRecord& record, const std::vector<std::string>& names,
                                 std::size_t max_record_bytes) {
  std::string field = record.problem_field < names.size()
                          ? fmt::format("field '{}'", names[record.problem_field])
                          : fmt::format("field {}", record.problem_field + 1);
  switch (record.problem) {
    case CsvRecord::Problem::kNone:
      return "";
    case CsvRecord::Problem::kNul:
      return fmt::format("{}: NUL byte (is this a binary or UTF-16 file?)", field);
    case CsvRecord::Problem::kAfterQuote:
      return fmt::format(
          "{}: unexpected {} after the closing quote (a quote inside a quoted field must be "
          "doubled)",
          field, quote_byte(record.problem_char));
    case CsvRecord::Problem::kUnclosedQuote:
      return fmt::format("{}: the quote opened on line {} never closes", field,
                         record.problem_line);
    case CsvRecord::Problem::kTooLarge:
      if (record.problem_line != 0) {
        return fmt::format("row larger than {} (the quote opened on line {} never closes)",
                           format_byte_size(max_record_bytes), record.problem_line);
      }
      return fmt::format("row larger than {}", format_byte_size(max_record_bytes));
  }
  return "";
}

}  // namespace mcinfer::data
