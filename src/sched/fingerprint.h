#pragma once
// What a run's results depend on, recorded in the shards directory (run.json) so that --resume
// can refuse to mix shards of a different model, input or result-changing flag.

#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"

namespace mcinfer::sched {

// Cheap content fingerprints: whole small files; for large files the size and the CRC-32 of
// their first and last MiB (and, for safetensors, of the whole header).
// `module_dirs`: sentence-transformers module folders inside it, whose files count too.
Json model_fingerprint(const std::filesystem::path& model_dir,
                       const std::vector<std::filesystem::path>& module_dirs = {});
Json input_fingerprint(const std::filesystem::path& input);

// Differences between a recorded fingerprint and the current one, as "field: was X, now Y".
std::vector<std::string> fingerprint_differences(const Json& recorded, const Json& current,
                                                 const std::string& prefix = "");

}  // namespace mcinfer::sched
