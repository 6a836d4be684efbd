// Many writers, one archive (spec §13): processes that each hold some of a model's tensors
// (ranks of a training job) write one .onnxz together, each its own byte range, and one of them
// writes the tail. Once every entry's name and size is known, every offset is, so the writers
// need no coordination but three small byte strings the caller's engine carries (torch
// distributed, MPI, Ray): the plan, the token and the receipts.
//
//   plan = PartsPlan::make(parts, options)        every rank, or one rank and broadcast to_bytes()
//   token = begin_parts(path, plan)               one rank; broadcast the token
//   PartWriter w(token, rank); w.add_tensor(...)  every rank, its own tensors; gather w.receipt()
//   finish_parts(token, model, receipts, key)     one rank: the archive appears at `path`
//   abort_parts(token)                            instead of finish: the temporary goes
//
// The archive is byte for byte what one ArchiveWriter writes when its tensors are added in plan
// order with the same alignment and digests (and signed by sign_archive, up to the signature's
// own bytes, which ECDSA draws at random). Plans, tokens and receipts cross process boundaries:
// every decode checks every field and its bounds.
#ifndef ONNXZIP_PARTS_H_
#define ONNXZIP_PARTS_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/bytes.h"
#include "onnxzip/integrity.h"
#include "onnxzip/onnx_model.h"
#include "onnxzip/output_options.h"

namespace onnxzip {

// One tensor of a part as the plan knows it: no bytes.
struct PartTensor {
  std::string name;
  std::int32_t data_type = 0;
  std::vector<std::int64_t> dims;
};

struct PartsOptions {
  // As SaveOptions::alignment: a power of two in [64, 65536].
  std::uint32_t alignment = 64;
  // As SaveOptions::digests: each part writer hashes its payloads, finish() writes `__DIGESTS`.
  bool digests = false;
};

// Bounds on what from_bytes accepts (plans come from another process).
struct PartsPlanLimits {
  std::uint64_t max_parts = std::uint64_t{1} << 20;
  std::uint64_t max_tensors = std::uint64_t{1} << 24;
  std::uint64_t max_rank = 64;  // Dims of one tensor.
};

// One payload entry of the plan (the TensorInfo words of spec/names.md).
struct PlannedEntry {
  std::string name;   // The tensor's name.
  std::string entry;  // Its entry's name: what ArchiveWriter's EntryNamer gives, in plan order.
  std::int32_t data_type = 0;
  std::vector<std::int64_t> dims;
  std::uint32_t part = 0;
  std::uint64_t size = 0;
  std::uint64_t local_header_offset = 0;
  std::uint64_t offset = 0;  // Of the payload's first byte.

  bool operator==(const PlannedEntry&) const = default;
};

// Where every entry of an archive written in parts goes. Immutable; cheap to copy (shared).
class PartsPlan final {
 public:
  // Lays out the tensors of `parts` (one list per part, parts as contiguous runs in part order)
  // exactly as ZipWriter would, entry names by EntryNamer. Deterministic. Error
  // (kInvalidArgument) naming the tensor for a type without a fixed element size, bad dims, a
  // tensor name given twice, a bad alignment, or an archive past the largest file size.
  static PartsPlan make(const std::vector<std::vector<PartTensor>>& parts,
                        const PartsOptions& options = {});
  // The plan to_bytes() wrote. Error(kCorrupt) naming the field and offset for anything
  // malformed or trailing, Error(kLimitExceeded) beyond `limits`, and make()'s errors.
  static PartsPlan from_bytes(ByteSpan bytes, const PartsPlanLimits& limits = {});
  // Versioned, little-endian; equal plans give equal bytes.
  std::vector<std::uint8_t> to_bytes() const;

  std::uint32_t alignment() const noexcept;
  bool digests() const noexcept;
  std::size_t part_count() const noexcept;
  // Every entry in file order.
  std::span<const PlannedEntry> entries() const noexcept;
  // The entries of `part` (empty for a part without tensors). Error(kInvalidArgument) past the
  // last part.
  std::span<const PlannedEntry> part(std::size_t part) const;
  // [first, end) of the bytes `part` writes: gaps, local headers, payloads.
  std::pair<std::uint64_t, std::uint64_t> part_range(std::size_t part) const;
  // Where the payloads end and the tail (integrity entries, model, directory) begins.
  std::uint64_t payload_end() const noexcept;
  // The entry of tensor `name`, or nullptr.
  const PlannedEntry* find(std::string_view name) const noexcept;
  // What the model's tensor `name` must say (TensorRef::apply_to). Error(kNotFound) when the
  // plan has no such tensor.
  TensorRef ref(std::string_view name) const;

