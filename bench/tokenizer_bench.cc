// Tokens per second of one tokenizer on one core over a '\n'-delimited text file.
//   tokenizer_bench MODEL_DIR FILE [--repeat N] [--max-len N]   -> one JSON line of timings
//   tokenizer_bench MODEL_DIR FILE --dump [--max-len N]          -> the ids of each line
// Tokens counted are the ids encode() returns, special tokens included (what HF's
// encode_batch returns too). bench/tokenizer_compare.py runs this next to HF tokenizers.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL_DIR FILE [--repeat N] [--max-len N] [--dump]\n", argv[0]);
    return 2;
  }
  int repeat = 5;
  std::size_t max_len = 0;
  bool dump = false;
  for (int i = 3; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--max-len") && i + 1 < argc) {
      max_len = static_cast<std::size_t>(std::atol(argv[++i]));
    } else if (!std::strcmp(argv[i], "--dump")) {
      dump = true;
    } else {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  try {
    auto tok = mcinfer::tokenizer::Tokenizer::load(argv[1]);
    std::ifstream in(argv[2], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot open\n", argv[2]);
      return 1;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    std::string data = ss.str();
    if (!data.empty() && data.back() == '\n') data.pop_back();
    std::vector<std::string_view> lines;
    std::size_t start = 0;
    for (;;) {
      std::size_t end = data.find('\n', start);
      if (end == std::string::npos) {
        lines.emplace_back(std::string_view(data).substr(start));
        break;
      }
      lines.emplace_back(std::string_view(data).substr(start, end - start));
      start = end + 1;
    }
    if (dump) {
      std::string out;
      for (std::string_view line : lines) {
        auto enc = tok->encode(line, std::nullopt, max_len);
        for (std::size_t k = 0; k < enc.ids.size(); ++k) {
          if (k) out.push_back(' ');
          out += std::to_string(enc.ids[k]);
        }
        out.push_back('\n');
      }
      std::fwrite(out.data(), 1, out.size(), stdout);
      return 0;
    }
    std::vector<double> seconds;
    std::size_t tokens = 0;
    for (int r = 0; r < repeat; ++r) {
      tokens = 0;
      auto t0 = std::chrono::steady_clock::now();
      for (std::string_view line : lines)
        tokens += tok->encode(line, std::nullopt, max_len).ids.size();
      auto t1 = std::chrono::steady_clock::now();
      seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
    std::vector<double> sorted = seconds;
    std::sort(sorted.begin(), sorted.end());
    double median = sorted[sorted.size() / 2];
    std::printf(
        "{\"kind\": \"%s\", \"lines\": %zu, \"tokens\": %zu, \"median_s\": %.6f, "
        "\"min_s\": %.6f, \"tokens_per_s\": %.1f, \"runs\": [",
        std::string(tok->kind()).c_str(), lines.size(), tokens, median, sorted.front(),
        static_cast<double>(tokens) / median);
    for (std::size_t k = 0; k < seconds.size(); ++k)
      std::printf("%s%.6f", k ? ", " : "", seconds[k]);
    std::printf("]}\n");
  } catch (const mcinfer::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
