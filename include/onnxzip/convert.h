// Conversion between legacy ONNX model files and .onnxz archives, and repair of ZIP archives of
// ONNX models that other tools made.
//
// convert() reads the input in whichever form it is (the format is told by its content, not its
// name: detect_format) and writes the other form: a legacy model (inline, or with external data
// in one file, in several, or per tensor; legacy.h) becomes an .onnxz archive (archive.h); an
// archive becomes a legacy model, weights inline when the model fits protobuf's 2 GiB, otherwise
// (or on request) in external data files. The model is carried over unchanged apart from where
// its payloads live: a model that breaks the ONNX IR rules (ir_check.h) converts all the same.
// Only what is no model at all, or what cannot be carried over faithfully, is refused (below).
//
// The input is never written to: both functions refuse (Error(kInvalidArgument), before writing
// anything) an output that is the input file itself, or any file the input consists of, under any
// name (hard or symbolic links included). Outputs appear atomically, so after a failure nothing
// new is left. This layer uses only the public headers below; anyone may use it (the CLI does).
#ifndef ONNXZIP_CONVERT_H_
#define ONNXZIP_CONVERT_H_

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/http_options.h"
#include "onnxzip/legacy.h"
#include "onnxzip/progress.h"

namespace onnxzip {

class HttpSource;  // Internal (include/onnxzip/internal/http_source.h).

struct ConvertOptions {
  // How a legacy input is written as an archive (alignment, threshold, dedupe...).
  SaveOptions archive{};
  // How an archive is written as a legacy model (inline or external data, data file name, split
  // size, data file alignment...).
  LegacyWriteOptions legacy{};
  // How a legacy input is read (limits, links, read.access).
  LegacyReadOptions read{};
  // How an archive input is read (limits, CRC checks, load.access). To read an input that
  // others may change into memory whatever its format, set both read.access and load.access to
  // FileAccess::kRead.
  LoadOptions load{};
};

// Converts `in` to the other format at `out`:
//   * legacy -> .onnxz: read_legacy_model(in, options.read), then save(model, out,
//     options.archive). Typed fields (float_data...) of externalized tensors become raw bytes.
//   * .onnxz -> legacy: load(in, options.load), then write_legacy_model(model, out,
//     options.legacy); the loaded model, which borrows from the archive's mapping, lives until
//     the write is done. With load.verify_crc the payloads' CRC-32s are checked on a second
//     thread while the write copies them, not before it: a mismatch is load()'s error all the
//     same, and the write then leaves nothing (the progress callback never reaches its total).
// Before anything is written, the input model is refused with Error(kCorrupt) naming `in` (and
// the tensor) when it has neither an ir_version nor a graph (a 0-byte file parses as such a
// model: nothing says it is one), or when an inline tensor's payload disagrees with its dims and
// type (payload_problem, tensor.h) -- what `onnxzip verify` reports for the input. Missing
// opset imports and other IR-rule problems are not refused.
// Returns the input's format and, for an archive input, what the legacy writer wrote (data
// files, tensors kept inline and why). Errors: the reader's and writer's (each names the file,
// and the tensor or entry); Error(kInvalidArgument) when `out` (or, for a legacy output, one of
// its data files) is `in` or one of `in`'s external data files, or when `out`'s name promises
// the input's own format (check_output_name, legacy.h: `.onnxz` an archive, `.onnx` a legacy
// model).
struct ConvertResult {
  ModelFormat from = ModelFormat::kLegacy;  // The input's format.
  LegacyWriteResult legacy{};               // For an archive input.
};
ConvertResult convert(const std::filesystem::path& in, const std::filesystem::path& out,
                      const ConvertOptions& options = {});

// --- Remote archives (HTTP, http_options.h) ---

// What the remote file `source` holds, told from the tail its first request brought (no
// request): kOnnxz when that tail is the whole file and starts as detect_format(path) wants, or
// when it holds a ZIP end record's signature in its last 22 + 65,535 bytes; else kLegacy.
ModelFormat detect_format(const HttpSource& source);

// convert() of the .onnxz archive `source` reads into a legacy model at `out`, written while it
// downloads: the archive's tail (the open's request, two when the model does not fit it) gives
// the model, and the output is planned as write_legacy_model plans it; then the bytes from the
// first payload's local header to the last payload's end are read in ranges of
// HttpOptions::piece_size, max_parallel at once, and each payload goes from the received bytes
// straight to its place: its offset in a data file (written with pwrite), or memory for one that
// stays inline. Each payload's local header is checked against the central directory and its
// CRC-32 computed as its bytes arrive (ranges may complete in any order); the outputs appear
// only when all is checked (write_legacy_model's commit), else nothing new is left. The output
// is convert()'s of the same archive, byte for byte, in every form options.legacy asks for.
// Memory: the model, the payloads that stay inline -- for an inline output (kInline, or kAuto
// when the payloads fit protobuf's 2 GiB) all of them -- and the ranges in flight's buffers.
// Deflated entries and entries with a data descriptor (not in a conforming archive) are read
// apart first, one request each. options.legacy.progress gets the bytes received.
// Errors: HttpSource's (kIo naming the URL), the archive's (kCorrupt naming the URL and the
// entry: a local header that contradicts the central directory, a CRC-32 mismatch), the
// writer's; Error(kLimitExceeded) before anything is downloaded when the payloads that would be
// held in memory pass protobuf's limit.
LegacyWriteResult convert_remote(const std::shared_ptr<const HttpSource>& source,
                                 const std::filesystem::path& out,
                                 const ConvertOptions& options = {});

// What repack() did with the input's entries.
struct RepackResult {
  // Entries carried over whole under their name (or, when two differ only in case, the
  // de-duplicated name the writer gave the second), in input order.
  std::vector<std::string> kept_entries;
  // Entries whose bytes were carried over per tensor instead: referred to by a byte range
  // (legacy offset/length into a shared file), or under a name that is not a valid payload
  // entry name (spec §6.1). Their tensors' payloads are stored as save() stores inline ones.
  std::vector<std::string> unpacked_entries;
  // Entries whose bytes are not in the output: no tensor refers to them (stale files, folders,
  // reserved names of unknown later versions).
  std::vector<std::string> dropped_entries;
};

// Writes a conforming .onnxz at `out` from a ZIP archive `in_zip` that another tool made and that
// holds an ONNX model in an entry named `__MODEL_PROTO`: at the top, or in a folder at any depth
// ("model/__MODEL_PROTO", "exports/resnet/__MODEL_PROTO": `zip -r` records a folder's path as it
// was typed), whose locations are then relative to that folder. Any ZIP the reader accepts will
// do (read within `limits`): deflated entries, data descriptors, unaligned data,
// directory entries, the model entry anywhere in the archive, legacy references with
// offset/length. Entries referred to whole by a valid name keep that name, their tensors the same
// entry (tied weights stay shared); every other reference is resolved and its tensor stored like
// an inline one (options.threshold decides whether it becomes an entry, named after the tensor).
// Every payload's CRC-32 is checked. Inline tensors of the model are externalized as save()
// does. Entries that are kept are copied from the input (or its inflater) in bounded memory.
//
// Errors: the ZipReader's for a broken ZIP or an entry beyond its limits (a zip bomb); Error
// (kCorrupt) naming the archive when there is no `__MODEL_PROTO` entry or several (at any
// depths), when it does not parse, and for a reference that names no entry, lies outside its
// entry, or whose size is not dims x element size (naming the tensor and the location);
// Error(kInvalidArgument) when `out` is `in_zip` or its name ends in `.onnx`.
struct RepackOptions {
  SaveOptions save{};   // How the output is written (alignment, threshold, digests, progress...).
  ReadLimits limits{};  // Limits for reading `in_zip`.
  FileAccess access = FileAccess::kMap;  // How `in_zip` is got at.
};
RepackResult repack(const std::filesystem::path& in_zip, const std::filesystem::path& out,
                    const RepackOptions& options = {});

// --- Verifying either format ---

// Checks the model file at `path`, an .onnxz archive or a legacy .onnx (told by detect_format),
// and returns every finding: what `onnxzip verify` prints, one finding a line, and what the
// Python package's verify() returns -- one verification for both.
//   * An archive: verify(path, options), then the ONNX IR rules (check_ir) of its model when it
//     opens (when it does not, the findings of verify say why).
//   * A legacy model: read_legacy_model (options.access); a failure is one kError finding, after
//     which the graph is still checked when the file parses without its external data. Then
//     every inline tensor's payload rule (payload_problem, tensor.h) as kWarning findings, as
//     verify() reports them for an archive, and the IR rules.
// IR problems are kWarning findings (load() accepts such a model) concerning no entry or tensor;
// every message starts with the file's name. Throws only when the file cannot be read at all:
// Error(kNotFound), kIo, kInvalidArgument for a folder.
VerifyReport verify_model_file(const std::filesystem::path& path,
                               const VerifyOptions& options = {});
// The same of a model in memory (`source_name` names it in every finding): an archive as above;
// a legacy model parsed, each tensor referring to external data a kError finding (bytes have no
// folder to hold it). Throws nothing for the content.
VerifyReport verify_model_bytes(ByteSpan bytes, const VerifyOptions& options = {},
                                std::string_view source_name = "<memory>");

}  // namespace onnxzip

#endif  // ONNXZIP_CONVERT_H_