  bool operator==(const PartsPlan& other) const noexcept;

 private:
  struct Layout;
  explicit PartsPlan(std::shared_ptr<const Layout> layout) noexcept : layout_(std::move(layout)) {}
  std::shared_ptr<const Layout> layout_;
};

// Creates the archive's temporary under `target`'s folder (a hidden name, preallocated to the
// plan's payload bytes) and returns the token that names it, for every part writer and finish.
// Error(kInvalidArgument) for a target that may not be replaced (output_file.h's rule),
// Error(kIo) when the file cannot be made.
// An "s3://bucket/key" target starts a multipart upload instead (credentials, region and
// endpoint from the environment, as for reading): each writer's range becomes one or more
// parts of it (spec §13), finish uploads the tail and completes it, abort aborts it. A plan
// whose parts the store cannot take (a non-empty part under 5 MiB, more than 10,000 parts) is
// Error(kInvalidArgument) saying how to regroup, before any request. In a bucket a part writer
// writes its tensors in plan order.
std::vector<std::uint8_t> begin_parts(std::string_view target, const PartsPlan& plan,
                                      const OutputFileOptions& output = {});

// Writes the entries of one part into the file `begin_parts` made: positioned writes of each
// entry's gap, local header (with the CRC-32 of its bytes) and payload, hashing SHA-256 as it goes
// when the plan has digests. Any order of tensors; each exactly once. Not thread-safe; writers of
// different parts run anywhere (threads, processes, hosts sharing the file system).
class PartWriter final {
 public:
  // Error(kCorrupt) for a malformed token, Error(kInvalidArgument) for a part the plan does not
  // have, Error(kNotFound / kIo) when the temporary cannot be opened (finished or aborted).
  PartWriter(ByteSpan token, std::uint32_t part);
  ~PartWriter();
  PartWriter(PartWriter&& other) noexcept;
  PartWriter& operator=(PartWriter&& other) noexcept;
  PartWriter(const PartWriter&) = delete;
  PartWriter& operator=(const PartWriter&) = delete;

  // Writes tensor `name`'s payload. Error(kInvalidArgument) for a tensor not in this part, one
  // already written, or bytes of another size than planned; Error(kIo) when the write fails.
  void add_tensor(std::string_view name, ByteSpan bytes);
  // The receipt finish_parts() takes: per entry its name, size, CRC-32 and SHA-256.
  // Error(kBadState) naming the tensors not written yet.
  std::vector<std::uint8_t> receipt() const;

  const PartsPlan& plan() const noexcept;
  std::uint32_t part() const noexcept;

 private:
  struct State;
  static EntryDigest write_to_bucket(State& state, const PlannedEntry& planned, std::size_t index,
                                     ByteSpan bytes);
  std::unique_ptr<State> state_;
};

// Writes the tail of the archive `token` names and publishes it: `__DIGESTS` from the receipts
// (plan with digests), `__SIGNATURE` signed by `key` (needs digests), `__MODEL_PROTO`, the
// central directory and the end records, then renames it into place (durable as
// OutputFileOptions said at begin). `model` refers to the planned entries as an ArchiveWriter's
// model does (PartsPlan::ref), checked as ArchiveWriter::finish checks it; its inline tensors
// are externalized after the planned ones, as that finish does, by `save_options` (threshold,
// dedupe, externalize_sparse; alignment and digests are the plan's).
// Errors, with nothing published and the temporary kept (abort_parts removes it):
// Error(kInvalidArgument) for a receipt missing, given twice, of another archive or plan, or
// disagreeing with the plan (entries, sizes, a digest missing), naming the part; those of
// ArchiveWriter::finish.
void finish_parts(ByteSpan token, const ModelProto& model, std::span<const ByteSpan> receipts,
                  const std::optional<PrivateKey>& key = std::nullopt,
                  const SaveOptions& save_options = {});

// Removes the temporary `token` names; nothing is published. Removing one already gone is no
// error (abort after a failed or a killed finish is safe). Error(kCorrupt) for a bad token.
void abort_parts(ByteSpan token);

}  // namespace onnxzip

#endif  // ONNXZIP_PARTS_H_
