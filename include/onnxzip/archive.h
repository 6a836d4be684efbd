// The .onnxz archive: one ONNX model in a ZIP file whose tensor payloads are stored, aligned
// entries and whose last entry, `__MODEL_PROTO`, is the ModelProto referring to them as external
// data (spec/onnxz-format.md, cited "spec §N" below).
//
// The rest of its contract and the reasons: HACKING.md, "Header notes", archive.h.
#ifndef ONNXZIP_ARCHIVE_H_
#define ONNXZIP_ARCHIVE_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "onnxzip/bytes.h"
#include "onnxzip/entry_sink.h"
#include "onnxzip/error.h"
#include "onnxzip/file_access.h"
#include "onnxzip/http_options.h"
#include "onnxzip/integrity.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/onnx_model.h"
#include "onnxzip/output_options.h"
#include "onnxzip/progress.h"
#include "onnxzip/read_limits.h"
#include "onnxzip/s3_options.h"
#include "onnxzip/tensor.h"

namespace onnxzip {

// Internal (include/onnxzip/internal/, not installed): the ZIP directory behind an Archive, and
// the sources it reads from.
class ZipDirectory;
class ByteSource;

// The model entry's name (spec §6.2, §7.1).
inline constexpr std::string_view kModelEntryName = "__MODEL_PROTO";
// The naming rule of .onnxz entries (spec §6): a payload entry's name is a C identifier of 1 to
// 255 bytes not starting with "__"; a reserved name (the model's) is "__" followed by the rest
// of a C identifier. The ZIP layer knows only ZIP's own, looser rule.
enum class EntryNameKind { kPayload, kReserved };
// The part of the rule `name` breaks ("is empty", "byte 3 (0x2d) is not ..."), or "" when it
// keeps it. Never throws: readers report the problem, writers throw it.
std::string entry_name_problem(std::string_view name, EntryNameKind kind);

// The default externalization threshold T in bytes (spec §7.4).
inline constexpr std::uint64_t kDefaultExternalThreshold = 1024;

// --- Writing ---

struct SaveOptions {
  // A: every entry's data offset is a multiple of it; a power of two in [64, 65536] (spec §4.1).
  std::uint32_t alignment = 64;
  // T: tensors whose payload (dims x element size, spec §7.3) has at least this many bytes
  // become entries; smaller ones stay inline. 0 externalizes every tensor that may be, empty
  // ones included (as zero-length entries, spec §7.4 item 4).
  std::uint64_t threshold = kDefaultExternalThreshold;
  // Store identical payloads once (equal size, CRC-32 and bytes): every tensor with those bytes
  // refers to the one entry (spec §7.2 allows sharing). Applies to the tensors finish()/save()
  // externalize, not to tensors added to an ArchiveWriter.
  bool dedupe = false;
  // Also externalize the values and indices of sparse tensors. Off by default: the reference
  // onnx package neither loads nor accepts them as external data (spec §7.4 item 3, §8).
  bool externalize_sparse = false;
  // How the archive file is written (output_options.h): durable fsyncs it and its folder around the
  // final rename; follow_symlinks replaces the file a symbolic link at `path` leads to. Anything
  // but a regular file (or such a link) there is always refused.
  OutputFileOptions output{};
  // Also write `__DIGESTS` (spec §12): each payload is hashed (SHA-256) as it is written, the
  // model before it is, so nothing is read back. Sign the result with sign_archive (signing.h).
  bool digests = false;
  // Called as finish()/save() writes the payloads it externalizes (progress.h); `total` is their
  // byte count (tensors added to an ArchiveWriter are not counted: their caller writes them).
  ProgressCallback progress = nullptr;
  // For a path "s3://bucket/key": the archive is written as an object in a bucket, a multipart
  // upload that completes at the end (spec/object-storage.md), with these settings (where the
  // store is, how to sign, part size, parts in flight, overwrite; s3_options.h). A local path
  // ignores them.
  S3Options s3{};
};

// Writes `model` to `path` as an .onnxz archive. Every tensor of a known fixed-size data type
// (not STRING / UNDEFINED) whose payload has at least options.threshold bytes becomes a stored
// entry, aligned to options.alignment, named after the tensor (EntryNamer); the tensor in
// `__MODEL_PROTO` keeps its name, dims, data type, doc string, segment, metadata and unknown
// fields and refers to the entry (data_location EXTERNAL, external_data [location, length],
// spec §7.2). Typed-field payloads (float_data, int32_data...) are written as raw little-endian
// bytes (spec §7.3). Sparse values/indices stay inline unless options.externalize_sparse.
// `model` is neither modified nor copied: payloads are streamed from it, a typed-field payload is
// converted one tensor at a time.
// Errors (nothing is written at `path`): Error(kInvalidArgument) naming the tensor for a tensor
// already EXTERNAL (legacy external data: load it first, or convert), and for any tensor that may
// be externalized (fixed-size type; sparse ones only with externalize_sparse), of whatever size,
// whose payload disagrees with its dims and data type (payload_problem, tensor.h: both raw_data
// and a typed field, negative dims, a size other than dims x element size); for a bad alignment;
// Error(kIo) when the file cannot be written.
void save(const ModelProto& model, const std::filesystem::path& path,
          const SaveOptions& options = {});

// The payload bytes save(model, path, options) and ArchiveWriter::finish(model) write: the sum
// of the sizes of the inline tensors they externalize (each counted, dedupe or not), the total
// their progress reports. For the total of a longer write that ends in one of them (repack).
// Tensors save() would refuse count 0; never throws for the model's content.
std::uint64_t externalized_bytes(const ModelProto& model, const SaveOptions& options = {});

// Where a tensor's payload is in the archive: what its TensorProto must say (spec §7.2).
struct TensorRef {
  std::string location;  // The payload entry's name.
  std::uint64_t length = 0;

