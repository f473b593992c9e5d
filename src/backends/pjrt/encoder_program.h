#pragma once
// The encoder's forward pass for one padded batch shape, written as StableHLO from the model's
// config: embeddings, every layer (post-LayerNorm, as BERT, RoBERTa, XLM-R and DistilBERT are),
// and on request the classification head. Weights are parameters (uploaded once per device and
// passed to every run), so one program serves any checkpoint of the same config.
//
// Inputs of a run, after the weights: ids, token types (when the model has a type table) and
// position ids as [batch, length] s32, computed on the host exactly as the CPU backend packs
// them (model::pack_batch), and each sequence's length [batch] s32; keys at or beyond a
// sequence's length are masked out of attention, so padding never changes a real token.
//
// Precision: fp32 throughout, or bf16 GEMM inputs (weights stored in bf16 on the device) with
// f32 accumulation, attention products in bf16 with scores and softmax in f32; LayerNorm,
// residuals, GELU and the head's activation stay f32.

#include <cstdint>
#include <string>
#include <vector>

#include "backends/pjrt/stablehlo.h"
#include "model/config.h"
#include "model/precision.h"
#include "model/tensors.h"

namespace mcinfer::pjrt {

struct WeightSlot {
  std::string name;  // for messages
  Dims dims;
  bool gemm = false;  // a dense GEMM weight: bf16 on the device when the model runs in bf16
};

// The weights the program takes, in its parameter order: the embeddings, then each layer's 16
// tensors (`stacked`: each of the 16 stacked over the layers, [layers, ...], as a looped program
// takes them), then with `head` the classification head's four tensors.
std::vector<WeightSlot> weight_slots(const model::ModelConfig& config, bool head, bool stacked);
// The checkpoint tensors of each slot, in the same order (a stacked slot: one per layer, in layer
// order); a single null for DistilBERT's sinusoidal position table when the checkpoint stores
// none (model::fill_sinusoidal computes it).
std::vector<std::vector<const model::Tensor*>> slot_tensors(const model::ModelTensors& tensors,
                                                            bool head, bool stacked);

struct ProgramSpec {
  std::int64_t batch = 1, length = 1;
  model::Precision precision = model::Precision::kFp32;  // kFp32 or kBf16
  bool hidden = true;   // an output: the last hidden states [batch, length, hidden] f32
  bool logits = false;  // an output: the head's logits [batch, labels] f32
  model::Activation head_activation = model::Activation::kTanh;
  // The layers as one stablehlo.while whose body is one layer (the weights stacked: weight_slots),
  // instead of unrolled. XLA's CPU plugin compiles both in the same time (a MiniLM program:
  // 1.03 s looped, 1.06 s unrolled, on a 2-core AMD EPYC) and runs the loop ~10% slower (each
  // trip slices its layer's weights; static slices of stacked weights cost ~8% too, so unrolled
  // programs take per-layer weights): unrolled there. Accelerators compile a kernel per fusion,
  // so a program's compile time grows with its layers: looped there (not yet measured on one:
  // no GPU was available).
  bool loop_layers = false;
};

std::string encoder_program(const model::ModelConfig& config, const std::vector<WeightSlot>& slots,
                            const ProgramSpec& spec);

}  // namespace mcinfer::pjrt
