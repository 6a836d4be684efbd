// Editing the model of an .onnxz archive in place: a new `__MODEL_PROTO` (other metadata, a
// changed graph) without moving or rewriting a payload byte. The format puts the model entry last
// for this (spec §2.4): only the model entry, the central directory and the end records are
// rewritten, so an edit costs O(model + central directory), whatever the weights weigh.
//
// An edit waits for readers' shared lock and for another edit (EditOptions::wait), and edits
// only the file its path names once locked (spec §9.6).
// The rest of its contract and the reasons: HACKING.md, "Header notes", edit.h.
#ifndef ONNXZIP_EDIT_H_
#define ONNXZIP_EDIT_H_

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "onnxzip/integrity.h"
#include "onnxzip/onnx_model.h"
#include "onnxzip/output_options.h"
#include "onnxzip/progress.h"
#include "onnxzip/read_limits.h"
#include "onnxzip/s3_options.h"

namespace onnxzip {

struct EditOptions {
  // When the new model refers to no tensor in some payload entries: false (the default) refuses
  // the edit; true rewrites the archive without them (like save(): to a temporary file renamed
  // over the archive, the payloads copied, O(archive)). An archive whose every payload entry is
  // still referred to is edited in place either way.
  bool compact = false;
  // How the archive is written (output_options.h); both default to true here, unlike for the
  // writers of new files, because an edit changes the user's only copy where it is:
  //   durable: fdatasync after the two writes of the edit that must reach the disk before the
  //     next (two flushes of a few pages each, spec §9.6), so that a power loss, not only a
  //     crash, leaves the old or the new model, and the new one once replace_model returns.
  //     Without, a power loss can leave neither: the file system may write the truncation before
  //     the bytes it keeps, and nothing is left to write the archive again from. false saves the
  //     flushes when the archive can be rebuilt anyway.
  //   follow_symlinks: an archive reached through a symbolic link is edited where it is, as an
  //     editor saves through a link. false refuses a link at `archive` (Error(kInvalidArgument)).
  // Set the fields (options.output.durable = false): an initializer `.output = {...}` starts from
  // OutputFileOptions' own defaults, false for both.
  OutputFileOptions output{.durable = true, .follow_symlinks = true};
  // Called as the model entry (and, when compacting, the payloads) reach the file (progress.h).
  ProgressCallback progress = nullptr;
  // Limits for reading the archive.
  ReadLimits limits{};
  // An archive with `__DIGESTS` (spec §12) gets it rewritten with the new model's digest (no
  // other entry is hashed again), and its `__SIGNATURE` signed anew with this key; without a
  // key the signature is removed (EditResult::signature_removed), never left untrue. A key also
  // signs an archive that had digests but no signature. A compaction removes both entries.
  std::optional<PrivateKey> signing_key{};
  IntegrityLimits integrity{};
  // How long the edit waits for the file's lock while other processes hold it (readers briefly,
  // another edit for as long as it takes) before it gives up (Error(kIo) "locked by another
  // process"). The default outlasts any reader's hold.
  std::chrono::milliseconds wait{kDefaultEditWait};
  // An archive named s3://bucket/key (edited in its bucket): credentials, profile, region and
  // endpoint that override the environment's and ~/.aws's (s3_options.h); the part settings and
  // `overwrite` do not apply (the edit uploads the new tail in parts of its own, replacing the
  // object only while it is the one read).
  S3Options s3{};
};

struct EditResult {
  bool compacted = false;                    // The archive was rewritten (EditOptions::compact).
  std::vector<std::string> dropped_entries;  // Entries a compaction left out, in file order.
  std::uint64_t model_offset = 0;            // Local header offset of the new `__MODEL_PROTO`.
  std::uint64_t model_size = 0;              // Its bytes (the serialized model).
  std::uint64_t file_size = 0;               // The archive's size afterwards.
  bool digests_updated = false;              // `__DIGESTS` was rewritten for the new model.
  bool signed_again = false;                 // `__SIGNATURE` was written with signing_key.
  bool signature_removed = false;            // `__SIGNATURE` went (no key, or a compaction).
  bool digests_removed = false;              // `__DIGESTS` went (a compaction).
  // In a bucket: the object was uploaded whole, its prefix read and sent again -- one under the
  // 5 MiB a part must have cannot be copied inside the store (spec §9.9).
  bool object_rewritten = false;
};

// Replaces the model of the archive at `archive` by `model`. The model is checked against the
// archive's entries exactly as ArchiveWriter::finish() checks a model against the entries added
// to it: every EXTERNAL tensor names a payload entry of the archive (no `__` name, not the model
// entry), carries no payload, has a fixed-size data type whose dims x element size equals the
// entry's size, and has no external_data key but location, length (equal to that size) and an
// offset of "0"; and every payload entry is referred to (see EditOptions::compact). References
// are written in the canonical form of spec §7.2. Inline tensors stay inline whatever their size
// (an edit adds no entry; repack or save() externalizes them). Every payload entry keeps its
// name, offset and bytes, and every entry other than `__MODEL_PROTO` its local header and central
// record, byte for byte; so does the archive comment. `__MODEL_PROTO` is written as save()
// writes it, aligned to the alignment the archive's 0xD935 records declare (64 when none does).
// The old model need not parse: an edit can replace a broken one. An archive an edit left
// interrupted is edited like any other (the interrupted edit's bytes go).
//
// The edit reads the end records, the central directory (the ZIP directory) and the local
// headers of the entries it rewrites and of the one before them, with pread, never mapping the
// file: not those of the entries it leaves alone. Its cost stays that of the tail, and a fault in
// another entry's local header, which the edit neither causes nor hides, is left to readers and
// verify() to report (compact reads and checks them all).
//
// Errors (the archive is then unchanged): the ZipReader's for a broken ZIP; Error(kCorrupt) when
// `__MODEL_PROTO` is missing or not last (spec §9.4 item 1); Error(kInvalidArgument) naming the
// tensor and the entry for a reference breaking the rule above, and naming the entries no tensor
// refers to (without compact); Error(kIo) when the file cannot be opened for writing, another
// edit holds it (after EditOptions::wait), the space the edit may take cannot be reserved, or a
// write fails -- the message then says whether the file holds the old model or the new one;
// Error(kChanged) when files renamed over the path kept it from naming the file the edit locked.
//
// `archive` may be an object in a bucket, "s3://bucket/key" (s3.h: credentials, region and
// endpoint as the AWS tools take them). The object is edited inside the store, with the result a
// local edit of the same bytes gives, byte for byte: its tail is read (the open's suffix GET),
// and a multipart upload composes the new object from its unchanged prefix, copied by the store
// (UploadPartCopy, conditional on the ETag read), and the new tail uploaded; its Complete is
// conditional on that ETag too, so the edit is a compare-and-swap. A prefix under 5 MiB cannot
// be a copied part: it is read and uploaded with the tail (EditResult::object_rewritten). Spec
// §9.9 says why and what each store supports. No lock, no wait, no durable: the store's Complete
// is atomic. Errors there: Error(kChanged) naming s3://bucket/key when another client wrote the
// object since it was read (nothing written, the upload aborted: edit it again);
// Error(kUnsupported) for compact (it rewrites every entry) and for a store that gave no ETag;
// the store's refusals (s3.h).
EditResult replace_model(const std::filesystem::path& archive, const ModelProto& model,
                         const EditOptions& options = {});

// Reads the archive's own model (parsed into owned memory), lets `change` edit it, and replaces it
// as replace_model does, all under one open and one lock of the file: the ZIP is read once (not
// once to read the model and again to replace it), and no other edit can slip in between the
// read and the write and be lost. Errors: replace_model's, a model that does not parse, and
// whatever `change` throws (the archive is then unchanged).
EditResult edit_model(const std::filesystem::path& archive,
                      const std::function<void(ModelProto&)>& change,
                      const EditOptions& options = {});

// Changes the model's properties -- every field but graph, training_info and functions:
// metadata_props, producer_name and producer_version, doc_string, domain, model_version,
// ir_version, opset_import, configuration -- as edit_model does, without building or rewriting
// the graph. `change` receives the model without those three fields and must not give it any
// (Error(kInvalidArgument) otherwise: edit_model changes them). They are kept byte for byte, as
// another writer encoded them; their tensors are found by a walk of their bytes and checked as
// replace_model checks a model, and whatever the walk cannot vouch for -- a fault in a
// reference (reported as edit_model reports it), a reference to rewrite in canonical form, bytes
// it does not take -- has the edit parse the model whole and go on as edit_model (the whole model
// is then written anew); which way it goes is decided on the stored bytes, before `change` runs.
// The bytes the walk passes over (node names, types, shapes...) are not checked: a property edit
// keeps them as they were, and verify() checks them. Costs O(central directory + properties +
// tensors), not O(model): the metadata edits of the CLI.
EditResult edit_model_properties(const std::filesystem::path& archive,
                                 const std::function<void(ModelProto&)>& change,
                                 const EditOptions& options = {});

}  // namespace onnxzip

#endif  // ONNXZIP_EDIT_H_