  // Makes `tensor` refer to the entry: data_location EXTERNAL, external_data exactly
  // [location, length], raw_data and every typed field cleared. dims and data_type are the
  // caller's to set (finish() checks that they match the length).
  void apply_to(TensorProto& tensor) const;
};

// Derives payload entry names from tensor names (spec §6.1): readable C identifiers, unique
// under ASCII lower-casing. Every byte that is not an ASCII letter, digit or '_' becomes '_'
// (a run of them, or one next to an '_', collapses into one, and none is left at either end);
// a leading digit gets a '_' prefix, leading "__" (reserved, spec §6.2) is cut to one '_', an
// empty result becomes "tensor", and names are cut to kMaxBaseLength bytes. A name already
// taken (ignoring ASCII case) gets the suffix "_2", "_3"...
//   "/encoder/layer.0/attn/MatMul_output_0" -> "encoder_layer_0_attn_MatMul_output_0"
//   "onnx::Conv_123" -> "onnx_Conv_123"     "W" after "w" -> "W_2"
class EntryNamer final {
 public:
  // Longest name before a suffix: with "_" and up to 14 digits it stays within 255 bytes.
  static constexpr std::size_t kMaxBaseLength = 240;

  // The readable form of `tensor_name`, before de-duplication (a valid payload entry name).
  static std::string sanitize(std::string_view tensor_name);
  // A valid payload entry name, not yet handed out, and now reserved.
  std::string name_for(std::string_view tensor_name);
  // Reserves `name` (already valid); false if it, or a case variant, was taken.
  bool reserve(std::string_view name);
  bool is_taken(std::string_view name) const;

