// Legacy ONNX model files: a serialized ModelProto (`model.onnx`), its tensor payloads inline or
// in external data files next to it, as the reference `onnx` package reads and writes them.
//
// The rest of its contract and the reasons: HACKING.md, "Header notes", legacy.h.
#ifndef ONNXZIP_LEGACY_H_
#define ONNXZIP_LEGACY_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "onnxzip/file_access.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/onnx_model.h"
#include "onnxzip/output_options.h"
#include "onnxzip/progress.h"
#include "onnxzip/tensor.h"

namespace onnxzip {

// --- Telling the formats apart ---

enum class ModelFormat : std::uint8_t {
  kOnnxz,   // A ZIP archive: the file starts with a local file header (or, empty archive, the
            // end record), which no serialized ModelProto does (field 10 does not exist).
  kLegacy,  // Anything else, an empty file included: a serialized ModelProto.
};

// Looks at the first four bytes of `path`. Error(kNotFound) when it does not exist, kIo when it
// cannot be read or is not a regular file (a FIFO, a socket, a device: refused at once, never
// waited on), kInvalidArgument for a folder.
ModelFormat detect_format(const std::filesystem::path& path);

// The format a file's name promises: kOnnxz for a name ending in ".onnxz", kLegacy for ".onnx"
// (ASCII case ignored), nullopt for any other name (either format may be written there).
std::optional<ModelFormat> format_named_by(const std::filesystem::path& path);

// The rule every face applies before it writes a model file (convert, extract, view, repack,
// save): Error(kInvalidArgument) naming `path` when format_named_by(path) is not `format`, the
// message saying the rule and a name that keeps it.
void check_output_name(const std::filesystem::path& path, ModelFormat format);

// --- Reading ---

struct LegacyReadOptions {
  // Limits and ownership of the model file's own parse. no_copy (the default here) borrows the
  // inline payloads of at least parse.raw_data_threshold bytes from the mapping of the model
  // file; without it they are copied. External payloads are always borrowed from their mapping.
  ParseOptions parse{.no_copy = true};
  // Resolve external data references (false: leave them as they are, e.g. to inspect a model
  // whose data files are absent).
  bool load_external_data = true;
  // Follow symbolic links in locations; the file must still lie inside the model's folder.
  bool allow_symlinks = false;
  // Accept data files with more than one hard link.
  bool allow_hard_links = false;
  // How the model file and its data files are got at: mapped (external payloads borrow from the
  // mappings, which must not shrink while they live: see file_access.h), or read whole into
  // owned memory (kRead: for files others may change).
  FileAccess access = FileAccess::kMap;
  // What messages call the model file (a URL it was downloaded from); "" for its path.
  std::string source_name{};
};

// Parses the model at `onnx_path` (mapped) and resolves every external reference wherever its
// tensor sits (initializers, sparse initializers, attributes, subgraphs at any depth, functions,
// training graphs): raw_data = the bytes, borrowed from the data file's mapping (each file is
// mapped once, whatever the number of tensors and spellings of its location), external_data
// cleared and data_location made absent. The model keeps the mappings alive.
ModelProto read_legacy_model(const std::filesystem::path& onnx_path,
                             const LegacyReadOptions& options = {});

// --- Writing ---

// The largest serialized ModelProto that libprotobuf (hence the reference package and ONNX
// Runtime) accepts: 2 GiB - 1.
inline constexpr std::uint64_t kMaxProtobufBytes = (std::uint64_t{1} << 31) - 1;

struct LegacyWriteOptions {
  enum class Mode : std::uint8_t {
    kAuto,      // kInline when the model serializes to at most kMaxProtobufBytes, else kExternal.
    kInline,    // Every payload inline. Error(kLimitExceeded) past kMaxProtobufBytes.
    kExternal,  // Payloads of the selected tensors in data files next to the model.
  };
  Mode mode = Mode::kAuto;
  // Name of the data file, in the model's folder: a plain file name (no '/', not "." or "..").
  // Empty: "<model file name>.data" ("model.onnx" -> "model.onnx.data").
  std::string data_file_name{};
  // Largest data file. When the next payload would end past it, a new file is started: "<name>",
  // "<name>.1", "<name>.2"... A single payload larger than the limit gets a file of its own
  // (payloads are never split: a tensor's bytes are one location, offset, length). 0: one file.
  std::uint64_t max_file_size = 0;
  // Each payload's offset in its data file is a multiple of this (a power of two; 0 or 1: none),
  // the gaps zero-filled. 4096, the page size of Linux and macOS, lets a reader map each tensor
  // on its own, starting on a page boundary, and keeps every tensor aligned for any SIMD width;
  // the cost is under one page of padding per tensor. 65536 matches Windows' allocation
  // granularity.
  std::uint64_t alignment = 4096;
  // Tensors whose payload has fewer bytes stay inline (the reference's size_threshold).
  std::uint64_t threshold = 1024;
  // Which tensors go to the data file. The dense initializers of the main graph and of its
  // subgraphs (If/Loop/Scan bodies at any depth) always may. Attribute tensors (Constant's
  // value...) and the values/indices of sparse tensors stay inline unless asked, because the
  // reference checker's shape inference and ONNX Runtime refuse them external; a sparse tensor
  // in an attribute needs both flags. Tensors of functions and of training graphs, and STRING
  // tensors, always stay inline: the reference loader resolves no external data there.
  bool externalize_attributes = false;
  bool externalize_sparse = false;
  // How the model and data files are written (output_options.h): durable fsyncs every file before
  // renaming it into place; follow_symlinks replaces the files symbolic links at the model's or a
  // data file's path lead to (refused otherwise).
  OutputFileOptions output{};
  // Called as the payloads are written (progress.h): `total` is the bytes of the payloads that go
  // to data files, or, for a model written inline, the size of the whole model file.
  ProgressCallback progress = nullptr;
};

// Writes `model` as a legacy model file at `out`, and in kExternal mode its data file(s) in the
// same folder. The model's tensors hold raw_data or typed fields (as read_legacy_model and the
// archive loader return them); a tensor that still refers to external data is refused
// (kInvalidArgument). The caller's model is neither changed nor copied: externalized tensors are
// written as metadata-only substitutes (SerializeOptions::substitutions), typed fields
// converted to raw bytes one tensor at a time, and every payload goes from its memory to the file
// once. Externalized tensors get external_data {location, offset, length} and data_location =
// EXTERNAL; location is the data file's name, relative to the model's folder.
//
// Atomic as a set (commit_together): every file is written in full under no name,
// then the old model is moved aside, the data files renamed into place and the model last, so
// that a crash at any instant leaves the old model and data files, the new ones, or no model --
// never a model next to data files of another write. On failure the old files are restored and
// nothing new remains. Data files of an earlier write that the new one does not replace (a ".3"
// when this write needs two files, "<name>" when it needs none) go with the old set. Nothing is
// added to the user's model or data: the model file holds the model's fields (with the references)
// and nothing else, each data file its payloads and the zeros between them, ending with the last
// payload. What write_legacy_model wrote.
struct LegacyWriteResult {
  std::vector<std::string> data_files;  // The data files' names, in order.
  // Data files of an earlier write under this set's names ("<name>", "<name>.1"...) that this
  // one does not write: removed with the old set, so no model sits beside a stale data file.
  std::vector<std::string> removed_data_files;
  // In kExternal mode (or kAuto past the limit), each tensor holding data that stays inline,
  // and why (attribute and sparse tensors unless asked, functions, STRING, small ones).
  std::vector<KeptInline> kept_inline;
};

LegacyWriteResult write_legacy_model(const ModelProto& model, const std::filesystem::path& out,
                                     const LegacyWriteOptions& options = {});

}  // namespace onnxzip

#endif  // ONNXZIP_LEGACY_H_
