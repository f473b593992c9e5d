// tokenizer.json: the normalizer, pre_tokenizer, model, post_processor and added_tokens a
// checkpoint of the supported families can contain; anything else is refused by name.
// "truncation", "padding" and "decoder" are ignored (transformers resets the first two on every
// call and the decoder does not affect ids) but for padding's direction, which says the side the
// model pads on when tokenizer_config.json does not (Tokenizer::padding_side). With
// Compat::kTransformers5 a DebertaV2Tokenizer's file gives only its vocabulary, charsmap and added
// tokens (deberta_from_json).

#include <limits>

#include "core/utf8.h"
#include "tokenizer/json_node.h"
#include "tokenizer/loader.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/split.h"

namespace mcinfer::tokenizer {
namespace {

// current_case_data: lowercase as the current stack's tokenizers does (Compat::kTransformers5).
std::unique_ptr<Normalizer> parse_normalizer(const JsonNode& n, bool current_case_data);

std::unique_ptr<Normalizer> parse_normalizer(const JsonNode& n, bool current_case_data) {
  n.expect_object();
  std::string type = n.at("type").str();
  if (type == "BertNormalizer") {
    BertNormalizerOptions o;
    o.clean_text = n.bool_or("clean_text", true);
    o.handle_chinese_chars = n.bool_or("handle_chinese_chars", true);
    o.lowercase = n.bool_or("lowercase", true);
    auto strip = n.get("strip_accents");
    o.strip_accents = strip ? strip->boolean() : o.lowercase;
    o.current_case_data = current_case_data;
    return make_bert_normalizer(o);
  }
  if (type == "Lowercase") return make_lowercase(current_case_data);
  if (type == "NFD") return make_unicode_form(UnicodeForm::kNFD);
  if (type == "NFKD") return make_unicode_form(UnicodeForm::kNFKD);
  if (type == "NFC") return make_unicode_form(UnicodeForm::kNFC);
  if (type == "NFKC") return make_unicode_form(UnicodeForm::kNFKC);
  if (type == "StripAccents") return make_strip_accents();
  if (type == "Nmt") return make_nmt();
  if (type == "Strip")
    return make_strip(n.bool_or("strip_left", true), n.bool_or("strip_right", true));
  if (type == "Prepend") return make_prepend(n.at("prepend").str());
  if (type == "Replace") {
    JsonNode pattern = n.at("pattern");
    std::string content = n.at("content").str();
    ReplacePattern p;
    if (auto s = pattern.get("String")) {
      p.kind = ReplacePattern::Kind::kLiteral;
      p.literal = s->str();
    } else if (auto r = pattern.get("Regex")) {
      std::string re = r->str();
      if (!parse_replace_regex(re, p)) {
        r->fail(
            fmt::format("regex '{}' is not supported (only a literal, or one character or "
                        "class with a quantifier such as ' {{2,}}')",
                        re));
      }
    } else {
      pattern.fail("expected {\"String\": ...} or {\"Regex\": ...}");
    }
    return make_replace(std::move(p), std::move(content));
  }
  if (type == "Precompiled") {
    JsonNode blob = n.at("precompiled_charsmap");
    std::string bytes = decode_base64(blob.str(), n.origin(), blob.path());
    return make_precompiled(
        PrecompiledCharsmap::parse(bytes, n.origin() + ": field '" + blob.path() + "'"));
  }
  if (type == "Sequence") {
    JsonNode list = n.at("normalizers");
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (std::size_t i = 0; i < list.size(); ++i)
      steps.push_back(parse_normalizer(list[i], current_case_data));
    return make_sequence(std::move(steps));
  }
  n.at("type").fail(fmt::format("unknown or unsupported normalizer type '{}'", type));
}

char32_t single_char(const JsonNode& n) {
  std::string s = n.str();
  std::size_t pos = 0;
  if (s.empty() || !utf8::is_valid(s)) n.fail("expected one character");
  char32_t c = utf8::decode_valid(s, pos);
  if (pos != s.size()) n.fail("expected one character");
  return c;
}

// A field's name as errors give it: "<file>: field '<path>'".
std::string field_name(const JsonNode& n) {
  return fmt::format("{}: field '{}'", n.origin(), n.path());
}

std::unique_ptr<PreTokenizer> parse_split(const JsonNode& n) {
  JsonNode pattern = n.at("pattern");
  SplitPattern p;
  std::optional<JsonNode> text;
  if ((text = pattern.get("String"))) {
    p.literal = true;
  } else if ((text = pattern.get("Regex"))) {
    p.literal = false;
  } else {
    pattern.fail("expected {\"String\": ...} or {\"Regex\": ...}");
  }
  p.text = text->str();
  JsonNode behavior = n.at("behavior");
  const std::optional<SplitBehavior> b = kSplitBehaviorNames.parse(behavior.str());
  if (!b) {
    behavior.fail(fmt::format("unknown behavior '{}' (expected {})", behavior.str(),
                              kSplitBehaviorNames.choices()));
  }
  return make_split(p, *b, n.bool_or("invert", false), field_name(*text));
}

std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const JsonNode& n) {
  n.expect_object();
  std::string type = n.at("type").str();
  if (type == "BertPreTokenizer") return make_bert_pre_tokenizer();
  if (type == "ByteLevel") {
    return make_byte_level(n.bool_or("add_prefix_space", true), n.bool_or("use_regex", true));
  }
  if (type == "Metaspace") {
    char32_t rep = single_char(n.at("replacement"));
    PrependScheme scheme = PrependScheme::kAlways;
    if (auto s = n.get("prepend_scheme")) {
      std::string v = s->str();
      if (v == "always") {
        scheme = PrependScheme::kAlways;
      } else if (v == "first") {
        scheme = PrependScheme::kFirst;
      } else if (v == "never") {
        scheme = PrependScheme::kNever;
      } else {
        s->fail(fmt::format("unknown prepend_scheme '{}'", v));
      }
    }
    if (auto a = n.get("add_prefix_space"); a && !a->boolean()) {
      if (scheme != PrependScheme::kNever && n.get("prepend_scheme")) {
        a->fail("add_prefix_space false does not match prepend_scheme");
      }
      scheme = PrependScheme::kNever;
    }
    return make_metaspace(rep, scheme, n.bool_or("split", true));
  }
  if (type == "Whitespace") return make_whitespace();
  if (type == "WhitespaceSplit") return make_whitespace_split();
  if (type == "Punctuation") {
    if (auto b = n.get("behavior"); b && b->str() != "Isolated") {
      b->fail(fmt::format("behavior '{}' is not supported (only \"Isolated\")", b->str()));
    }
    return make_punctuation();
  }
  if (type == "Split") return parse_split(n);
  if (type == "Sequence") {
    JsonNode list = n.at("pretokenizers");
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (std::size_t i = 0; i < list.size(); ++i) steps.push_back(parse_pre_tokenizer(list[i]));
    return make_pre_tokenizer_sequence(std::move(steps), n.origin());
  }
  n.at("type").fail(fmt::format("unknown or unsupported pre-tokenizer type '{}'", type));
}

std::int32_t checked_id(const JsonNode& n) {
  std::int64_t v = n.integer();
  if (v < 0 || v > std::numeric_limits<std::int32_t>::max()) n.fail("id out of range");
  return static_cast<std::int32_t>(v);
}

std::vector<std::pair<std::string, std::int32_t>> parse_vocab_object(const JsonNode& vocab) {
  vocab.expect_object();
  std::vector<std::pair<std::string, std::int32_t>> out;
  out.reserve(vocab.json().size());
  for (auto it = vocab.json().begin(); it != vocab.json().end(); ++it) {
    JsonNode id(it.value(), vocab.origin(), vocab.child_path(it.key()));
    out.emplace_back(it.key(), checked_id(id));
  }
  return out;
}

std::vector<std::pair<std::string, double>> unigram_pieces(const JsonNode& vocab) {
  std::vector<std::pair<std::string, double>> pieces;
  pieces.reserve(vocab.size());
  for (std::size_t i = 0; i < vocab.size(); ++i) {
    JsonNode e = vocab[i];
    if (e.size() != 2) e.fail("expected [piece, score]");
    pieces.emplace_back(e[0].str(), e[1].number());
  }
  return pieces;
}

std::unique_ptr<Model> parse_model(const JsonNode& n, bool byte_level, std::string& kind) {
  n.expect_object();
  auto type_node = n.get("type");
  if (!type_node) n.fail("missing 'type' (WordPiece, BPE or Unigram)");
  std::string type = type_node->str();
  const std::string& origin = n.origin();
  if (type == "WordPiece") {
    kind = "wordpiece";
    WordPieceOptions o;
    o.unk_token = n.str_or("unk_token", "[UNK]");
    o.continuing_subword_prefix = n.str_or("continuing_subword_prefix", "##");
    if (auto m = n.get("max_input_chars_per_word")) {
      std::int64_t v = m->integer();
      if (v < 0) m->fail("negative");
      o.max_input_chars_per_word = static_cast<std::size_t>(v);
    }
    return make_wordpiece(parse_vocab_object(n.at("vocab")), o, origin);
  }
  if (type == "BPE") {
    kind = "bpe";
    BpeOptions o;
    if (auto d = n.get("dropout"); d && d->number() != 0.0) {
      d->fail("BPE dropout is random; only null or 0 gives reproducible ids");
    }
    if (auto u = n.get("unk_token")) {
      o.unk_token = u->str();
      o.has_unk = true;
    }
    o.continuing_subword_prefix = n.str_or("continuing_subword_prefix", "");
    o.end_of_word_suffix = n.str_or("end_of_word_suffix", "");
    o.fuse_unk = n.bool_or("fuse_unk", false);
    o.byte_fallback = n.bool_or("byte_fallback", false);
    o.ignore_merges = n.bool_or("ignore_merges", false);
    o.byte_level_input = byte_level;
    JsonNode merges = n.at("merges");
    std::vector<std::pair<std::string, std::string>> pairs;
    pairs.reserve(merges.size());
    for (std::size_t i = 0; i < merges.size(); ++i) {
      JsonNode m = merges[i];
      if (m.json().is_array()) {
        if (m.size() != 2) m.fail("expected a pair of strings");
        pairs.emplace_back(m[0].str(), m[1].str());
        continue;
      }
      std::string line = m.str();
      if (line.rfind("#version", 0) == 0) continue;
      std::size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
        m.fail("expected two tokens separated by one space");
      }
      pairs.emplace_back(line.substr(0, space), line.substr(space + 1));
    }
    return make_bpe(parse_vocab_object(n.at("vocab")), pairs, o, origin);
  }
  if (type == "Unigram") {
    kind = "unigram";
    UnigramOptions o;
    if (auto u = n.get("unk_id")) o.unk_id = u->integer();
    o.byte_fallback = n.bool_or("byte_fallback", false);
    return make_unigram(unigram_pieces(n.at("vocab")), o, origin);
  }
  type_node->fail(
      fmt::format("unknown or unsupported model type '{}' (expected WordPiece, BPE "
                  "or Unigram)",
                  type));
}

