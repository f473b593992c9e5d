#pragma once
// A sentence-transformers CrossEncoder directory: what says it is one, and the activation
// CrossEncoder.predict applies to its logits, in each layout sentence-transformers has saved it:
// - 5.4 and later: modules.json with one Transformer whose sentence_bert_config.json says
//   transformer_task "sequence-classification"; the activation in
//   config_sentence_transformers.json's activation_fn;
// - 4.0 to 5.3: a plain transformers directory whose config.json has
//   sentence_transformers.activation_fn;
// - before 4.0: config.json's sbert_ce_default_activation_function (written only when the model
//   was given a default activation).
// The first of these fields with a value wins, as sentence-transformers reads them; none:
// sentence-transformers' default, Sigmoid for one label and Identity for more. A transformers
// classifier without any of these markers is not a cross-encoder (ModelDir keeps its problem_type).
// Parsing only; ModelDir (model_dir.h) decides with the flags. Immutable; safe to share.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "model/st_modules.h"
#include "model/task.h"

namespace mcinfer::model {

struct CrossEncoderFiles {
  // What says the directory is a cross-encoder, e.g. "config.json:
  // sbert_ce_default_activation_function".
  std::string marker;
  // The activation predict() applies (kNone for Identity). Meaningless when `unsupported` is set.
  OutputActivation activation = OutputActivation::kNone;
  // Where it comes from: "config_sentence_transformers.json: activation_fn
  // torch.nn.modules.activation.Sigmoid", or "sentence-transformers' default for 1 label
  // (Sigmoid)".
  std::string source;
  // Non-empty: the file names an activation class mcinfer does not implement; the message (file,
  // field and class) to refuse a run with when no --activation replaces it.
  std::string unsupported;
  // Before 4.0, CrossEncoder.predict stripped both texts of a pair (Python's str.strip).
  bool strips_text = false;

  // nullopt when the directory is no cross-encoder. `has_modules`: modules.json exists (then only
  // a sequence-classification Transformer makes one). Throws Error naming the file and field on a
  // field of the wrong type.
  static std::optional<CrossEncoderFiles> read(const std::filesystem::path& dir, const StFiles& st,
                                               bool has_modules, std::int64_t num_labels);
};

// The OutputActivation of a torch.nn class as sentence-transformers names it
// ("torch.nn.modules.activation.Sigmoid" or "torch.nn.Sigmoid"); nullopt for one mcinfer does
// not implement.
std::optional<OutputActivation> cross_encoder_activation(std::string_view torch_class);

}  // namespace mcinfer::model
