// Tokenizer::load: which files of a model directory define its tokenizer, in the order
// transformers prefers them (tokenizer.json first, as AutoTokenizer does).

#include "tokenizer/loader.h"

#include <fstream>

#include "core/error.h"

namespace mcinfer::tokenizer {
namespace {

constexpr std::size_t kMaxFile = 512u << 20;

std::string read_file(const std::filesystem::path& path) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec) fail("{}: cannot read: {}", path.string(), ec.message());
  if (size > kMaxFile)
    fail("{}: {} bytes is larger than the {} allowed", path.string(), size, kMaxFile);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open", path.string());
  std::string data(size, '\0');
  in.read(data.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::size_t>(in.gcount()) != size) fail("{}: short read", path.string());
  return data;
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::load(const std::filesystem::path& dir, Compat compat) {
  if (!std::filesystem::is_directory(dir)) fail("{}: not a directory", dir.string());
  ConfigFiles config = ConfigFiles::read(dir);
  config.compat = compat;
  auto has = [&](const char* name) { return std::filesystem::is_regular_file(dir / name); };
  if (has("tokenizer.json")) {
    auto path = dir / "tokenizer.json";
    return tokenizer_from_json(read_file(path), path.string(), config);
  }
  if (has("vocab.txt")) {
    auto path = dir / "vocab.txt";
    return tokenizer_from_vocab_txt(read_file(path), path.string(), config);
  }
  if (has("vocab.json") || has("merges.txt")) {
    auto vocab = dir / "vocab.json";
    auto merges = dir / "merges.txt";
    if (!has("vocab.json")) fail("{}: missing (merges.txt needs vocab.json)", vocab.string());
    if (!has("merges.txt")) fail("{}: missing (vocab.json needs merges.txt)", merges.string());
    return tokenizer_from_bpe_files(read_file(vocab), vocab.string(), read_file(merges),
                                    merges.string(), config);
  }
  if (has("sentencepiece.bpe.model")) {
    auto path = dir / "sentencepiece.bpe.model";
    return tokenizer_from_spm(read_file(path), path.string(), config);
  }
  // DebertaV2Tokenizer's file name: no other class transformers maps a model type to uses it.
  if (has("spm.model")) {
    auto path = dir / "spm.model";
    return tokenizer_from_deberta_spm(read_file(path), path.string(), config);
  }
  fail(
      "{}: no tokenizer files (tokenizer.json, vocab.txt, vocab.json + merges.txt, "
      "sentencepiece.bpe.model or spm.model)",
      dir.string());
}

}  // namespace mcinfer::tokenizer
