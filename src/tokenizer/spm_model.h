#pragma once
// A SentencePiece .model, loaded and validated by libsentencepiece; the few ModelProto fields
// its public API does not expose (model type, user-defined pieces, precompiled_charsmap) are
// read from the serialized proto with a small bounds-checked wire-format reader.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mcinfer::tokenizer {

struct SpmPiece {
  std::string piece;
  float score = 0.0f;
  int type = 1;  // NORMAL 1, UNKNOWN 2, CONTROL 3, USER_DEFINED 4, UNUSED 5, BYTE 6
};

struct SpmModel {
  int model_type = 1;  // UNIGRAM 1, BPE 2, WORD 3, CHAR 4
  // trainer_spec.unk_id as stored (proto default 0): transformers' converters take the unknown
  // token's id from it, not from the piece types. Not range-checked here.
  std::int64_t unk_id = 0;
  std::vector<SpmPiece> pieces;
  std::string precompiled_charsmap;
};

// Throws Error naming `origin` when the bytes are not a usable model.
SpmModel load_spm_model(std::string_view bytes, const std::string& origin);

}  // namespace mcinfer::tokenizer
