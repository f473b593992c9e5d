// Unigram (SentencePiece) segmentation with HF's Viterbi: best path over byte positions,
// candidates from a trie walk, a single-character [UNK] (score min - 10) where no piece covers a
// character, ties kept by the first candidate seen, consecutive unknowns fused.

#include <limits>

#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/model.h"
#include "tokenizer/trie.h"
#include "tokenizer/vocab.h"

namespace mcinfer::tokenizer {
namespace {

constexpr double kUnkPenalty = 10.0;

inline std::size_t utf8_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

class Unigram final : public Model {
 public:
  Unigram(std::vector<std::pair<std::string, double>> pieces, const UnigramOptions& o,
          const std::string& origin)
      : byte_fallback_(o.byte_fallback),
        long_word_(o.long_word),
        min_chunk_(std::max<std::size_t>(1, o.min_chunk)) {
    if (pieces.empty()) fail("{}: field 'model.vocab': empty (at least <unk> is needed)", origin);
    if (o.unk_id >= static_cast<std::int64_t>(pieces.size())) {
      fail("{}: field 'model.unk_id': {} is not below the vocabulary size {}", origin, o.unk_id,
           pieces.size());
    }
    if (o.unk_id < -1) fail("{}: field 'model.unk_id': {} is negative", origin, o.unk_id);
    if (pieces.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
      fail("{}: field 'model.vocab': too many pieces", origin);
    }
    unk_id_ = static_cast<std::int32_t>(o.unk_id);
    std::vector<std::pair<std::string, std::int32_t>> entries;
    entries.reserve(pieces.size());
    scores_.reserve(pieces.size());
    min_score_ = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      entries.emplace_back(std::move(pieces[i].first), static_cast<std::int32_t>(i));
      scores_.push_back(pieces[i].second);
      if (pieces[i].second < min_score_) min_score_ = pieces[i].second;
    }
    vocab_.build(entries, origin);
    std::vector<std::pair<std::string, std::int32_t>> keys;
    keys.reserve(vocab_.size());
    vocab_.map().for_each([&](std::string_view token, std::int32_t id) {
      if (!token.empty()) keys.emplace_back(std::string(token), id);
    });
    joinable_.assign(256 * 256, false);
    for (const auto& [key, id] : keys) {
      for (std::size_t k = 1; k < key.size(); ++k) {
        joinable_[static_cast<unsigned char>(key[k - 1]) * 256 +
                  static_cast<unsigned char>(key[k])] = true;
      }
    }
    trie_.build(std::move(keys));
  }

  void tokenize(std::string_view w, std::vector<std::int32_t>& ids,
                std::size_t limit) const override {
    if (w.empty()) return;
    if (w.size() <= long_word_) {
      viterbi(w, 0, w.size(), 0.0, ids);
      return;
    }
    // Long words: at a boundary no piece can span (its two bytes never sit next to each other
    // inside a piece) and where neither neighbouring character needs [UNK] (which could fuse
    // across it), every segmentation breaks, so the halves are solved one after the other --
    // carrying the running score so the floating-point sums match one pass -- and the work
    // stops once enough ids are out.
    double score = 0.0;
    std::size_t chunk = 0, prev_char = 0;
    for (std::size_t p = utf8_length(static_cast<unsigned char>(w[0])); p < w.size();) {
      std::size_t next = std::min(w.size(), p + utf8_length(static_cast<unsigned char>(w[p])));
      if (p - chunk >= min_chunk_ &&
          !joinable_[static_cast<unsigned char>(w[p - 1]) * 256 +
                     static_cast<unsigned char>(w[p])] &&
          is_piece(w.substr(prev_char, p - prev_char)) && is_piece(w.substr(p, next - p))) {
        score = viterbi(w, chunk, p, score, ids);
        chunk = p;
        if (ids.size() >= limit) return;
      }
      prev_char = p;
      p = next;
    }
    viterbi(w, chunk, w.size(), score, ids);
  }
  std::int32_t token_to_id(std::string_view token) const override { return vocab_.find(token); }
  const std::string* id_to_token(std::int32_t id) const override { return vocab_.token(id); }
  std::size_t vocab_size() const override { return vocab_.size(); }

