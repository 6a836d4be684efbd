// The integrity entries in an archive (spec §12): where they sit, the digests verify() checks,
// their rewrite by an edit, sign_archive() and what `info` shows.
#include <map>
#include <string>
#include <utility>

#include "archive_internal.h"
#include "crc32.h"
#include "integrity_entries.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/signing.h"

namespace onnxzip::archive_detail {

using Severity = VerifyFinding::Severity;

bool is_integrity_entry(std::string_view name) noexcept {
  return name == kDigestsEntryName || name == kSignatureEntryName;
}

IntegrityPlace find_integrity_entries(const ZipReader& zip, const ZipEntry& model_entry) {
  IntegrityPlace place;
  place.digests = zip.find(kDigestsEntryName);
  place.signature = zip.find(kSignatureEntryName);
  place.tail_start = model_entry.index;
  // Directly before the model, in file order: [__DIGESTS] [__SIGNATURE] __MODEL_PROTO.
  std::size_t expected = model_entry.index;
  for (const ZipEntry* entry : {place.signature, place.digests}) {
    if (entry == nullptr) continue;
    if (expected == 0 || entry->index != expected - 1) {
      place.misplaced =
          "entry " + quote(entry->name) + " is not where spec §12.1 puts it (directly before " +
          (entry == place.digests && place.signature != nullptr ? quote(kSignatureEntryName)
                                                                : quote(kModelEntryName)) +
          ")";
      return place;
    }
    expected = entry->index;
  }
  place.tail_start = expected;
  return place;
}

EntryDigest digest_entry(const ZipReader& zip, const ZipEntry& entry,
                         detail::ProgressMeter* meter) {
  Sha256 hasher;
  zip.stream(entry, [&](ByteSpan piece) {
    hasher.update(piece);
    if (meter != nullptr) meter->advance(piece.size());
  });
  return EntryDigest{entry.name, hasher.finish(), entry.size, entry.crc32};
}

TensorBytes integrity_entry_bytes(const ZipReader& zip, const ZipEntry& entry, std::uint64_t limit,
                                  std::string_view limit_name) {
  if (entry.size > limit) {
    throw Error(ErrorCode::kLimitExceeded,
                ErrorContext{.file = zip.source_name(),
                             .entry = "entry " + quote(entry.name),
                             .entry_name = entry.name},
                std::to_string(entry.size) + " bytes, more than the limit of " +
                    std::to_string(limit) + " (" + std::string(limit_name) + ")");
  }
  return zip.verified_data(entry);
}

DigestStatement read_digests(const ZipReader& zip, const ZipEntry& entry,
                             const IntegrityLimits& limits, TensorBytes* keep_bytes) {
  TensorBytes bytes = integrity_entry_bytes(zip, entry, limits.max_digests_size,
                                            "IntegrityLimits::max_digests_size");
  DigestStatement statement = decode_digests(bytes.view(), limits, zip.source_name());
  if (keep_bytes != nullptr) *keep_bytes = std::move(bytes);
  return statement;
}

namespace {

// A finding's place in the archive; verify() names the file.
ErrorContext entry_place(std::string_view name) {
  return {.entry = "entry " + quote(name), .entry_name = std::string(name)};
}

// `error`'s place and problem, naming the entry `name` when the error did not.
std::pair<ErrorContext, std::string> error_finding(const Error& error, std::string_view name) {
  const Error named = error.with_context(entry_place(name));
  return {named.context(), named.problem()};
}

// What is wrong with `entry`'s line of `__DIGESTS` ("" when nothing), taking it from `listed`:
// not listed, another size, or (when its bytes were read) another SHA-256.
std::string digest_problem(const ZipEntry& entry,
                           std::map<std::string_view, const EntryDigest*>& listed, bool read,
                           const EntryHashes& hashes) {
  const auto found = listed.find(entry.name);
  if (found == listed.end()) return "not listed in __DIGESTS (spec §12.2)";
  const EntryDigest& expected = *found->second;
  listed.erase(found);
  if (entry.size != expected.size) {
    return std::to_string(entry.size) + " bytes, __DIGESTS says " + std::to_string(expected.size) +
           " (spec §12.5)";
  }
  // Not read (the caller asked for no payload to be read), or not hashed: a wrong CRC-32 or a
  // bad stream, which the CRC check reports.
  if (!read || entry.index >= hashes.size() || !hashes[entry.index]) return "";
  const Sha256Digest& actual = *hashes[entry.index];
  if (actual == expected.sha256) return "";
  return "its SHA-256 is " + to_hex(actual) + ", __DIGESTS says " + to_hex(expected.sha256) +
         ": its bytes are not those that were digested (spec §12.5)";
}

}  // namespace

namespace {

// The digests' checks: the list against the archive's entries, each digest against `hashes`.
// Returns the status of `__DIGESTS`; its bytes are kept in `digests_bytes` for the signature.
IntegrityStatus check_digests(const ZipReader& zip, const ZipEntry& digests,
                              const VerifyOptions& options, const EntryHashes& hashes,
                              const FindingSink& add, TensorBytes& digests_bytes) {
  const auto fail = [&](std::string entry, std::uint64_t offset, ErrorContext where,
                        std::string problem) {
    add(Severity::kError, VerifyFinding::Kind::kDigest, std::move(entry), offset, std::move(where),
        std::move(problem));
  };
  DigestStatement statement;
  try {
    statement = read_digests(zip, digests, options.integrity, &digests_bytes);
  } catch (const Error& error) {
    auto [where, problem] = error_finding(error, kDigestsEntryName);
    fail(digests.name, digests.data_offset, std::move(where), std::move(problem));
    return IntegrityStatus::kFailed;
  }
  bool failed = false;
  std::map<std::string_view, const EntryDigest*> listed;
  for (const EntryDigest& entry : statement.entries) listed.emplace(entry.name, &entry);
  for (const ZipEntry& entry : zip.entries()) {
    if (is_integrity_entry(entry.name)) continue;
    // Not hashed, though read: its CRC-32 finding says why, and its digest is not verified.
    if (options.check_crc && (entry.index >= hashes.size() || !hashes[entry.index])) {
      failed = true;
    }
    const std::string problem = digest_problem(entry, listed, options.check_crc, hashes);
    if (problem.empty()) continue;
    failed = true;
    fail(entry.name, entry.data_offset, entry_place(entry.name), problem);
  }
  for (const auto& [name, entry] : listed) {
    failed = true;
    fail(std::string(kDigestsEntryName), digests.data_offset, entry_place(kDigestsEntryName),
         "lists entry " + quote(name) + ", which the archive does not hold (spec §12.2)");
  }
  if (failed) return IntegrityStatus::kFailed;
  return options.check_crc ? IntegrityStatus::kVerified : IntegrityStatus::kUnchecked;
}

// `__SIGNATURE` parsed and, with options.public_key, verified over `digests_bytes`.
IntegrityStatus check_signature(const ZipReader& zip, const ZipEntry& signature,
                                const VerifyOptions& options, ByteSpan digests_bytes,
                                const FindingSink& add, std::string& key_id) {
  const auto fail = [&](ErrorContext where, std::string problem) {
    add(Severity::kError, VerifyFinding::Kind::kSignature, signature.name, signature.data_offset,
        std::move(where), std::move(problem));
  };
  try {
    const TensorBytes bytes =
        integrity_entry_bytes(zip, signature, options.integrity.max_signature_size,
                              "IntegrityLimits::max_signature_size");
    const SignatureBundle bundle =
        decode_signature(bytes.view(), options.integrity, zip.source_name());
    key_id = bundle.key_hint;
    if (!options.public_key) return IntegrityStatus::kUnchecked;
    const std::string problem = signature_problem(bundle, digests_bytes, *options.public_key);
    if (problem.empty()) return IntegrityStatus::kVerified;
    fail(entry_place(kSignatureEntryName), problem + " (spec §12.5)");
    return bundle.key_hint != options.public_key->key_id() ? IntegrityStatus::kOtherKey
                                                           : IntegrityStatus::kFailed;
  } catch (const Error& error) {
    auto [where, problem] = error_finding(error, kSignatureEntryName);
    fail(std::move(where), std::move(problem));
    return IntegrityStatus::kFailed;
  }
}

}  // namespace

IntegrityCheck check_integrity(const ZipReader& zip, const ZipEntry& model_entry,
                               const VerifyOptions& options, const EntryHashes& hashes,
                               const FindingSink& add) {
  using Kind = VerifyFinding::Kind;
  IntegrityCheck result;
  const IntegrityPlace place = find_integrity_entries(zip, model_entry);
  const std::string required =
      options.public_key
          ? " (a signature by key " + options.public_key->key_id() + " was asked for)"
          : "";
  if (place.digests == nullptr) {
    if (place.signature != nullptr) {
      result.signature = IntegrityStatus::kFailed;
      add(Severity::kError, Kind::kSignature, std::string(kSignatureEntryName),
          place.signature->local_header_offset, entry_place(kSignatureEntryName),
          "a signature, but no __DIGESTS entry (spec §12.1 item 1)");
    } else if (options.public_key) {
      add(Severity::kError, Kind::kSignature, "", 0, {},
          "no __DIGESTS and no __SIGNATURE entry" + required);
    }
    return result;
  }
  if (!place.misplaced.empty()) {
    add(Severity::kWarning, Kind::kLayout, place.digests->name, place.digests->local_header_offset,
        {}, place.misplaced);
  }
  TensorBytes digests_bytes;
  result.digests = check_digests(zip, *place.digests, options, hashes, add, digests_bytes);
  if (place.signature == nullptr) {
    if (options.public_key) {
      add(Severity::kError, Kind::kSignature, "", 0, {}, "no __SIGNATURE entry" + required);
    }
    return result;
  }
  // A signature over digests that do not parse signs nothing checkable.
  const bool unparsed = result.digests == IntegrityStatus::kFailed && digests_bytes.view().empty();
  result.signature = unparsed && options.public_key ? IntegrityStatus::kFailed
                     : unparsed
                         ? IntegrityStatus::kUnchecked
                         : check_signature(zip, *place.signature, options, digests_bytes.view(),
                                           add, result.signature_key_id);
  return result;
}

IntegrityRewrite rewrite_for_model(const ZipReader& zip, const IntegrityPlace& place,
                                   std::optional<DigestStatement> old_statement, ByteSpan model,
                                   std::uint32_t model_crc, const std::optional<PrivateKey>& key) {
  IntegrityRewrite rewrite;
  if (!old_statement) {
    // A signature without digests signs nothing this archive can check: it goes.
    rewrite.signature_removed = place.signature != nullptr;
    return rewrite;
  }
  DigestStatement& statement = *old_statement;
  bool found = false;
  for (EntryDigest& entry : statement.entries) {
    if (entry.name != kModelEntryName) continue;
    entry.sha256 = Sha256::of(model);
    entry.size = model.size();
    entry.crc32 = model_crc;
    found = true;
  }
  if (!found) {
    throw Error(ErrorCode::kCorrupt,
                ErrorContext{.file = zip.source_name(),
                             .entry = "entry " + quote(kDigestsEntryName),
                             .entry_name = std::string(kDigestsEntryName)},
                "does not list __MODEL_PROTO, so an edit cannot keep it true; sign the archive "
                "again");
  }
  rewrite.digests = encode_digests(statement.model_name, std::move(statement.entries));
  if (key) {
    rewrite.signature =
        encode_signature(ByteSpan(reinterpret_cast<const std::uint8_t*>(rewrite.digests.data()),
                                  rewrite.digests.size()),
                         *key);
  } else {
    rewrite.signature_removed = place.signature != nullptr;
  }
  return rewrite;
}

}  // namespace onnxzip::archive_detail

namespace onnxzip {

IntegrityInfo read_integrity_info(const ZipReader& zip, const IntegrityLimits& limits) {
  IntegrityInfo info;
  const ZipEntry* digests = zip.find(kDigestsEntryName);
  const ZipEntry* signature = zip.find(kSignatureEntryName);
  info.has_digests = digests != nullptr;
  info.has_signature = signature != nullptr;
  try {
    if (digests != nullptr) {
      info.digested_entries = archive_detail::read_digests(zip, *digests, limits).entries.size();
    }
    if (signature != nullptr) {
      const TensorBytes bytes = archive_detail::integrity_entry_bytes(
          zip, *signature, limits.max_signature_size, "IntegrityLimits::max_signature_size");
      info.key_id = decode_signature(bytes.view(), limits, zip.source_name()).key_hint;
    }
  } catch (const Error& error) {
    info.problem = error.message();
  }
  return info;
}

}  // namespace onnxzip
