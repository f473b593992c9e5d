#pragma once
// The seam between the run pipeline and a family of devices. A Backend prepares a model once
// (its weights in the device's form, shared read-only by every replica) and makes replicas; a
// Replica runs the forward pass of one batch of token sequences and returns one row of values
// per sequence. The scheduler asks the backend how it wants batches cut (packed variable-length
// sequences, or a few fixed padded shapes for compiled accelerators), how many replicas fit and
// what each needs in memory; it never sees a device pointer, a kernel or a packed weight.
//
// Why the seam is the whole forward pass of a batch, not each op: an accelerator that compiles
// the model (PJRT/XLA) runs one executable per batch shape and cannot be driven op by op on host
// pointers; the CPU engine keeps its per-op dispatch behind it (backends/cpu).
//
// Threading: a Backend and a PreparedModel are immutable after construction and may be used
// from any thread; a Replica belongs to one thread at a time.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/profile.h"
#include "model/config.h"
#include "model/encoder_desc.h"
#include "model/gemm_plan.h"
#include "model/precision.h"
#include "model/task.h"

namespace mcinfer::model {
class ModelDir;
}

namespace mcinfer::backend {

// How the scheduler should cut batches for this backend.
struct BatchShape {
  enum class Kind {
    // Any number of sequences of any length up to a token budget; only real tokens are computed.
    kPacked,
    // A few fixed [sequences, length] shapes (compiled accelerators); the scheduler pads a batch
    // to the smallest bucket that holds it.
    kBuckets,
  };
  Kind kind = Kind::kPacked;
  // kBuckets: the length a batch whose longest sequence has n tokens is padded to, and the
  // multiple its sequence count is padded to; each distinct [rows, length] is one compiled program.
  std::function<std::int64_t(std::int64_t)> padded_length;
  std::int64_t row_multiple = 1;
};

// What preparing a model's weights for a device occupies, and what the checkpoint held.
struct WeightStats {
  std::int64_t parameters = 0;        // elements of every tensor the model uses
  std::uint64_t file_bytes = 0;       // bytes of all tensors in the checkpoint files
  std::uint64_t packed_bytes = 0;     // GEMM weights in the device's layout
  std::uint64_t converted_bytes = 0;  // float32 copies of fp16/bf16 tensors kept for direct use
  std::uint64_t mapped_bytes = 0;     // float32 tensors used in place from the file mapping
  // What the weights occupy in host memory once loaded: packed + converted + mapped.
  std::uint64_t resident_bytes() const { return packed_bytes + converted_bytes + mapped_bytes; }
  std::string dtype;  // dtype of the weight tensors ("F32", "F16", "BF16", mixed)
};

struct PrepareOptions {
  model::Precision precision = model::Precision::kFp32;  // resolved: never kAuto
  // int8: GEMMs kept in the backend's int8 fallback precision, and each int8 GEMM's input ranges
  // on calibration rows (input smoothing), when measured.
  std::vector<model::GemmId> int8_keep;
  const model::InputRanges* int8_ranges = nullptr;
  // The network to run instead of model::describe_encoder(config): a family's description
  // changed in one place reaches every backend (tests; a family being written).
  std::optional<model::EncoderDesc> description;
};

// One dense GEMM of an fp32 forward pass as calibration sees it: input x [rows, in] and output
// y [rows, out] (activation applied), host memory, valid during the call only.
struct GemmCall {
  model::GemmId id;
  const float* x = nullptr;
  std::int64_t rows = 0, in = 0;
  const float* y = nullptr;
  std::int64_t out = 0;
};
using GemmObserver = std::function<void(const GemmCall&)>;

// What a replica offers for calibrating int8 plans (sched/int8_plan.h), on backends that run
// int8 (Replica::int8_calibration). Owned by its replica; one thread at a time.
class Int8Calibration {
 public:
  virtual ~Int8Calibration() = default;
  // Sees every dense GEMM of this replica's (fp32) forward passes (null: stop).
  virtual void observe_gemms(GemmObserver observer) = 0;
  // One GEMM of this replica's model alone on host rows: y [rows, out] = act(x · Wᵀ + b).
  virtual void run_gemm(model::GemmId id, const float* x, std::int64_t rows, float* y) = 0;
};

// What an int8 model says of its plan, on backends that run int8.
struct Int8Facts {
  std::vector<model::GemmId> kept;  // GEMMs kept out of int8, sorted
  bool smoothed = false;            // the int8 GEMMs' inputs are smoothed (calibrated)
};

// One replica's forward pass. Owned by one thread at a time.
class Replica {
 public:
  virtual ~Replica() = default;
  // Writes [batch.size(), output_dim] values, row i for sequence i. Throws Error naming the
  // sequence for ids outside the vocabulary or a sequence longer than the model allows.
  virtual void predict(std::span<const model::SequenceInput> batch, const model::TaskSpec& task,
                       std::vector<float>& out) = 0;
  // FLOPs of the forward pass of the last batch (GEMMs + attention).
  virtual double last_flops() const = 0;
  // Token positions the device computed for the last batch, padding included; -1 where only the
  // real tokens are computed (packed batches).
  virtual std::int64_t last_computed_tokens() const { return -1; }
  // Time every op into `profile` from now on (null: stop).
  virtual void attach_profile(OpProfile* profile) = 0;

