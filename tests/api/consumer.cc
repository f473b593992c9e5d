// A program outside the library: it includes only the public header and links only
// mcinfer::mcinfer. That this file compiles is the proof that the public API is self-contained
// and that internal headers are not on a consumer's include path (the #error below).
//
// mcinfer_api_consumer MODEL_DIR [--task T] [--normalize] [--max-len N] [--prompt-name P]
//   [--prompt TEXT] [--ids]
// reads rows from stdin, each "<text bytes> <pair bytes or -1>\n<text><pair>" (or, with --ids,
// "<count>\n" followed by that many ids), and prints one line of output values per row.
#include <mcinfer/mcinfer.h>

#if __has_include("core/error.h") || __has_include("backend/backend.h")
#error "internal headers of mcinfer are reachable from a consumer of the public API"
#endif

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  mcinfer::ModelOptions options;
  bool ids_mode = false;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--task" && i + 1 < argc) options.task = argv[++i];
    if (arg == "--normalize") options.normalize = true;
    if (arg == "--max-len" && i + 1 < argc) options.max_len = std::stoul(argv[++i]);
    if (arg == "--prompt-name" && i + 1 < argc) options.prompt_name = argv[++i];
    if (arg == "--prompt" && i + 1 < argc) options.prompt = argv[++i];
    if (arg == "--ids") ids_mode = true;
  }
  try {
    const mcinfer::Model model = mcinfer::Model::load(argv[1], options);
    mcinfer::Matrix m;
    if (ids_mode) {
      std::vector<std::vector<std::int32_t>> rows;
      std::size_t count = 0;
      while (std::cin >> count) {
        rows.emplace_back(count);
        for (auto& id : rows.back()) std::cin >> id;
      }
      m = model.predict_ids(rows);
    } else {
      std::vector<std::string> texts, pairs;
      long text_bytes = 0, pair_bytes = 0;
      while (std::cin >> text_bytes >> pair_bytes) {
        std::cin.get();  // the newline
        std::string text(static_cast<std::size_t>(text_bytes), '\0');
        std::cin.read(text.data(), text_bytes);
        texts.push_back(text);
        if (pair_bytes >= 0) {
          std::string pair(static_cast<std::size_t>(pair_bytes), '\0');
          std::cin.read(pair.data(), pair_bytes);
          pairs.push_back(pair);
        }
      }
      m = model.predict(texts, pairs);
    }
    std::printf("# %s %s %s %d\n", model.backend().c_str(), model.precision().c_str(),
                model.task().c_str(), model.replicas());
    for (std::size_t r = 0; r < m.rows; ++r) {
      for (std::size_t c = 0; c < m.cols; ++c) std::printf(c ? " %.9g" : "%.9g", m.at(r, c));
      std::printf("\n");
    }
  } catch (const mcinfer::UsageError& e) {
    std::fprintf(stderr, "usage: %s\n", e.what());
    return 2;
  } catch (const mcinfer::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
