#include "tokenizer/added_vocab.h"

#include <algorithm>
#include <unordered_set>

#include "core/utf8.h"
#include "tokenizer/model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/unicode.h"

namespace mcinfer::tokenizer {
namespace {

// Start of the last character of text[0, end), which is well-formed UTF-8.
std::size_t char_before(std::string_view text, std::size_t end) {
  std::size_t p = end - 1;
  while (p > 0 && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
  return p;
}

bool is_word(std::string_view text, std::size_t pos) {
  return (unicode::prop(utf8::decode_valid(text, pos)) & unicode::kWord) != 0;
}

}  // namespace

void AddedVocabulary::add_tokens(const std::vector<AddedToken>& tokens, const Model& model,
                                 const Normalizer* normalizer) {
  std::vector<AddedToken> specials, added;
  std::unordered_set<std::string> special_set;
  for (const AddedToken& t : tokens) {
    if (t.special && !t.content.empty() && special_set.insert(t.content).second) {
      specials.push_back(t);
    }
  }
  std::int64_t max_added = -1;
  auto token_to_id = [&](const std::string& content) -> std::int64_t {
    auto it = by_content_.find(content);
    if (it != by_content_.end()) return it->second;
    return model.token_to_id(content);
  };
  // HF skips a token equal (content and flags) to one already stored under some id.
  auto signature = [](const AddedToken& t) {
    return t.content + '\0' + static_cast<char>('0' + t.single_word) +
           static_cast<char>('0' + t.lstrip) + static_cast<char>('0' + t.rstrip) +
           static_cast<char>('0' + t.normalized) + static_cast<char>('0' + t.special);
  };
  std::unordered_map<std::string, int> stored;
  for (const AddedToken& t : tokens) {
    if (t.content.empty()) continue;
    std::string sig = signature(t);
    if (stored[sig] > 0) continue;
    std::int64_t id = token_to_id(t.content);
    if (id < 0) {
      auto vocab = static_cast<std::int64_t>(model.vocab_size());
      id = (max_added < 0) ? vocab : (max_added >= vocab || vocab == 0) ? max_added + 1 : vocab;
    }
    auto id32 = static_cast<std::int32_t>(id);
    by_content_[t.content] = id32;
    auto it = by_id_.find(id32);
    if (it != by_id_.end()) {
      --stored[signature(it->second)];
      it->second = t;
    } else {
      by_id_.emplace(id32, t);
    }
    ++stored[sig];
    max_added = std::max(max_added, id);
    if (!special_set.count(t.content)) added.push_back(t);
  }
  std::vector<std::pair<std::string, std::int32_t>> raw, norm;
  for (const auto* list : {&specials, &added}) {
    for (const AddedToken& t : *list) {
      std::int32_t id = by_content_.at(t.content);
      if (!t.normalized) {
        raw.emplace_back(t.content, id);
      } else {
        std::string n;
        if (normalizer != nullptr) {
          normalizer->normalize(t.content, n);
        } else {
          n = t.content;
        }
        norm.emplace_back(std::move(n), id);
      }
    }
  }
  build_set(raw, raw_);
  build_set(norm, normalized_);
  for (const auto& [id, t] : by_id_) {
    if (!t.normalized) continue;
    std::string& n = normalized_by_id_[id];
    if (normalizer != nullptr) {
      normalizer->normalize(t.content, n);
    } else {
      n = t.content;
    }
  }
}

void AddedVocabulary::build_set(const std::vector<std::pair<std::string, std::int32_t>>& patterns,
                                MatchSet& set) {
  // Duplicate contents resolve to the same id; the first pattern wins as in Aho-Corasick.
  std::vector<std::pair<std::string, std::int32_t>> reversed;
  std::unordered_set<std::string> seen;
  for (const auto& [content, id] : patterns) {
    if (content.empty() || !seen.insert(content).second) continue;
    reversed.emplace_back(std::string(content.rbegin(), content.rend()), id);
    set.last_byte[static_cast<unsigned char>(content.back())] = true;
  }
  set.trie.build(std::move(reversed));
  const std::size_t nodes = set.trie.node_count();
  set.fail.assign(nodes, Trie::kRoot);
  set.length.assign(nodes, 0);
  set.id.assign(nodes, -1);
  std::vector<std::uint32_t> depth(nodes, 0);
  // Breadth-first: failure links and, per node, the longest content on its suffix chain.
  std::vector<std::uint32_t> queue = {Trie::kRoot};
  for (std::size_t head = 0; head < queue.size(); ++head) {
    std::uint32_t u = queue[head];
    for (int c = 0; c < 256; ++c) {
      std::uint32_t v = u;
      if (!set.trie.step(v, static_cast<unsigned char>(c))) continue;
      depth[v] = depth[u] + 1;
      std::uint32_t f = Trie::kRoot;
      if (u != Trie::kRoot) {
        f = set.fail[u];
        for (;;) {
          std::uint32_t g = f;
          if (set.trie.step(g, static_cast<unsigned char>(c))) {
            f = g;
            break;
          }
          if (f == Trie::kRoot) break;
          f = set.fail[f];
        }
      }
      set.fail[v] = f;
      if (set.trie.value(v) >= 0) {
        set.length[v] = depth[v];
        set.id[v] = set.trie.value(v);
      } else {
        set.length[v] = set.length[f];
        set.id[v] = set.id[f];
      }
      queue.push_back(v);
    }
  }
}

void AddedVocabulary::split(std::string_view text, bool normalized_set,
                            std::vector<Piece>& out) const {
  const MatchSet& set = normalized_set ? normalized_ : raw_;
  const std::size_t n = text.size();
  // Longest content starting at each position (only where one does), found right to left.
  std::vector<Piece> starts;
  std::uint32_t state = Trie::kRoot;
  for (std::size_t i = n; i-- > 0;) {
    auto c = static_cast<unsigned char>(text[i]);
    if (state == Trie::kRoot && !set.last_byte[c]) continue;
    for (;;) {
      std::uint32_t next = state;
      if (set.trie.step(next, c)) {
        state = next;
        break;
      }
      if (state == Trie::kRoot) break;
      state = set.fail[state];
    }
    if (set.length[state] > 0) starts.push_back({i, i + set.length[state], set.id[state]});
  }
  // Leftmost-longest, non-overlapping, as HF's aho-corasick iterator yields them.
  std::size_t start_offset = 0;
  std::size_t pos = 0;
  for (std::size_t k = starts.size(); k-- > 0;) {
    if (starts[k].start < pos) continue;
    std::size_t start = starts[k].start, stop = starts[k].end;
    std::int32_t id = starts[k].id;
    pos = stop;  // matching resumes after the match, whatever happens to it below
    const AddedToken& token = by_id_.at(id);
    if (token.single_word) {
      bool start_space = start == 0 || !is_word(text, char_before(text, start));
      bool stop_space = stop == n || !is_word(text, stop);
      if (!start_space || !stop_space) continue;
    }
    if (token.lstrip) {
      std::size_t s = start;
      while (s > 0) {
        std::size_t c = char_before(text, s);
        if (!unicode::is_white_space(utf8::decode_valid(text, c))) break;
        s = char_before(text, s);
      }
      start = std::max(s, start_offset);
    }
    if (token.rstrip) {
      while (stop < n) {
        std::size_t q = stop;
        if (!unicode::is_white_space(utf8::decode_valid(text, q))) break;
        stop = q;
      }
    }
    if (start_offset < start) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, id});
    start_offset = stop;
  }
  if (start_offset != n) out.push_back({start_offset, n, -1});
}

std::int32_t AddedVocabulary::find(std::string_view content) const {
  auto it = by_content_.find(std::string(content));
  return it == by_content_.end() ? -1 : it->second;
}

const std::string* AddedVocabulary::content(std::int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second.content;
}

const std::string* AddedVocabulary::normalized_content(std::int32_t id) const {
  auto it = normalized_by_id_.find(id);
  return it == normalized_by_id_.end() ? nullptr : &it->second;
}

}  // namespace mcinfer::tokenizer