  // The capability int8 calibration needs; null on backends that run no int8.
  virtual Int8Calibration* int8_calibration() { return nullptr; }
};

// The replica's int8 calibration; throws Error naming the backend's limit where it has none.
Int8Calibration& int8_calibration_of(Replica& replica);

// A model prepared for a device: immutable, shared by every replica.
class PreparedModel {
 public:
  virtual ~PreparedModel() = default;
  virtual const model::ModelConfig& config() const = 0;
  virtual model::Precision precision() const = 0;
  virtual const WeightStats& stats() const = 0;
  // An int8 model's plan; nullopt for other precisions and backends.
  virtual std::optional<Int8Facts> int8_facts() const { return std::nullopt; }
  // A replica that runs on `threads` threads of its own.
  virtual std::unique_ptr<Replica> make_replica(int threads) const = 0;
  // What the backend counted so far, by name, for the report (compiled backends: programs
  // compiled and the seconds it took); empty where there is nothing to say.
  virtual std::vector<std::pair<std::string, double>> counters() const { return {}; }
};

// One replica's share of a `bench` measurement of the device library alone: the four dense GEMMs
// of a layer on [rows, in] inputs, with the element types the model uses, without our epilogues.
class GemmProbe {
 public:
  virtual ~GemmProbe() = default;
  virtual void run() = 0;            // one pass over the four GEMMs
  virtual double flops() const = 0;  // of one pass
};

// A family of devices. Immutable after construction.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;  // as --backend spells it
  virtual std::string description() const = 0;
  // One line per device replicas run on, as the device names itself (`inspect`); empty where the
  // backend's devices are this machine's cores.
  virtual std::vector<std::string> device_lines() const { return {}; }

  // What `requested` runs as here, and why; an explicit precision the device cannot run is
  // refused (UsageError naming what is missing).
  virtual model::PrecisionChoice resolve_precision(model::Precision requested) const = 0;
  // The precision an int8 model keeps its sensitive GEMMs in.
  virtual model::Precision int8_fallback_precision() const = 0;

  // The model of `dir` ready to run; throws Error naming the file and tensor on any
  // inconsistency; `warnings` receives notes about ignored tensors.
  virtual std::shared_ptr<const PreparedModel> prepare(
      const model::ModelDir& dir, const PrepareOptions& options,
      std::vector<std::string>* warnings) const = 0;
  // A model of a known shape with seeded random weights and no files (bench --shape).
  virtual std::shared_ptr<const PreparedModel> synthetic(const model::ModelConfig& config,
                                                         model::Precision precision) const = 0;

  virtual BatchShape batch_shape() const = 0;
  // Replicas that run without competing for the device (physical cores, accelerator chips).
  virtual int replica_slots() const = 0;
  // Activation memory one replica needs for a batch of `tokens` real tokens whose longest
  // sequence has `max_len` tokens.
  virtual std::uint64_t replica_bytes(const model::ModelConfig& config, std::int64_t tokens,
                                      std::int64_t max_len, int threads,
                                      model::Precision precision) const = 0;

  // For `bench`: the device's own math library alone on the model's dense GEMM shapes, one
  // probe per replica; null where the backend has no such library to measure.
  virtual std::unique_ptr<GemmProbe> library_gemm_probe(const PreparedModel& model,
                                                        std::int64_t rows, int threads) const {
    return nullptr;
  }
};

}  // namespace mcinfer::backend