// The id a token string has once the added tokens are in: what HF's post-processors store.
std::pair<std::string, std::int32_t> token_pair(const JsonNode& n) {
  if (n.size() != 2) n.fail("expected [token, id]");
  return {n[0].str(), checked_id(n[1])};
}

bool parse_post_processor(const JsonNode& n, Template& out) {
  n.expect_object();
  std::string type = n.at("type").str();
  if (type == "ByteLevel") return false;  // offsets only
  if (type == "BertProcessing") {
    out = Template::bert(token_pair(n.at("cls")).second, token_pair(n.at("sep")).second);
    return true;
  }
  if (type == "RobertaProcessing") {
    out = Template::roberta(token_pair(n.at("cls")).second, token_pair(n.at("sep")).second);
    return true;
  }
  if (type == "TemplateProcessing") {
    JsonNode specials = n.at("special_tokens");
    specials.expect_object();
    auto items = [&](const JsonNode& list, bool is_pair) {
      std::vector<TemplateItem> result;
      for (std::size_t i = 0; i < list.size(); ++i) {
        JsonNode item = list[i];
        TemplateItem t;
        if (auto s = item.get("Sequence")) {
          std::string which = s->at("id").str();
          if (which != "A" && which != "B") s->at("id").fail("expected \"A\" or \"B\"");
          if (which == "B" && !is_pair) s->at("id").fail("sequence B in the single template");
          t.is_sequence = true;
          t.sequence = which == "A" ? 0 : 1;
          t.type_id = static_cast<std::uint32_t>(checked_id(s->at("type_id")));
        } else if (auto sp = item.get("SpecialToken")) {
          std::string name = sp->at("id").str();
          auto def = specials.get(name);
          if (!def) sp->at("id").fail(fmt::format("'{}' is not in special_tokens", name));
          JsonNode ids = def->at("ids");
          for (std::size_t k = 0; k < ids.size(); ++k) t.ids.push_back(checked_id(ids[k]));
          t.type_id = static_cast<std::uint32_t>(checked_id(sp->at("type_id")));
        } else {
          item.fail("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
        }
        result.push_back(std::move(t));
      }
      return result;
    };
    out.single = items(n.at("single"), false);
    out.pair = items(n.at("pair"), true);
    return true;
  }
  if (type == "Sequence") {
    JsonNode list = n.at("processors");
    bool found = false;
    for (std::size_t i = 0; i < list.size(); ++i) {
      Template t;
      if (parse_post_processor(list[i], t)) {
        if (found) list[i].fail("only one processor that adds special tokens is supported");
        out = std::move(t);
        found = true;
      }
    }
    return found;
  }
  n.at("type").fail(fmt::format("unknown or unsupported post-processor type '{}'", type));
}

// The SentencePiece normalizer of a normalizer node: the node itself, or the one in its Sequence.
std::optional<JsonNode> find_precompiled(const JsonNode& n) {
  n.expect_object();
  const std::string type = n.at("type").str();
  if (type == "Precompiled") return n;
  if (type != "Sequence") return std::nullopt;
  JsonNode steps = n.at("normalizers");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (auto found = find_precompiled(steps[i])) return found;
  }
  return std::nullopt;
}

