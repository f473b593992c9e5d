// Arbitrary bytes as tokenizer files: tokenizer.json, vocab.txt, vocab.json + merges.txt, a
// SentencePiece .model, and tokenizer_config.json. Loading either works or throws
// mcinfer::Error; a tokenizer that loads then encodes a few texts without crashing.
//
// Input: byte 0 picks the parser (mod 5); the rest is the file. For vocab.json + merges.txt the
// first NUL byte separates the two files; for tokenizer_config.json a fixed vocab.txt is used.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "tokenizer/loader.h"

namespace {

using namespace mcinfer::tokenizer;

void exercise(const Tokenizer& tok) {
  static const char* kTexts[] = {"Hello, world! [MASK] <mask> <s>", "",
                                 "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80  x\ty",
                                 "a  b   c \xe2\x96\x81 'll 's 123"};
  for (const char* t : kTexts) {
    auto e = tok.encode(t, std::nullopt, 0);
    tok.tokens(e);
    tok.encode(t, std::string_view("pair text"), 8);
  }
  tok.pad_id();
  tok.model_max_length();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    ConfigFiles none;
    // 0x80: as transformers 5 builds an XLM-R tokenizer (with 0x40: a DeBERTa-v2 one) from these
    // files. 0x40 with selector 3: DeBERTa's spm.model.
    const bool deberta = (data[0] & 0x40) != 0;
    if (data[0] & 0x80) {
      none.compat = Compat::kTransformers5;
      none.model_type = deberta ? "deberta-v2" : "xlm-roberta";
    }
    std::unique_ptr<Tokenizer> tok;
    switch (data[0] % 5) {
      case 0:
        tok = tokenizer_from_json(body, "tokenizer.json", none);
        break;
      case 1:
        tok = tokenizer_from_vocab_txt(body, "vocab.txt", none);
        break;
      case 2: {
        std::size_t nul = body.find('\0');
        std::string_view vocab = body.substr(0, nul);
        std::string_view merges =
            nul == std::string_view::npos ? std::string_view() : body.substr(nul + 1);
        tok = tokenizer_from_bpe_files(vocab, "vocab.json", merges, "merges.txt", none);
        break;
      }
      case 3:
        tok = deberta ? tokenizer_from_deberta_spm(body, "spm.model", none)
                      : tokenizer_from_spm(body, "sentencepiece.bpe.model", none);
        break;
      default: {
        ConfigFiles config = ConfigFiles::parse(body, "");
        tok = tokenizer_from_vocab_txt("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n##lo\nhel\n",
                                       "vocab.txt", config);
        break;
      }
    }
    exercise(*tok);
  } catch (const mcinfer::Error&) {
    // A refused file: fine.
  }
  return 0;
}
