#include "tokenizer/post_processor.h"

#include <algorithm>
#include <utility>

namespace mcinfer::tokenizer {

std::size_t Template::added(bool is_pair) const {
  std::size_t n = 0;
  for (const TemplateItem& item : is_pair ? pair : single) {
    if (!item.is_sequence) n += item.ids.size();
  }
  return n;
}

void Template::apply(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>* b,
                     std::vector<std::int32_t>& ids, std::vector<std::int32_t>& type_ids) const {
  for (const TemplateItem& item : b != nullptr ? pair : single) {
    if (item.is_sequence) {
      const std::vector<std::int32_t>* seq = item.sequence == 0 ? &a : b;
      if (seq == nullptr) continue;
      ids.insert(ids.end(), seq->begin(), seq->end());
      type_ids.insert(type_ids.end(), seq->size(), static_cast<std::int32_t>(item.type_id));
    } else {
      ids.insert(ids.end(), item.ids.begin(), item.ids.end());
      type_ids.insert(type_ids.end(), item.ids.size(), static_cast<std::int32_t>(item.type_id));
    }
  }
}

namespace {
TemplateItem seq(int which, std::uint32_t type_id) {
  TemplateItem t;
  t.is_sequence = true;
  t.sequence = which;
  t.type_id = type_id;
  return t;
}
TemplateItem special(std::int32_t id, std::uint32_t type_id) {
  TemplateItem t;
  t.ids = {id};
  t.type_id = type_id;
  return t;
}
}  // namespace

Template Template::none() {
  Template t;
  t.single = {seq(0, 0)};
  t.pair = {seq(0, 0), seq(1, 1)};
  return t;
}

Template Template::bert(std::int32_t cls, std::int32_t sep) {
  Template t;
  t.single = {special(cls, 0), seq(0, 0), special(sep, 0)};
  t.pair = {special(cls, 0), seq(0, 0), special(sep, 0), seq(1, 1), special(sep, 1)};
  return t;
}

Template Template::roberta(std::int32_t cls, std::int32_t sep) {
  Template t;
  t.single = {special(cls, 0), seq(0, 0), special(sep, 0)};
  t.pair = {special(cls, 0), seq(0, 0), special(sep, 0),
            special(sep, 0), seq(1, 0), special(sep, 0)};
  return t;
}

void longest_first(std::size_t len_a, std::size_t len_b, std::size_t max_length,
                   std::size_t& keep_a, std::size_t& keep_b) {
  keep_a = len_a;
  keep_b = len_b;
  if (max_length == 0) {
    keep_a = keep_b = 0;
    return;
  }
  if (len_a + len_b <= max_length) return;
  std::size_t n1 = len_a, n2 = len_b;
  bool swap = false;
  if (n1 > n2) {
    swap = true;
    std::swap(n1, n2);
  }
  if (n1 > max_length) {
    n2 = n1;
  } else {
    n2 = std::max(n1, max_length - n1);
  }
  if (n1 + n2 > max_length) {
    n1 = max_length / 2;
    n2 = n1 + max_length % 2;
  }
  if (swap) std::swap(n1, n2);
  keep_a = std::min(len_a, n1);
  keep_b = std::min(len_b, n2);
}

std::vector<TokenRange> overflow_windows(std::size_t length, std::size_t window,
                                         std::size_t stride) {
  if (length <= window) return {{0, length}};
  std::vector<TokenRange> out;
  const std::size_t step = window - stride;
  for (std::size_t begin = 0;; begin += step) {
    const std::size_t end = std::min(begin + window, length);
    out.push_back({begin, end});
    if (end == length) return out;
  }
}

}  // namespace mcinfer::tokenizer