std::vector<AddedToken> file_added_tokens(const JsonNode& root) {
  std::vector<AddedToken> out;
  if (auto list = root.get("added_tokens")) {
    for (std::size_t i = 0; i < list->size(); ++i) {
      JsonNode t = (*list)[i];
      AddedToken a;
      a.content = t.at("content").str();
      a.single_word = t.bool_or("single_word", false);
      a.lstrip = t.bool_or("lstrip", false);
      a.rstrip = t.bool_or("rstrip", false);
      a.special = t.bool_or("special", false);
      a.normalized = t.bool_or("normalized", !a.special);
      out.push_back(std::move(a));
    }
  }
  return out;
}

// transformers 5 builds a DebertaV2Tokenizer from its class, taking from tokenizer.json only the
// Unigram pieces, the charsmap of a Precompiled normalizer and the added tokens (those of
// tokenizer_config.json's added_tokens_decoder when it has them); the file's normalizer,
// pre-tokenizer and post-processor are not read.
std::unique_ptr<Tokenizer> deberta_from_json(const JsonNode& root, const std::string& origin,
                                             const ConfigFiles& config) {
  JsonNode model = root.at("model");
  if (JsonNode type = model.at("type"); type.str() != "Unigram") {
    type.fail(fmt::format("'{}': DebertaV2Tokenizer needs a Unigram model", type.str()));
  }
  DebertaSource source;
  source.pieces = unigram_pieces(model.at("vocab"));
  // The class's unk_id argument: tokenizer_config.json's (transformers 5 saves it), else 1.
  source.fallback_unk_field = config.config_origin + ": field 'unk_id'";
  if (config.config.is_object()) {
    if (auto u = JsonNode(config.config, config.config_origin, "").get("unk_id"))
      source.fallback_unk_id = u->integer();
  }
  source.added = config.added_tokens_decoder();
  if (source.added.empty()) source.added = file_added_tokens(root);
  if (auto n = root.get("normalizer")) {
    if (auto precompiled = find_precompiled(*n)) {
      JsonNode blob = precompiled->at("precompiled_charsmap");
      source.charsmap = decode_base64(blob.str(), origin, blob.path());
      source.charsmap_origin = origin + ": field '" + blob.path() + "'";
    }
  }
  return deberta_tf5_pipeline(std::move(source), config, origin);
}

