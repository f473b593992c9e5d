#pragma once
// The PJRT backend: the encoder as StableHLO (encoder_program.h), compiled by a PJRT plugin for
// TPUs, GPUs or CPUs, one replica per addressable device, weights uploaded once per device.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "backends/pjrt/pjrt_options.h"

namespace mcinfer::pjrt {

// The plugin file `name_or_path` stands for. Names: cpu ($MCINFER_PJRT_CPU_PLUGIN, else the
// PyPI package xla-cpu-pjrt in $VIRTUAL_ENV), cuda ($MCINFER_PJRT_CUDA_PLUGIN, else the PyPI
// package jax-cuda13-pjrt or jax-cuda12-pjrt in $VIRTUAL_ENV), tpu ($TPU_LIBRARY_PATH, else the
// PyPI package libtpu in $VIRTUAL_ENV). Anything else is a path. Throws UsageError saying what to
// install or set when a name resolves to nothing.
std::filesystem::path resolve_plugin(const std::string& name_or_path);

// Throws Error for a plugin that cannot be loaded or used (pjrt_api.h).
std::unique_ptr<backend::Backend> make_pjrt_backend(const PjrtOptions& options);

// Length buckets: the padded lengths programs are compiled for, by the longest sequence of a
// batch: multiples of 8 up to 64, of 16 up to 128, of 32 up to 256, of 64 up to 1,024, then the
// step doubles with each doubling of the length (128 up to 2,048, 256 up to 4,096, 512 beyond:
// at most 1/8 padding above 512 tokens, and 8 buckets per doubling, so that ModernBERT's rows up
// to 8,192 tokens compile a bounded number of programs); never beyond the model's position table.
std::int64_t length_bucket(std::int64_t longest, std::int64_t max_positions);
// The sequences a batch of `count` runs as: `count` rounded up to a multiple of 8 (the dynamic
// schedule cuts batches to such multiples, so only a window's last batch is padded).
std::int64_t padded_rows(std::int64_t count);

}  // namespace mcinfer::pjrt
