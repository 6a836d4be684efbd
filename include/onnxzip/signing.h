// Digests and signatures inside an .onnxz archive (spec §12): `sign_archive` adds or replaces
// `__DIGESTS` (the SHA-256 of every other entry) and `__SIGNATURE` (a signature of `__DIGESTS`)
// in place, and `read_integrity_info` says what an archive holds. verify() (archive.h) checks
// them; the edits (edit.h) keep them true. The bytes of both entries are integrity.h's. Any
// module above the archive layer may use this header.
#ifndef ONNXZIP_SIGNING_H_
#define ONNXZIP_SIGNING_H_

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "onnxzip/integrity.h"
#include "onnxzip/output_options.h"
#include "onnxzip/progress.h"
#include "onnxzip/read_limits.h"
#include "onnxzip/s3_options.h"

namespace onnxzip {

class ZipDirectory;  // Internal (include/onnxzip/internal/zip_reader.h).

struct SignOptions {
  // The key that signs `__DIGESTS`; none writes `__DIGESTS` alone and removes a `__SIGNATURE`
  // the archive had (it would no longer verify).
  std::optional<PrivateKey> key{};
  // As EditOptions::output: signing rewrites the user's only copy in place, so it is durable (a
  // power loss leaves the archive before or after the signing) and follows a symbolic link.
  OutputFileOptions output{.durable = true, .follow_symlinks = true};
  // Called as the entries are hashed (progress.h); `total` is their byte count.
  ProgressCallback progress = nullptr;
  ReadLimits limits{};
  // As EditOptions::wait: how long signing waits for the file's lock.
  std::chrono::milliseconds wait{kDefaultEditWait};
  // As EditOptions::s3: how an archive named s3://bucket/key is reached.
  S3Options s3{};
};

struct SignResult {
  std::uint64_t entries = 0;       // Entries listed in `__DIGESTS`.
  std::string key_id;              // The signing key's id; "" without a key.
  bool signature_removed = false;  // A `__SIGNATURE` went (no key given).
  std::uint64_t file_size = 0;     // The archive's size afterwards.
  // In a bucket: every entry was read (ranged GETs) to be hashed, the object having no
  // `__DIGESTS` in its place; with one, its statement is signed as it stands (spec §9.9).
  bool entries_read = false;
};

// Hashes every entry of the archive but `__DIGESTS` and `__SIGNATURE` (checking each CRC-32 on
// the way), then writes `__DIGESTS`, and `__SIGNATURE` with a key, directly before
// `__MODEL_PROTO` (spec §12.1), replacing those the archive had. The rewrite is the crash-safe
// in-place edit of spec §9.6: no payload byte moves, and at every instant the file is the
// archive before or after the signing. Errors (the archive unchanged): those of the ZIP reader
// and of an edit (edit.h: missing or misplaced model, a lock held, I/O); Error(kCorrupt) naming
// the entry whose CRC-32 is wrong; Error(kUnsupported) when integrity entries of the archive are
// not directly before the model (another tool wrote them: repack the archive first).
//
// `archive` may be "s3://bucket/key": the new tail is uploaded after the prefix copied inside the
// store, as an edit in a bucket does (edit.h). An object with `__DIGESTS` in its place gets that
// statement signed as it stands (as an edit with a key signs it; only the model is hashed again),
// not every entry hashed: that would read the whole object. Without one, every entry is read by
// ranged GETs to be hashed (SignResult::entries_read).
SignResult sign_archive(const std::filesystem::path& archive, const SignOptions& options = {});

// What an archive's integrity entries are, for `onnxzip info`: read, not verified.
struct IntegrityInfo {
  bool has_digests = false;
  bool has_signature = false;
  std::uint64_t digested_entries = 0;  // Resources in `__DIGESTS` (when it parses).
  std::string key_id;                  // The signing key's id the bundle names (when it parses).
  std::string problem;                 // Why an entry present does not parse ("" when both do).
};

// Never throws for the archive's content (a problem goes into `problem`).
IntegrityInfo read_integrity_info(const ZipDirectory& zip, const IntegrityLimits& limits = {});

}  // namespace onnxzip

#endif  // ONNXZIP_SIGNING_H_