 private:
  static constexpr std::int32_t kUnknown = -2;
  static constexpr std::uint32_t kNone = 0xFFFFFFFFu;
  struct Node {
    double score = 0.0;
    std::uint32_t start = kNone;
    std::int32_t id = 0;
  };

  bool is_piece(std::string_view s) const {
    std::uint32_t node = Trie::kRoot;
    for (unsigned char b : s) {
      if (!trie_.step(node, b)) return false;
    }
    return trie_.value(node) >= 0;
  }

  // HF's best-path search over w[begin, end) starting from `initial`; appends the ids and
  // returns the score of the best path to `end`.
  double viterbi(std::string_view w, std::size_t begin, std::size_t end, double initial,
                 std::vector<std::int32_t>& ids) const {
    const std::size_t n = end - begin;
    const double unk_score = min_score_ - kUnkPenalty;
    std::vector<Node> best(n + 1);
    best[0].score = initial;
    for (std::size_t start = 0; start < n;) {
      const double here = best[start].score;
      const std::size_t mblen =
          std::min(utf8_length(static_cast<unsigned char>(w[begin + start])), n - start);
      bool single = false;
      std::uint32_t node = Trie::kRoot;
      for (std::size_t i = start; i < n; ++i) {
        if (!trie_.step(node, static_cast<unsigned char>(w[begin + i]))) break;
        std::int32_t id = trie_.value(node);
        if (id < 0) continue;
        std::size_t stop = i + 1;
        double candidate = scores_[id] + here;
        Node& target = best[stop];
        if (target.start == kNone || candidate > target.score) {
          target.score = candidate;
          target.start = static_cast<std::uint32_t>(start);
          target.id = id;
        }
        if (stop - start == mblen) single = true;
      }
      if (!single) {
        Node& target = best[start + mblen];
        double candidate = unk_score + here;
        if (target.start == kNone || candidate > target.score) {
          target.score = candidate;
          target.start = static_cast<std::uint32_t>(start);
          target.id = kUnknown;
        }
      }
      start += mblen;
    }
    // Backtrack, fusing runs of unknowns into one piece; pieces are then looked up by string.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pieces;  // [start, end), reversed
    std::vector<bool> unknown;
    std::size_t stop = n;
    while (stop > 0) {
      const Node& node = best[stop];
      std::size_t start = node.start;
      bool is_unk = node.id == kUnknown || (unk_id_ >= 0 && node.id == unk_id_);
      if (is_unk && !unknown.empty() && unknown.back()) {
        pieces.back().first = static_cast<std::uint32_t>(start);
      } else {
        pieces.emplace_back(static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(stop));
        unknown.push_back(is_unk);
      }
      stop = start;
    }
    for (std::size_t k = pieces.size(); k-- > 0;) {
      std::string_view s = w.substr(begin + pieces[k].first, pieces[k].second - pieces[k].first);
      std::int32_t id = vocab_.find(s);
      if (id >= 0) {
        ids.push_back(id);
        continue;
      }
      if (byte_fallback_ && push_bytes(s, ids)) continue;
      // HF: a missing unk id is an error at this point; emit nothing rather than fail.
      if (unk_id_ >= 0) ids.push_back(unk_id_);
    }
    return best[n].score;
  }

  bool push_bytes(std::string_view s, std::vector<std::int32_t>& ids) const {
    std::size_t mark = ids.size();
    for (unsigned char b : s) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      char name[6] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
      std::int32_t id = vocab_.find(std::string_view(name, 6));
      if (id < 0) {
        ids.resize(mark);
        return false;
      }
      ids.push_back(id);
    }
    return true;
  }

  Vocab vocab_;
  std::vector<double> scores_;
  Trie trie_;
  std::vector<bool> joinable_;  // byte pairs that occur inside some piece
  double min_score_;
  std::int32_t unk_id_;
  bool byte_fallback_;
  std::size_t long_word_;
  std::size_t min_chunk_;
};

}  // namespace

std::unique_ptr<Model> make_unigram(std::vector<std::pair<std::string, double>> pieces,
                                    const UnigramOptions& options, const std::string& origin) {
  return std::make_unique<Unigram>(std::move(pieces), options, origin);
}

}  // namespace mcinfer::tokenizer