// tokenizer.json's "padding": {"direction": "Left" | "Right", ...}, when set.
std::optional<PaddingSide> padding_direction(const JsonNode& root) {
  auto padding = root.get("padding");
  if (!padding || padding->json().is_null()) return std::nullopt;
  auto direction = padding->get("direction");
  if (!direction) return std::nullopt;
  const std::string d = direction->str();
  if (d == "Left") return PaddingSide::kLeft;
  if (d == "Right") return PaddingSide::kRight;
  direction->fail(fmt::format("'{}' is neither \"Left\" nor \"Right\"", d));
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_json(std::string_view text, const std::string& origin,
                                               const ConfigFiles& config) {
  Json json = parse_json(text, origin);
  JsonNode root(json, origin, "");
  root.expect_object();
  if (auto v = root.get("version"); v && v->str() != "1.0") {
    v->fail(fmt::format("unknown tokenizer version '{}'", v->str()));
  }
  if (config.rebuilds_deberta_pipeline()) return deberta_from_json(root, origin, config);
  PipelineParts parts;
  const bool current_case_data = config.compat == Compat::kTransformers5;
  if (auto n = root.get("normalizer")) parts.normalizer = parse_normalizer(*n, current_case_data);
  if (auto p = root.get("pre_tokenizer")) parts.pre_tokenizer = parse_pre_tokenizer(*p);
  bool byte_level = parts.pre_tokenizer != nullptr && parts.pre_tokenizer->byte_level();
  parts.model = parse_model(root.at("model"), byte_level, parts.kind);
  if (auto p = root.get("post_processor")) {
    Template t;
    if (parse_post_processor(*p, t)) parts.post = std::move(t);
  }
  parts.added_tokens = file_added_tokens(root);
  if (config.rebuilds_xlmr_pipeline() && parts.kind == "unigram") {
    std::optional<JsonNode> precompiled;
    if (auto n = root.get("normalizer")) precompiled = find_precompiled(*n);
    rebuild_xlmr_pipeline(parts, precompiled ? parse_normalizer(*precompiled, false) : nullptr,
                          config, origin);
  }
  parts.model_max_length = config.model_max_length();
  parts.padding_side = config.padding_side(padding_direction(root));
  parts.normalized_token_names = config.compat == Compat::kTransformers5;
  if (auto pad = config.special("pad_token", std::nullopt)) {
    parts.pad_token = pad->content;
  } else if (auto padding = root.get("padding"); padding && padding->get("pad_token")) {
    parts.pad_token = padding->at("pad_token").str();
  } else {
    parts.pad_token = parts.kind == "wordpiece" ? "[PAD]" : "<pad>";
  }
  return std::make_unique<Pipeline>(std::move(parts));
}

std::string decode_base64(std::string_view text, const std::string& origin,
                          const std::string& field) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = value(c);
    if (v < 0) fail("{}: field '{}': invalid base64", origin, field);
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  if (bits >= 6) fail("{}: field '{}': truncated base64", origin, field);
  return out;
}

}  // namespace mcinfer::tokenizer
