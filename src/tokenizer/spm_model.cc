#include "tokenizer/spm_model.h"

#include <sentencepiece_processor.h>

#include <exception>

#include "core/error.h"
#include "core/utf8.h"

namespace mcinfer::tokenizer {
namespace {

// Protocol buffer wire format, just enough to walk ModelProto.
class Wire {
 public:
  explicit Wire(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }

  bool varint(std::uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return false;
      auto b = static_cast<unsigned char>(data_[pos_++]);
      v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }

  // Reads one field; for length-delimited fields `bytes` is its payload, for varints `value`.
  bool field(std::uint32_t& number, int& wire, std::uint64_t& value, std::string_view& bytes) {
    std::uint64_t key;
    if (!varint(key)) return false;
    number = static_cast<std::uint32_t>(key >> 3);
    wire = static_cast<int>(key & 7);
    switch (wire) {
      case 0:
        return varint(value);
      case 1:
        if (data_.size() - pos_ < 8) return false;
        pos_ += 8;
        return true;
      case 2: {
        std::uint64_t len;
        if (!varint(len) || len > data_.size() - pos_) return false;
        bytes = data_.substr(pos_, static_cast<std::size_t>(len));
        pos_ += static_cast<std::size_t>(len);
        return true;
      }
      case 5:
        if (data_.size() - pos_ < 4) return false;
        value = 0;
        for (int k = 0; k < 4; ++k) {
          value |= static_cast<std::uint64_t>(static_cast<unsigned char>(data_[pos_ + k]))
                   << (8 * k);
        }
        pos_ += 4;
        return true;
      default:
        return false;
    }
  }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
};

}  // namespace

SpmModel load_spm_model(std::string_view bytes, const std::string& origin) {
  // Walk the proto first: libsentencepiece's own checks are not complete (a piece with a NUL
  // byte makes its trie builder throw an exception of its own), so obviously broken models
  // never reach it.
  SpmModel model;
  Wire top(bytes);
  while (!top.done()) {
    std::uint32_t number;
    int wire;
    std::uint64_t value = 0;
    std::string_view payload;
    if (!top.field(number, wire, value, payload)) fail("{}: malformed model proto", origin);
    if (wire != 2) continue;
    if (number == 1) {  // SentencePiece pieces
      SpmPiece p;
      Wire piece(payload);
      while (!piece.done()) {
        std::uint32_t n;
        int w;
        std::uint64_t v = 0;
        std::string_view b;
        if (!piece.field(n, w, v, b)) fail("{}: malformed piece {}", origin, model.pieces.size());
        if (n == 1 && w == 2) p.piece.assign(b);
        if (n == 3 && w == 0) p.type = static_cast<int>(v);
      }
      if (p.piece.empty() || p.piece.find('\0') != std::string::npos || !utf8::is_valid(p.piece)) {
        fail("{}: piece {} is empty, holds a NUL byte or is not valid UTF-8", origin,
             model.pieces.size());
      }
      if (p.type < 1 || p.type > 6)
        fail("{}: piece {} has unknown type {}", origin, model.pieces.size(), p.type);
      model.pieces.push_back(std::move(p));
    } else if (number == 2 || number == 3) {  // TrainerSpec, NormalizerSpec
      Wire spec(payload);
      while (!spec.done()) {
        std::uint32_t n;
        int w;
        std::uint64_t v = 0;
        std::string_view b;
        if (!spec.field(n, w, v, b)) {
          fail("{}: malformed {}", origin, number == 2 ? "trainer_spec" : "normalizer_spec");
        }
        if (number == 2 && n == 3 && w == 0) model.model_type = static_cast<int>(v);
        // int32 on the wire: a negative value is sign-extended to 64 bits.
        if (number == 2 && n == 40 && w == 0) model.unk_id = static_cast<std::int32_t>(v);
        if (number == 3 && n == 2 && w == 2) model.precompiled_charsmap.assign(b);
      }
    }
  }
  if (model.pieces.empty()) fail("{}: no pieces", origin);

  sentencepiece::SentencePieceProcessor sp;
  try {
    auto status = sp.LoadFromSerializedProto(bytes);
    if (!status.ok()) fail("{}: not a usable SentencePiece model: {}", origin, status.ToString());
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail("{}: not a usable SentencePiece model: {}", origin, e.what());
  }
  const int size = sp.GetPieceSize();
  if (size < 0 || static_cast<std::size_t>(size) != model.pieces.size()) {
    fail("{}: {} pieces in the proto but {} loaded", origin, model.pieces.size(), size);
  }
  for (int i = 0; i < size; ++i) {
    SpmPiece& p = model.pieces[static_cast<std::size_t>(i)];
    if (sp.IdToPiece(i) != p.piece) fail("{}: piece {} reads back differently", origin, i);
    p.score = sp.GetScore(i);
  }
  return model;
}

}  // namespace mcinfer::tokenizer
