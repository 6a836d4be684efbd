// Private to src/convert/: write_legacy_model for payloads that are not in memory when the write
// starts -- a remote archive's, which arrive in ranges while the data files are written. The data
// files are planned as write_legacy_model plans them, made at their full size (unnamed), and
// handed to a filler that writes each payload at its place; the model file and the commit of the
// set follow as in write_legacy_model, so the output is the same, byte for byte.
#ifndef ONNXZIP_SRC_CONVERT_LEGACY_FILL_H_
#define ONNXZIP_SRC_CONVERT_LEGACY_FILL_H_

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <vector>

#include "onnxzip/legacy.h"
#include "onnxzip/onnx_model.h"
#include "output_file.h"

namespace onnxzip::detail {

// One payload of a legacy write placed in a data file.
struct LegacyPlacement {
  const TensorProto* tensor = nullptr;
  std::size_t file = 0;      // Index into the data files.
  std::uint64_t offset = 0;  // Of the payload in its file.
  std::uint64_t size = 0;
};

// The placements write_legacy_model(model, out, options) makes in kExternal mode (whatever
// options.mode says), in for_each_tensor order. Only raw_data's size is looked at. Errors as
// write_legacy_model's for a request it refuses.
std::vector<LegacyPlacement> plan_legacy_data_files(const ModelProto& model,
                                                    const std::filesystem::path& out,
                                                    const LegacyWriteOptions& options);

// Writes every placement's payload into files[placement.file] with write_at (the files are
// reserved to their full size; bytes between payloads stay zeros). An exception cancels the write.
using LegacyPayloadFiller = std::function<void(std::span<const LegacyPlacement> placements,
                                               std::span<AtomicOutputFile* const> files)>;

// write_legacy_model(model, out, options) in kExternal mode, except that the placed tensors'
// raw_data only say their size and are never read: `fill` writes their bytes (tensors that stay
// inline must hold theirs by the time `fill` returns: the model file is written after it).
// options.progress is not called; the filler reports what it does.
LegacyWriteResult write_legacy_model_filled(const ModelProto& model,
                                            const std::filesystem::path& out,
                                            const LegacyWriteOptions& options,
                                            const LegacyPayloadFiller& fill);

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_CONVERT_LEGACY_FILL_H_