 private:
  std::unordered_map<std::string, std::uint64_t> next_suffix_;  // Lower-cased name -> next n.
};

namespace archive_detail {
struct ResumedWriter;  // Internal: the tail of an archive written in parts (parts.h).
}  // namespace archive_detail

// Writes an archive tensor by tensor, for exporters that produce weights one at a time and
// cannot hold them all: memory stays bounded by one piece of one tensor (plus the model).
//
//   ArchiveWriter writer("model.onnxz");
//   const TensorRef ref = writer.add_tensor("w", TensorProto::kFloat, dims, bytes);
//   ref.apply_to(*model.graph->initializer.emplace_back(...));   // metadata only
//   writer.finish(model);
//
// Each added tensor becomes a payload entry at once. finish(model) then:
//   1. checks every EXTERNAL tensor of `model`: its location names an added entry, its length
//      (if given) and dims x element size equal the entry's size, it carries no payload, its type
//      is a fixed-size one, and its only keys are location, length and an offset of "0"; and
//      every added entry is referred to (spec §7.2). Error(kInvalidArgument) naming the tensor or
//      entry; the writer stays usable, so the caller may fix the model and call finish() again.
//   2. externalizes the model's inline tensors exactly as save() does (threshold, dedupe,
//      externalize_sparse).
//   3. writes `__MODEL_PROTO` last, with every reference in the canonical form of spec §7.2,
//      then renames the archive into place. The caller's model is not modified.
// Destroyed without a successful finish(), the writer leaves nothing at the path. Not thread-safe.
class ArchiveWriter final {
 public:
  // Error(kInvalidArgument) for a bad alignment, Error(kIo) when the temporary file next to
  // `path` cannot be created.
  explicit ArchiveWriter(std::filesystem::path path, const SaveOptions& options = {});
  ~ArchiveWriter();
  ArchiveWriter(ArchiveWriter&& other) noexcept;
  ArchiveWriter& operator=(ArchiveWriter&& other) noexcept;
  ArchiveWriter(const ArchiveWriter&) = delete;
  ArchiveWriter& operator=(const ArchiveWriter&) = delete;

  // Called with the CRC-32 of an added payload as written, once the writer has computed it (for
  // a large payload from the written bytes, beside the copies of later ones): within that
  // add_tensor(), a later one or finish(), on the caller's thread, in the order the tensors were
  // added. An exception it throws fails the write and propagates. A caller copying bytes whose
  // CRC-32 it knows (repack) checks them with it instead of reading them once more.
  using PayloadCrcCheck = std::function<void(std::uint32_t crc32)>;

  // Adds the payload of tensor `tensor_name` (any string; it only names the entry): `bytes` must
  // be exactly dims x element size of `data_type` (spec §7.3), else Error(kInvalidArgument), as
  // for STRING, UNDEFINED or unknown types. `bytes` need not outlive the call. Error(kBadState)
  // after finish() or after a failed add. An error found in the bytes of an earlier tensor (they
  // could not be read back, `check` threw) may come from this call too, naming that entry.
  TensorRef add_tensor(std::string_view tensor_name, std::int32_t data_type,
                       std::span<const std::int64_t> dims, ByteSpan bytes,
                       const PayloadCrcCheck& check = nullptr);
  // The same, the payload written by `producer` in pieces (exactly dims x element size bytes,
  // else Error(kInvalidArgument) and the writer is unusable). An exception from the producer
  // propagates and makes the writer unusable too.
  TensorRef add_tensor(std::string_view tensor_name, std::int32_t data_type,
                       std::span<const std::int64_t> dims, const EntryProducer& producer,
                       const PayloadCrcCheck& check = nullptr);

  // See the class comment. Error(kBadState) when called again after success.
  void finish(const ModelProto& model);

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  struct State;
  friend struct archive_detail::ResumedWriter;
  ArchiveWriter(std::filesystem::path path, std::unique_ptr<State> state);

