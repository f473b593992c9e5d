// Byte-pair encoding exactly as HF's BPE model applies merges: every adjacent pair that has a
// merge goes into a min-heap ordered by (rank, position); the top is merged if it still holds
// (same resulting id), and the pairs it forms with its neighbours are pushed.

#include <algorithm>
#include <array>
#include <mutex>
#include <tuple>

#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/model.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocab.h"

namespace mcinfer::tokenizer {
namespace {

// Bounded, thread-safe word -> ids cache: sharded, direct-mapped (a new entry replaces the
// old one in its slot), each shard under its own mutex so threads rarely meet.
class BpeCache {
 public:
  static constexpr std::size_t kMaxKey = 64;

  explicit BpeCache(std::size_t capacity) {
    slots_per_shard_ = std::max<std::size_t>(1, capacity / kShards);
    for (auto& s : shards_) s.slots.resize(slots_per_shard_);
  }

  bool get(std::string_view key, std::uint64_t h, std::vector<std::int32_t>& out) const {
    Shard& s = shards_[h % kShards];
    std::lock_guard<std::mutex> lock(s.mutex);
    const Slot& slot = s.slots[(h / kShards) % slots_per_shard_];
    if (!slot.used || slot.hash != h || slot.key != key) return false;
    out.insert(out.end(), slot.ids.begin(), slot.ids.end());
    return true;
  }

  void put(std::string_view key, std::uint64_t h, const std::int32_t* ids, std::size_t n) const {
    Shard& s = shards_[h % kShards];
    std::lock_guard<std::mutex> lock(s.mutex);
    Slot& slot = s.slots[(h / kShards) % slots_per_shard_];
    slot.used = true;
    slot.hash = h;
    slot.key.assign(key);
    slot.ids.assign(ids, ids + n);
  }

