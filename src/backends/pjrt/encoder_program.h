#pragma once
// The encoder's forward pass for one padded batch shape, written as StableHLO from the model's
// description (model/encoder_desc.h): embeddings (and their projection), every layer as the
// description lists its GEMMs and norms (post-norm, or pre-norm with a final norm), the relative
// position bias or rotary positions where the family has them, sliding-window layers as a band
// (attention_program.h), and on request the classification head (first token or mean) or a
// SparseEncoder's MLM head through SpladePooling (token weights per vocabulary entry). Weights are
// parameters (uploaded once per device and passed to every run), so one program serves any
// checkpoint of the same description.
//
// Inputs of a run, after the weights: ids, token types (when the model has a type table) and
// position ids as [batch, length] s32, computed on the host exactly as the CPU backend packs
// them (model::pack_batch), each sequence's length [batch] s32, and for a relative position bias
// the bucket of every (query, key) pair [length, length] s32 (model::relative_bucket, computed on
// the host so that the program's log cannot put a boundary distance in another bucket); keys at
// or beyond a sequence's length are masked out of attention, so padding never changes a real
// token.
//
// Precision: fp32 throughout, or bf16 GEMM inputs (weights stored in bf16 on the device) with
// f32 accumulation, attention products in bf16 with scores and softmax in f32; LayerNorm,
// residuals, GELU (and a gated FFN's product), rotary positions, the embedding projection, the
// head's activation and the MLM head (as on the CPU backend) stay f32.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/pjrt/stablehlo.h"
#include "model/encoder_desc.h"
#include "model/precision.h"
#include "model/task.h"
#include "model/tensors.h"

namespace mcinfer::pjrt {

struct WeightSlot {
  std::string name;  // for messages
  Dims dims;
  bool gemm = false;  // a dense GEMM weight: bf16 on the device when the model runs in bf16
};

// Whether a program of `desc` takes its layers stacked and runs them as a loop (ProgramSpec::
// loop_layers): only where asked and every layer is the same computation. ModernBERT's are not
// (windowed and global layers, two rotary bases, a first layer without its norm): unrolled.
bool stacks_layers(const model::EncoderDesc& desc, bool loop_layers);

// The weights the program takes, in its parameter order: the embeddings (and their projection),
// the relative bias table, then each layer's GEMM weights and biases in the description's order
// and its norms (`stacked`: each stacked over the layers, [layers, ...], as a looped program
// takes them; only where stacks_layers), the final norm, then with `head` the classification
// head's (dense, its norm, out), and for a SparseEncoder its MLM head's (transform, its norm, the
// decoder's bias; the decoder's weight is the word embeddings' slot). A norm without a shift has no
// bias slot; an absent one none.
std::vector<WeightSlot> weight_slots(const model::EncoderDesc& desc, bool head, bool stacked);
// The checkpoint tensors of each slot, in the same order (a fused GEMM's parts in order; a stacked
// slot: every layer's, in layer order); a single null for DistilBERT's sinusoidal position table
// when the checkpoint stores none (model::fill_sinusoidal computes it).
std::vector<std::vector<const model::Tensor*>> slot_tensors(const model::ModelTensors& tensors,
                                                            bool head, bool stacked);

// ProgramSpec::sparse makes the vocabulary logits this many positions at a time (fewer where the
// length is not a multiple of it: its largest divisor that divides the length).
inline constexpr std::int64_t kSparsePositionsPerTrip = 8;

struct ProgramSpec {
  std::int64_t batch = 1, length = 1;
  model::Precision precision = model::Precision::kFp32;  // kFp32 or kBf16
  bool hidden = true;   // an output: the last hidden states [batch, length, hidden] f32
  bool logits = false;  // an output: the head's logits [batch, labels] f32
  // The layers as one stablehlo.while whose body is one layer (the weights stacked: weight_slots),
  // instead of unrolled. XLA's CPU plugin compiles both in the same time (a MiniLM program:
  // 1.03 s looped, 1.06 s unrolled, on a 2-core AMD EPYC) and runs the loop ~10% slower (each
  // trip slices its layer's weights; static slices of stacked weights cost ~8% too, so unrolled
  // programs take per-layer weights): unrolled there. Accelerators compile a kernel per fusion,
  // so a program's compile time grows with its layers: looped there (not yet measured on one:
  // no GPU was available).
  bool loop_layers = false;
  // An output: SpladePooling of the MLM head's logits, [batch, vocab] f32 (top_k is the host's).
  // The logits are computed a few positions at a time in a loop, so that the device never holds a
  // [batch, length, vocab] tensor.
  std::optional<model::SparseSpec> sparse;
};

std::string encoder_program(const model::EncoderDesc& desc, const std::vector<WeightSlot>& slots,
                            const ProgramSpec& spec);

}  // namespace mcinfer::pjrt