  std::filesystem::path path_;
  std::unique_ptr<State> state_;
};

// --- Reading ---

struct LoadOptions {
  // Parsing `__MODEL_PROTO`: its limits, and whether payloads are borrowed. parse.no_copy (the
  // default here) borrows stored payload entries from the archive bytes (the mapping, for
  // load(path)) instead of copying them -- no weight byte is read by load -- and the model's
  // inline payloads of at least parse.raw_data_threshold bytes likewise. Deflated payloads
  // (archives other tools wrote, spec §9.3 item 1) are always inflated, their CRC-32 checked:
  // into owned memory, or when larger than zip.spill_threshold into a mapped temporary file
  // (limits.spill_threshold). parse.no_copy = false: every payload is an owned, 64-byte aligned
  // copy.
  ParseOptions parse{.no_copy = true};
  // Check the CRC-32 of every referenced payload (reads every weight byte once).
  bool verify_crc = false;
  // Archive::open / from_bytes only: false leaves deflated payload entries alone -- not one of
  // their bytes is inflated (or CRC-checked), and their TensorInfo::data is empty -- for tools
  // that need only the model and the entries' sizes, such as `onnxzip info`. A deflated
  // `__MODEL_PROTO` is inflated all the same. load() resolves every payload whatever this says.
  bool inflate_payloads = true;
  // Archive::open / from_bytes only: false lets the parsed model go once the tensors are listed
  // (an inline tensor's payload kept, borrowed from model_bytes()), so that an open archive holds
  // about the model's size rather than its parse, several times that: for a caller that parses
  // the model itself when it needs it (the Python face). model() is then an empty ModelProto.
  bool keep_model = true;
  // Limits for the ZIP structure.
  ReadLimits limits{};
  // How load(path) and Archive::open get at the file: mapped (borrowed payloads stay in the
  // mapping, which must not shrink while it lives: see file_access.h), or read whole into owned
  // memory (kRead: for files others may change; payloads then borrow from that memory).
  FileAccess access = FileAccess::kMap;
  // Digest checking for runtimes (spec §12.5), paid as payloads are used: opening reads and
  // parses `__DIGESTS` (within `integrity`'s limits), checks that it lists the model and every
  // entry a tensor refers to with its size, and checks the model's SHA-256. Each payload's is
  // checked the first time Archive::payload() or payloads() hands it out -- with this option
  // the one way to a payload: every TensorInfo::data is empty -- and later handouts of it cost
  // nothing (a source read in ranges brings new bytes with each read, so each is checked).
  // load() checks every payload. Errors: Error(kCorrupt) for an archive without `__DIGESTS`
  // (nothing to check against), for an entry it does not list, and for bytes whose SHA-256
  // differs, naming the entry; decode_digests's for a `__DIGESTS` that does not parse.
  bool check_digests = false;
  // How the caller's users ask for check_digests, for messages ("check_digests=True").
  std::string check_digests_name = "LoadOptions::check_digests";
  // Also require, at open, a valid `__SIGNATURE` of `__DIGESTS` by this key (implies
  // check_digests; only the two entries are read): Error(kCorrupt) saying what failed -- none,
  // another key, a bad signature.
  std::optional<PublicKey> public_key{};
  IntegrityLimits integrity{};
  // Archive::open_url of an s3://bucket/key URL: credentials, profile, region and endpoint that
  // override the environment's and ~/.aws's (s3_options.h; the part settings are for writes).
  S3Options s3{};
};

// Reads the archive at `path` (memory-mapped) and returns its model with every external tensor
// resolved: raw_data set (borrowed with the mapping as owner token, or owned; see LoadOptions),
// external_data and data_location cleared, so the result is an ordinary inline model that stays
// valid after every archive object is gone.
// Errors: the ZipReader's for a bad ZIP; Error(kCorrupt) when `__MODEL_PROTO` is missing, not
// last, or does not parse (spec §9.4 items 1-2), and for every reference breaking spec §9.4
// item 3 (no or several locations, a location that is not a payload entry name -- "..", an
// absolute path, "#...", "_ORT_MEM_ADDR_" -- or names no entry, a payload besides the
// reference, STRING / UNDEFINED type, negative dims, an entry size different from dims x element
// size or from `length`, an `offset` other than "0"), naming the tensor and the entry;
// Error(kUnsupported) for a data type this library does not know.
ModelProto load(const std::filesystem::path& path, const LoadOptions& options = {});
// The same from an archive in memory. Borrowed payloads carry `owner` as owner token; with
// kNoOwner the caller must keep `archive_bytes` alive as long as the model, whose payloads and
// (with parse.no_copy) strings then borrow from them. `source_name` names the input in errors.
ModelProto load_bytes(ByteSpan archive_bytes, OwnerToken owner, const LoadOptions& options = {},
                      std::string_view source_name = "<memory>");

namespace detail {
struct ArchiveState;  // What an Archive holds: private to the library (archive.cpp).
}  // namespace detail

// A read-only view of an archive for runtimes with their own ONNX parser: the model bytes, and
// every tensor that holds data with its data type, dims and payload span. Opening validates the
// archive exactly as load() does (same errors) without resolving anything. Immutable; const calls
// may run concurrently. Movable.
class Archive final {
 public:
  // One tensor that holds data (spec/names.md, "The tensor record").
  struct TensorInfo {
    std::string name;   // TensorProto.name ("" when absent).
    std::string site;   // Where it sits, e.g. "graph/initializer[3]" (see TensorSite).
    std::string entry;  // The payload entry's name; "" for an inline tensor.
    std::int32_t data_type = 0;
    std::vector<std::int64_t> dims;
    std::uint64_t size = 0;  // Payload bytes (dims x element size, spec §7.3).
    // The file offset of the entry's (compressed) data; none for an inline tensor and while a
    // remote entry's local header is unread.
    std::optional<std::uint64_t> offset;
    std::uint64_t alignment = 0;  // Largest power of two dividing offset (<= 65536); 0 if none.
    bool is_inline = false;
    bool zero_copy = true;  // False for a deflated entry and an inline tensor.
    // The payload: a slice of the archive bytes for a stored entry (valid while this Archive or
    // a copy of owner() lives), or inflated bytes the Archive owns for a deflated one (valid
    // while this Archive lives; empty when LoadOptions::inflate_payloads is false). Empty for
    // an inline tensor: payload() gives its bytes.
    ByteSpan data;
  };