 private:
  static constexpr std::size_t kShards = 64;
  struct Slot {
    bool used = false;
    std::uint64_t hash = 0;
    std::string key;
    std::vector<std::int32_t> ids;
  };
  struct Shard {
    std::mutex mutex;
    std::vector<Slot> slots;
  };
  mutable std::array<Shard, kShards> shards_;
  std::size_t slots_per_shard_;
};

struct Symbol {
  std::int32_t id;
  std::int32_t prev;
  std::int32_t next;
  std::uint32_t len;  // bytes; 0 once merged into its left neighbour
};

struct HeapEntry {
  std::uint32_t rank;
  std::uint32_t pos;
  std::int32_t new_id;
  bool operator>(const HeapEntry& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

class Bpe final : public Model {
 public:
  Bpe(std::vector<std::pair<std::string, std::int32_t>> vocab,
      const std::vector<std::pair<std::string, std::string>>& merges, const BpeOptions& o,
      const std::string& origin)
      : o_(o), cache_(o.cache_capacity) {
    vocab_.build(vocab, origin);
    if (o_.has_unk) {
      unk_id_ = vocab_.find(o_.unk_token);
      // HF only fails when an unknown character is met; refusing at load is clearer.
      if (unk_id_ < 0) {
        fail("{}: field 'model.unk_token': '{}' is not in the vocabulary", origin, o_.unk_token);
      }
    }
    merges_.reserve(merges.size());
    std::vector<std::uint64_t> pair_of_rank(merges.size());
    const std::size_t prefix_len = o_.continuing_subword_prefix.size();
    for (std::size_t rank = 0; rank < merges.size(); ++rank) {
      const auto& [a, b] = merges[rank];
      std::int32_t a_id = vocab_.find(a), b_id = vocab_.find(b);
      if (a_id < 0)
        fail("{}: merge {} ('{} {}'): '{}' is not in the vocabulary", origin, rank + 1, a, b, a);
      if (b_id < 0)
        fail("{}: merge {} ('{} {}'): '{}' is not in the vocabulary", origin, rank + 1, a, b, b);
      if (b.size() < prefix_len) {
        fail("{}: merge {} ('{} {}'): shorter than the continuing subword prefix", origin, rank + 1,
             a, b);
      }
      std::string merged = a + b.substr(prefix_len);
      std::int32_t new_id = vocab_.find(merged);
      if (new_id < 0) {
        fail("{}: merge {} ('{} {}'): '{}' is not in the vocabulary", origin, rank + 1, a, b,
             merged);
      }
      pair_of_rank[rank] = pair_key(a_id, b_id);
      merges_.insert_or_assign(pair_key(a_id, b_id), (static_cast<std::uint64_t>(rank) << 32) |
                                                         static_cast<std::uint32_t>(new_id));
    }
    byte_mode_ = o_.byte_level_input && prefix_len == 0 && o_.end_of_word_suffix.empty() &&
                 !o_.byte_fallback;
    if (byte_mode_) build_byte_tables();
    check_monotone(pair_of_rank);
  }

  bool takes_raw_bytes() const override { return byte_mode_; }
  std::int32_t token_to_id(std::string_view token) const override { return vocab_.find(token); }
  const std::string* id_to_token(std::int32_t id) const override { return vocab_.token(id); }
  std::size_t vocab_size() const override { return vocab_.size(); }

  void tokenize(std::string_view word, std::vector<std::int32_t>& ids,
                std::size_t limit) const override {
    if (word.empty()) return;
    if (o_.ignore_merges) {
      std::int32_t id = byte_mode_ ? raw_vocab_.find(word) : vocab_.find(word);
      if (id >= 0) {
        ids.push_back(id);
        return;
      }
    }
    if (word.size() <= BpeCache::kMaxKey) {
      std::uint64_t h = hash_bytes(word);
      if (cache_.get(word, h, ids)) return;
      std::size_t mark = ids.size();
      encode_piece(word, true, true, ids);
      cache_.put(word, h, ids.data() + mark, ids.size() - mark);
      return;
    }
    if (!byte_mode_) {
      encode_piece(word, true, true, ids);
      return;
    }
    // Long words: no merge can cross a boundary whose two bytes never appear next to each
    // other inside a vocabulary token, so the pieces between such boundaries are independent
    // (and the work can stop once enough ids are out).
    std::size_t start = 0;
    for (std::size_t i = 1; i < word.size() && ids.size() < limit; ++i) {
      if (!can_join(word[i - 1], word[i])) {
        encode_piece(word.substr(start, i - start), true, true, ids);
        start = i;
      }
    }
    if (ids.size() < limit) encode_piece(word.substr(start), true, true, ids);
  }

 private:
  static std::uint64_t pair_key(std::int32_t a, std::int32_t b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
           static_cast<std::uint32_t>(b);
  }

  void build_byte_tables() {
    // Map each token written in GPT-2's byte alphabet back to raw bytes.
    std::array<int, 0x180> char_to_byte;
    char_to_byte.fill(-1);
    for (int b = 0; b < 256; ++b) char_to_byte[byte_level_char(static_cast<unsigned char>(b))] = b;
    byte_id_.fill(-1);
    joinable_.assign(256 * 256, false);
    vocab_.map().for_each([&](std::string_view token, std::int32_t id) {
      std::string raw;
      std::size_t pos = 0;
      if (!utf8::is_valid(token)) return;
      while (pos < token.size()) {
        char32_t c = utf8::decode_valid(token, pos);
        if (c >= char_to_byte.size() || char_to_byte[c] < 0) return;  // never produced
        raw.push_back(static_cast<char>(char_to_byte[c]));
      }
      if (raw.empty()) return;
      raw_vocab_.insert(raw, id, /*overwrite=*/true);
      if (raw.size() == 1) byte_id_[static_cast<unsigned char>(raw[0])] = id;
      for (std::size_t k = 1; k < raw.size(); ++k) {
        joinable_[static_cast<unsigned char>(raw[k - 1]) * 256 +
                  static_cast<unsigned char>(raw[k])] = true;
      }
    });
  }

  // Long words can be merged rank by rank (linear time) instead of through one big heap when
  // the merge list is "monotone" -- every merge ranks after the merges that create its two
  // parts, so a merge never creates a pair of lower or equal rank -- and no two token strings
  // share an id (then a stale queue entry can never look valid). Trained merge lists are.
  void check_monotone(const std::vector<std::uint64_t>& pair_of_rank) {
    const std::size_t count = pair_of_rank.size();
    rank_pair_.assign(count, {-1, -1});
    rank_new_.assign(count, -1);
    bool injective = true;
    std::vector<std::uint8_t> seen;
    vocab_.map().for_each([&](std::string_view, std::int32_t id) {
      if (static_cast<std::size_t>(id) >= seen.size())
        seen.resize(static_cast<std::size_t>(id) + 1, 0);
      injective &= seen[id]++ == 0;
    });
    std::vector<std::int64_t> made_at(seen.size(), -1);  // highest rank producing each id
    for (std::size_t r = 0; r < count; ++r) {
      const std::uint64_t* m = merges_.find(pair_of_rank[r]);
      if (m == nullptr || (*m >> 32) != r) continue;  // superseded by a later duplicate
      rank_pair_[r] = {static_cast<std::int32_t>(pair_of_rank[r] >> 32),
                       static_cast<std::int32_t>(pair_of_rank[r] & 0xFFFFFFFFu)};
      auto t = static_cast<std::int32_t>(*m & 0xFFFFFFFFu);
      rank_new_[r] = t;
      if (static_cast<std::size_t>(t) < made_at.size()) made_at[t] = static_cast<std::int64_t>(r);
    }
    monotone_ = injective;
    for (std::size_t r = 0; r < count && monotone_; ++r) {
      auto [a, b] = rank_pair_[r];
      if (a < 0) continue;
      monotone_ =
          made_at[a] < static_cast<std::int64_t>(r) && made_at[b] < static_cast<std::int64_t>(r);
    }
  }

  bool can_join(char a, char b) const {
    unsigned char x = static_cast<unsigned char>(a), y = static_cast<unsigned char>(b);
    // An unknown byte becomes [UNK] and may fuse with its neighbours: keep it attached.
    return joinable_[x * 256 + y] || byte_id_[x] < 0 || byte_id_[y] < 0;
  }

  // HF's merge_word + merge_all for one piece (the whole word unless split above).
  void encode_piece(std::string_view w, bool word_start, bool word_end,
                    std::vector<std::int32_t>& ids) const {
    std::vector<Symbol> symbols;
    symbols.reserve(w.size());
    bool have_unk = false;
    Symbol unk{0, 0, 0, 0};
    auto add = [&](std::int32_t id, std::size_t len) {
      auto index = static_cast<std::int32_t>(symbols.size());
      symbols.push_back({id, index - 1, index + 1, static_cast<std::uint32_t>(len)});
    };
    auto flush_unk = [&]() {
      if (have_unk) {
        add(unk.id, unk.len);
        have_unk = false;
      }
    };
    auto on_unknown = [&](std::size_t byte_len) {
      if (!o_.has_unk) return;  // HF drops the character
      if (have_unk && o_.fuse_unk) {
        unk.len += static_cast<std::uint32_t>(byte_len);
        return;
      }
      flush_unk();
      have_unk = true;
      unk = {unk_id_, 0, 0, static_cast<std::uint32_t>(byte_len)};
    };
    if (byte_mode_) {
      for (unsigned char b : w) {
        std::int32_t id = byte_id_[b];
        if (id >= 0) {
          flush_unk();
          add(id, 1);
        } else {
          on_unknown(1);
        }
      }
    } else {
      std::string s;
      std::vector<std::int32_t> byte_ids;
      std::size_t pos = 0;
      while (pos < w.size()) {
        std::size_t start = pos;
        utf8::decode_valid(w, pos);
        bool first = word_start && start == 0;
        bool last = word_end && pos == w.size();
        s.clear();
        if (!first) s += o_.continuing_subword_prefix;
        s.append(w.substr(start, pos - start));
        if (last) s += o_.end_of_word_suffix;
        std::int32_t id = vocab_.find(s);
        if (id >= 0) {
          flush_unk();
          add(id, pos - start);
          continue;
        }
        if (o_.byte_fallback) {
          // HF adds <0xXX> pieces without flushing a pending [UNK] first; so does this.
          byte_ids.clear();
          for (unsigned char b : s) {
            static constexpr char kHex[] = "0123456789ABCDEF";
            char name[6] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
            std::int32_t id = vocab_.find(std::string_view(name, 6));
            if (id < 0) break;
            byte_ids.push_back(id);
          }
          if (byte_ids.size() == s.size()) {
            for (std::int32_t id : byte_ids) add(id, 1);
            continue;
          }
        }
        on_unknown(pos - start);
      }
    }
    flush_unk();
    if (symbols.empty()) return;
    symbols.back().next = -1;
    if (monotone_ && symbols.size() > o_.long_word) {
      merge_by_rank(symbols);
    } else {
      merge_all(symbols);
    }
    for (const Symbol& s : symbols) {
      if (s.len != 0) ids.push_back(s.id);
    }
  }

  // Same result as merge_all for monotone merge lists: all of a rank's entries exist before
  // that rank is reached and are applied by position, as the heap would pop them.
  void merge_by_rank(std::vector<Symbol>& sym) const {
    std::vector<std::vector<std::uint32_t>> buckets(rank_pair_.size());
    auto push = [&](std::size_t pos) {
      std::int32_t next = sym[pos].next;
      if (next < 0) return;
      if (const std::uint64_t* m = merges_.find(pair_key(sym[pos].id, sym[next].id))) {
        buckets[*m >> 32].push_back(static_cast<std::uint32_t>(pos));
      }
    };
    for (std::size_t i = 0; i + 1 < sym.size(); ++i) push(i);
    for (std::size_t r = 0; r < buckets.size(); ++r) {
      std::vector<std::uint32_t>& bucket = buckets[r];
      if (bucket.empty()) continue;
      if (!std::is_sorted(bucket.begin(), bucket.end())) std::sort(bucket.begin(), bucket.end());
      const auto [a_id, b_id] = rank_pair_[r];
      const std::int32_t new_id = rank_new_[r];
      for (std::uint32_t pos : bucket) {
        Symbol& cur = sym[pos];
        if (cur.len == 0 || cur.next < 0) continue;
        std::int32_t next_pos = cur.next;
        const Symbol right = sym[next_pos];
        if (cur.id != a_id || right.id != b_id) continue;
        cur.id = new_id;
        cur.len += right.len;
        cur.next = right.next;
        sym[next_pos].len = 0;
        if (right.next >= 0) sym[right.next].prev = static_cast<std::int32_t>(pos);
        if (cur.prev >= 0) push(static_cast<std::size_t>(cur.prev));
        push(pos);
      }
      std::vector<std::uint32_t>().swap(bucket);
    }
  }

  void merge_all(std::vector<Symbol>& sym) const {
    std::vector<HeapEntry> heap;
    heap.reserve(sym.size());
    for (std::size_t i = 0; i + 1 < sym.size(); ++i) {
      if (const std::uint64_t* m = merges_.find(pair_key(sym[i].id, sym[i + 1].id))) {
        heap.push_back({static_cast<std::uint32_t>(*m >> 32), static_cast<std::uint32_t>(i),
                        static_cast<std::int32_t>(*m & 0xFFFFFFFFu)});
      }
    }
    auto cmp = std::greater<HeapEntry>();
    std::make_heap(heap.begin(), heap.end(), cmp);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), cmp);
      HeapEntry top = heap.back();
      heap.pop_back();
      Symbol& cur = sym[top.pos];
      if (cur.len == 0 || cur.next == -1) continue;
      std::int32_t next_pos = cur.next;
      Symbol right = sym[next_pos];
      const std::uint64_t* m = merges_.find(pair_key(cur.id, right.id));
      if (m == nullptr || static_cast<std::int32_t>(*m & 0xFFFFFFFFu) != top.new_id) continue;
      cur.id = top.new_id;
      cur.len += right.len;
      cur.next = right.next;
      sym[next_pos].len = 0;
      if (right.next >= 0) sym[right.next].prev = static_cast<std::int32_t>(top.pos);
      if (cur.prev >= 0) {
        if (const std::uint64_t* pm = merges_.find(pair_key(sym[cur.prev].id, cur.id))) {
          heap.push_back({static_cast<std::uint32_t>(*pm >> 32),
                          static_cast<std::uint32_t>(cur.prev),
                          static_cast<std::int32_t>(*pm & 0xFFFFFFFFu)});
          std::push_heap(heap.begin(), heap.end(), cmp);
        }
      }
      if (cur.next >= 0) {
        if (const std::uint64_t* nm = merges_.find(pair_key(cur.id, sym[cur.next].id))) {
          heap.push_back({static_cast<std::uint32_t>(*nm >> 32), top.pos,
                          static_cast<std::int32_t>(*nm & 0xFFFFFFFFu)});
          std::push_heap(heap.begin(), heap.end(), cmp);
        }
      }
    }
  }

  BpeOptions o_;
  Vocab vocab_;
  U64Map merges_;
  std::vector<std::pair<std::int32_t, std::int32_t>> rank_pair_;  // rank -> pair (-1: unused)
  std::vector<std::int32_t> rank_new_;                            // rank -> merged id
  bool monotone_ = false;
  std::int32_t unk_id_ = -1;
  bool byte_mode_ = false;
  StringIdMap raw_vocab_;
  std::array<std::int32_t, 256> byte_id_{};
  std::vector<bool> joinable_;
  BpeCache cache_;
};

}  // namespace

std::unique_ptr<Model> make_bpe(std::vector<std::pair<std::string, std::int32_t>> vocab,
                                const std::vector<std::pair<std::string, std::string>>& merges,
                                const BpeOptions& options, const std::string& origin) {
  return std::make_unique<Bpe>(std::move(vocab), merges, options, origin);
}

}  // namespace mcinfer::tokenizer
