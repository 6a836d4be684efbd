// Private to the archive layer: the integrity entries of spec §12 in an archive -- where they
// are, the digest of an entry, their check for verify() and their rewrite for an edit. The
// bytes of the entries are the integrity layer's (integrity.h).
#ifndef ONNXZIP_SRC_INTEGRITY_ENTRIES_H_
#define ONNXZIP_SRC_INTEGRITY_ENTRIES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/integrity.h"
#include "onnxzip/internal/zip_reader.h"
#include "progress_meter.h"

namespace onnxzip::archive_detail {

// `__DIGESTS` or `__SIGNATURE`: the entries `__DIGESTS` does not list.
bool is_integrity_entry(std::string_view name) noexcept;

// Where the integrity entries are. Spec §12.1 puts them directly before `__MODEL_PROTO`,
// `__DIGESTS` first, so that an edit rewrites them with the model.
struct IntegrityPlace {
  const ZipEntry* digests = nullptr;
  const ZipEntry* signature = nullptr;
  // The first entry of the tail an edit rewrites: the first integrity entry, else the model.
  std::size_t tail_start = 0;
  std::string misplaced;  // Why they are not where §12.1 puts them; "" when they are.
};
IntegrityPlace find_integrity_entries(const ZipDirectory& zip, const ZipEntry& model_entry);

// The SHA-256 of the entry's bytes with its size and CRC-32, the CRC-32 checked as they are
// read (ZipDirectory::stream); `meter` advances with them when given.
EntryDigest digest_entry(const ZipDirectory& zip, const ZipEntry& entry,
                         detail::ProgressMeter* meter = nullptr);

// An integrity entry's bytes, refused unread (Error(kLimitExceeded)) beyond `limit`.
TensorBytes integrity_entry_bytes(const ZipDirectory& zip, const ZipEntry& entry,
                                  std::uint64_t limit, std::string_view limit_name);

// The statement of the `__DIGESTS` entry `entry` (decode_digests, after integrity_entry_bytes
// with limits.max_digests_size), its bytes kept in `keep_bytes` when given.
DigestStatement read_digests(const ZipDirectory& zip, const ZipEntry& entry,
                             const IntegrityLimits& limits, TensorBytes* keep_bytes = nullptr);

// The SHA-256 of each entry's bytes, by ZipEntry::index: nullopt for an entry not hashed (not
// read whole: a wrong CRC-32 or a bad stream).
using EntryHashes = std::vector<std::optional<Sha256Digest>>;

// verify()'s checks of spec §12.5, each problem reported through `add` (severity, kind, entry,
// offset, place, problem): every digest against `hashes` (the entries' bytes, which verify()
// reads once for their CRC-32s and SHA-256s; unused without options.check_crc), the list against
// the archive's entries, and with options.public_key the signature. Returns the two statuses.
using FindingSink = std::function<void(VerifyFinding::Severity severity, VerifyFinding::Kind kind,
                                       std::string entry, std::uint64_t offset, ErrorContext place,
                                       std::string problem)>;
struct IntegrityCheck {
  IntegrityStatus digests = IntegrityStatus::kAbsent;
  IntegrityStatus signature = IntegrityStatus::kAbsent;
  std::string signature_key_id;  // The key id `__SIGNATURE` names, when it parses.
};
IntegrityCheck check_integrity(const ZipReader& zip, const ZipEntry& model_entry,
                               const VerifyOptions& options, const EntryHashes& hashes,
                               const FindingSink& add);

// What an edit writes before its new model (spec §12.4): `old_statement` (the archive's
// `__DIGESTS`, read_digests of place.digests) with the model's digest replaced, and
// `__SIGNATURE` signed anew with `key`, or none (`signature_removed` when the archive had one);
// without `old_statement` (no `__DIGESTS`), neither (and a signature goes). Nothing but the model
// is hashed. Error(kCorrupt) when the statement does not list the model.
struct IntegrityRewrite {
  std::string digests;
  std::string signature;  // "" for none.
  bool signature_removed = false;
};
IntegrityRewrite rewrite_for_model(const ZipDirectory& zip, const IntegrityPlace& place,
                                   std::optional<DigestStatement> old_statement, ByteSpan model,
                                   std::uint32_t model_crc, const std::optional<PrivateKey>& key);

}  // namespace onnxzip::archive_detail

#endif  // ONNXZIP_SRC_INTEGRITY_ENTRIES_H_