  // Maps `path`. LoadOptions::parse.no_copy selects whether model()'s inline payloads borrow; with
  // verify_crc every referenced entry's CRC-32 is checked; inflate_payloads selects whether
  // deflated payloads are inflated now (the default) or not at all.
  static Archive open(const std::filesystem::path& path, const LoadOptions& options = {});
  // Reads the archive `source` holds. A source that reads ranges (a remote file, HTTP)
  // is read on demand: opening reads the archive's tail only (what the source's open brought;
  // each payload's local header is read and checked with its data), and every TensorInfo::data
  // is empty: payload() and payloads() read them. Error(kInvalidArgument) for a null source.
  static Archive open(std::shared_ptr<const ByteSource> source, const LoadOptions& options = {});
  // open() of HttpSource::open(url, http), whose first request brings the tail: one request
  // when the end records, central directory and model fit in http.tail_size, else two. An
  // s3://bucket/key URL is read the same way, each request signed (credentials, region and
  // endpoint from options.s3, else from the environment and ~/.aws as the AWS tools take them;
  // README "Object storage").
  static Archive open_url(const std::string& url, const LoadOptions& options = {},
                          const HttpOptions& http = {});
  // Borrows `bytes` (they must outlive the Archive, and with kNoOwner the spans it gives too).
  static Archive from_bytes(ByteSpan bytes, OwnerToken owner, const LoadOptions& options = {},
                            std::string source_name = "<memory>");

  ~Archive();
  Archive(Archive&& other) noexcept;
  Archive& operator=(Archive&& other) noexcept;
  Archive(const Archive&) = delete;
  Archive& operator=(const Archive&) = delete;

  // The serialized ModelProto (a slice of the archive, or inflated memory when deflated).
  ByteSpan model_bytes() const noexcept;
  // The parsed model; external tensors are left as references.
  const ModelProto& model() const noexcept;
  // Every tensor that holds data, external and inline, in for_each_tensor order (spec/names.md:
  // no STRING or UNDEFINED tensor, nor an inline one whose payload breaks the payload rule,
  // which verify reports). Several may share one location (tied weights).
  const std::vector<TensorInfo>& tensors() const noexcept;
  // The first tensor with this TensorProto.name, or nullptr. O(1).
  const TensorInfo* find_tensor(std::string_view name) const noexcept;
  // The first external tensor whose payload is this entry, or nullptr. O(1).
  const TensorInfo* find_entry(std::string_view entry) const noexcept;

  // The payload of `info` (one of tensors()): an inline tensor's raw bytes from the model (a
  // typed field converted as RawPayload does); TensorInfo::data when the archive holds it, else
  // read from the source (one read; a deflated entry inflated, its CRC-32 checked), owned by the
  // result, 64-byte aligned when stored aligned. With LoadOptions::check_digests, its SHA-256
  // checked first (the first time, or every time for a source read in ranges). Errors: the
  // ZipDirectory's (the entry's local header is checked first), the source's (kIo naming it),
  // Error(kCorrupt) naming the entry for a digest mismatch, Error(kInvalidArgument) for a
  // TensorInfo of another archive. May be called from several threads at once.
  TensorBytes payload(const TensorInfo& info) const;
  // payload() of each, in their order: entries adjacent in the file read with one read, the reads
  // made together (an HTTP source makes them at once).
  std::vector<TensorBytes> payloads(std::span<const TensorInfo* const> infos) const;

  // The archive's ZIP directory: every entry located (ZipEntry::local) for an archive in a file
  // or in memory, which a ZipReader checked; only those its open read for one read in ranges
  // over HTTP or S3.
  const ZipDirectory& zip() const noexcept;
  // Keeps the archive bytes alive (the mapping for open(); the caller's token for from_bytes).
  const OwnerToken& owner() const noexcept;

 private:
  explicit Archive(std::unique_ptr<detail::ArchiveState> state) noexcept;
  std::unique_ptr<detail::ArchiveState> state_;
};

// --- Verification (spec §9.5) ---

struct VerifyFinding {
  // kError: load() refuses the archive for this (or the CRC-32 is wrong, or a digest or the
  // signature check of spec §12.5 fails). kWarning: a deviation from the spec that load()
  // accepts (spec §9.3, §9.4 item 4, §11, §12.1).
  enum class Severity { kError, kWarning };
  // What breaks (spec/names.md, "Findings").
  enum class Kind { kZip, kLayout, kReference, kModel, kIr, kCrc, kDigest, kSignature };
  Severity severity = Severity::kError;
  std::string entry;   // "" when the finding concerns no entry.
  std::string tensor;  // "" when it concerns no tensor; else name and site.
  std::uint64_t offset = 0;
  std::string message;  // The problem alone: the place is in the fields and `place`.
  // The place as a line names it: the file, the tensor label, the entry phrase ("entry 'w' at
  // offset 0"); parts that do not apply are "".
  ErrorContext place{};
  // Whether the finding comes from the integrity entries' checks (kind kDigest or kSignature).
  bool integrity = false;
  Kind kind = Kind::kZip;
};

std::string_view to_string(VerifyFinding::Severity severity) noexcept;
// "zip", "layout", "reference", "model", "ir", "crc", "digest", "signature".
std::string_view to_string(VerifyFinding::Kind kind) noexcept;

// The status of `__DIGESTS` and of `__SIGNATURE` in a verify report (spec/names.md, "Integrity
// status"): kOtherKey is for the signature only.
enum class IntegrityStatus { kAbsent, kVerified, kUnchecked, kOtherKey, kFailed };
// "absent", "verified", "unchecked", "other_key", "failed".
std::string_view to_string(IntegrityStatus status) noexcept;
// The finding as one line, "<file>: <tensor>: <entry>: <message>" over the parts of `place`
// that are not empty, as an Error with that context words its message.
std::string to_string(const VerifyFinding& finding);

struct VerifyReport {
  std::vector<VerifyFinding> findings;
  IntegrityStatus digests = IntegrityStatus::kAbsent;
  IntegrityStatus signature = IntegrityStatus::kAbsent;
  std::string signature_key_id;  // The key id `__SIGNATURE` names; "" without one.
  // What was checked, in words: "structure, CRC-32s, digests verified; signature not checked:
  // give a public key".
  std::string checked;

  // The archive conforms to spec version 1: no finding of either severity (spec §9.5).
  bool ok() const noexcept { return findings.empty(); }
  // load() would succeed, and every CRC-32 is right.
  bool loadable() const noexcept;
};

struct VerifyOptions {
  // Check the CRC-32 of every entry (reads the whole archive; deflated entries are inflated in
  // pieces, never held whole, and those beyond zip's limits are findings, read_limits.h).
  bool check_crc = true;
  ParseOptions parse{};
  ReadLimits limits{};
  // Map the file, or read it whole into memory (kRead; see file_access.h).
  FileAccess access = FileAccess::kMap;
  // Called as the CRC-32 check reads the entries (progress.h): `total` is the sum of their
  // uncompressed sizes (0 without check_crc), and the last call (done == total) comes when the
  // report is complete. Not called for a file that is not a readable ZIP.
  ProgressCallback progress = nullptr;
  // When the archive has `__DIGESTS`, every entry's SHA-256 is checked against it (spec §12.5;
  // with check_crc only: both read every byte).
  // With a public key, a valid `__SIGNATURE` by that key is required too: its absence, another
  // key, a bad signature are errors.
  std::optional<PublicKey> public_key{};
  // What findings call the file (a URL it was downloaded from); "" for its path.
  std::string source_name{};
  // How the caller's users give a public key, for VerifyReport::checked ("--public-key").
  std::string public_key_term = "VerifyOptions::public_key";
  IntegrityLimits integrity{};
  // Threads that read the entries for their CRC-32s and SHA-256s, entries shared out among them
  // (one entry is read by one thread): 0 for one per core. The report is the same whatever the
  // number.
  std::size_t threads = 0;
};

// Checks the archive at `path` against the spec: everything load() checks (as kError), the
// CRC-32 of every entry, the alignment of every entry (64 and the archive's declared A), and the
// rest of §2 to §7 -- stored entries only, no data descriptors, the fixed header values, the
// extra fields, payload names (§6), `__MODEL_PROTO` last in file and central order, every payload
// entry referred to, external_data keys exactly [location, length], every inline tensor's
// payload consistent with its dims and type (payload_problem, tensor.h; spec §9.4 item 5) --
// plus every ZipReader finding (as kWarning). A file that is not a readable ZIP is one kError
// finding. Never throws for the archive's content: Error(kNotFound / kIo) only when the file
// cannot be mapped or read (or is not a regular file). The ONNX IR rules are check_ir's
// (ir_check.h), not verify's.
VerifyReport verify(const std::filesystem::path& path, const VerifyOptions& options = {});
// The same for an archive in memory; `source_name` names it in findings.
VerifyReport verify_bytes(ByteSpan archive_bytes, const VerifyOptions& options = {},
                          std::string_view source_name = "<memory>");

// --- Interoperability ---

// Writes `view_path`, a legacy .onnx model for runtimes that know ONNX external data but not
// .onnxz: the archive's model with every graph initializer (main graph and subgraphs) that is a
// stored payload entry of at least kDefaultExternalThreshold bytes referring to the archive file
// itself (location = the archive's file name, offset = the payload's file offset, length), so it
// loads in place with no extraction. Every other external tensor -- node attribute tensors
// (Constant values), sparse tensors, function and training-info tensors, deflated payloads, and
// initializers under 1 KiB (ONNX Runtime's shape inference reads small ones, such as a Reshape's
// shape, and cannot read them from external data) -- is copied inline, since today's runtimes
// refuse or skip those as external data. The view must be in the
// archive's folder (external data locations cannot go up a folder): else Error(kInvalidArgument).
// The archive is validated as by load(), read with `load` (how the file is got at, FileAccess;
// its ZIP limits, such as the compression ratio of deflated entries, read_limits.h). The view
// appears atomically; `output` says how it is written (durable, follow_symlinks).
// Returns what the view copied inline, and why, beside what it refers to in the archive.
struct ViewResult {
  std::vector<KeptInline> copied_inline;
  std::uint64_t referred_bytes = 0;  // Payload bytes the view refers to in the archive.
};
ViewResult write_view_model(const std::filesystem::path& archive_path,
                            const std::filesystem::path& view_path, const LoadOptions& load = {},
                            const OutputFileOptions& output = {});

}  // namespace onnxzip

#endif  // ONNXZIP_ARCHIVE_H_
