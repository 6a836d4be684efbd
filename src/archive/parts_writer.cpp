// Writing an archive in parts (parts.h, spec §13): the token and receipt records, begin_parts,
// the part writers' positioned writes, and abort_parts. finish_parts is parts_finish.cpp.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "archive_internal.h"
#include "check.h"
#include "crc32.h"
#include "onnxzip/parts.h"
#include "output_file.h"
#include "parts_bucket.h"
#include "parts_codec.h"
#include "posix_file.h"
#include "zip_layout.h"

namespace onnxzip {

using archive_detail::PartReceipt;
using archive_detail::PartsDecoder;
using archive_detail::PartsEncoder;
using archive_detail::PartsToken;
using archive_detail::quote;
using archive_detail::UploadedPiece;

namespace {

constexpr std::string_view kTokenRecord = "parts token";
constexpr std::string_view kReceiptRecord = "parts receipt";
constexpr std::uint8_t kTokenKindFile = 1;
constexpr std::uint8_t kTokenKindBucket = 2;
constexpr std::uint8_t kTokenDurable = 1;
constexpr std::uint8_t kTokenFollowSymlinks = 2;
// A payload is hashed and written in pieces of this size, so each piece is still in the cache
// when the CRC-32, the SHA-256 and the write go over it.
constexpr std::size_t kPieceBytes = std::size_t{4} << 20;

// The layout one writer gives entry `index` of `plan`: its gap starts where the entry before ends.
zip::EntryLayout layout_of(const PartsPlan& plan, std::size_t index) {
  const std::span<const PlannedEntry> entries = plan.entries();
  const std::uint64_t start = index == 0 ? 0 : entries[index - 1].offset + entries[index - 1].size;
  const PlannedEntry& planned = entries[index];
  zip::EntryLayout layout =
      zip::plan_entry(start, planned.entry.size(), planned.size, plan.alignment());
  ONNXZIP_DCHECK(layout.data_offset == planned.offset);
  ONNXZIP_DCHECK(layout.local_header_offset == planned.local_header_offset);
  return layout;
}

void write_fully(int fd, ByteSpan bytes, std::uint64_t offset, const std::string& file) {
  while (!bytes.empty()) {
    const ssize_t n = ::pwrite(fd, bytes.data(), std::min<std::size_t>(bytes.size(), 1u << 30),
                               static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw Error(ErrorCode::kIo, {.file = file},
                  "write at offset " + std::to_string(offset) + " failed: " + std::strerror(errno));
    }
    bytes = bytes.subspan(static_cast<std::size_t>(n));
    offset += static_cast<std::uint64_t>(n);
  }
}

}  // namespace

std::vector<std::uint8_t> archive_detail::encode_token(const PartsToken& token) {
  PartsEncoder out(kTokenMagic);
  const bool bucket = !token.upload_id.empty();
  out.u8(bucket ? kTokenKindBucket : kTokenKindFile);
  out.u8(static_cast<std::uint8_t>((token.durable ? kTokenDurable : 0) |
                                   (token.follow_symlinks ? kTokenFollowSymlinks : 0)));
  out.text(token.destination);
  out.text(bucket ? token.upload_id : token.temporary);
  out.blob(token.plan);
  return out.take();
}

PartsToken archive_detail::decode_token(ByteSpan bytes) {
  PartsDecoder in(bytes, kTokenMagic, kTokenRecord);
  PartsToken token;
  const std::uint64_t kind_at = in.offset();
  const std::uint8_t kind = in.u8("kind");
  if (kind != kTokenKindFile && kind != kTokenKindBucket) {
    in.fail(kind_at, "kind " + std::to_string(kind) + " is neither a file (1) nor a bucket (2)");
  }
  const std::uint64_t flags_at = in.offset();
  const std::uint8_t flags = in.u8("flags");
  if ((flags & ~(kTokenDurable | kTokenFollowSymlinks)) != 0) {
    in.fail(flags_at, "flags " + std::to_string(flags) + " has unknown bits");
  }
  token.durable = (flags & kTokenDurable) != 0;
  token.follow_symlinks = (flags & kTokenFollowSymlinks) != 0;
  if (kind == kTokenKindFile) {
    for (std::string* path : {&token.destination, &token.temporary}) {
      const std::uint64_t at = in.offset();
      *path = in.text(path == &token.destination ? "destination" : "temporary");
      if (path->empty() || path->front() != '/' || path->find('\0') != std::string::npos) {
        in.fail(at, "path " + quote(*path) + " is not an absolute path");
      }
    }
  } else {
    const std::uint64_t at = in.offset();
    token.destination = in.text("destination");
    if (!token.destination.starts_with("s3://")) {
      in.fail(at, "destination " + quote(token.destination) + " is not an s3:// URL");
    }
    token.upload_id = in.text("upload id");
    if (token.upload_id.empty()) in.fail(at, "the upload id is empty");
  }
  const ByteSpan plan = in.blob("plan");
  token.plan.assign(plan.begin(), plan.end());
  in.expect_end();
  token.id = Sha256::of(bytes);
  return token;
}

std::vector<std::uint8_t> archive_detail::encode_receipt(const PartReceipt& receipt) {
  PartsEncoder out(kReceiptMagic);
  out.digest(receipt.token_id);
  out.u32(receipt.part);
  out.u8(receipt.hashed ? 1 : 0);
  out.u32(static_cast<std::uint32_t>(receipt.entries.size()));
  for (const EntryDigest& entry : receipt.entries) {
    out.text(entry.name);
    out.u64(entry.size);
    out.u32(entry.crc32);
    if (receipt.hashed) out.digest(entry.sha256);
  }
  out.u32(static_cast<std::uint32_t>(receipt.pieces.size()));
  for (const UploadedPiece& piece : receipt.pieces) {
    out.u32(piece.number);
    out.text(piece.etag);
    out.u32(piece.crc32);
  }
  return out.take();
}

PartReceipt archive_detail::decode_receipt(ByteSpan bytes) {
  PartsDecoder in(bytes, kReceiptMagic, kReceiptRecord);
  PartReceipt receipt;
  receipt.token_id = in.digest("token id");
  receipt.part = in.u32("part");
  const std::uint64_t hashed_at = in.offset();
  const std::uint8_t hashed = in.u8("hashed");
  if (hashed > 1) in.fail(hashed_at, "hashed " + std::to_string(hashed) + " is not 0 or 1");
  receipt.hashed = hashed == 1;
  // An entry takes at least its name length, size and CRC-32.
  receipt.entries.resize(in.count("entry count", UINT32_MAX, 16));
  for (EntryDigest& entry : receipt.entries) {
    entry.name = in.text("entry name");
    entry.size = in.u64("size");
    entry.crc32 = in.u32("crc32");
    if (receipt.hashed) entry.sha256 = in.digest("sha256");
  }
  // A piece takes at least its number, ETag length and CRC-32.
  receipt.pieces.resize(in.count("piece count", 10000, 12));
  for (UploadedPiece& piece : receipt.pieces) {
    piece.number = in.u32("piece number");
    piece.etag = in.text("etag");
    piece.crc32 = in.u32("piece crc32");
  }
  in.expect_end();
  return receipt;
}

std::vector<std::uint8_t> begin_parts(std::string_view target, const PartsPlan& plan,
                                      const OutputFileOptions& output) {
  if (target.starts_with("s3://")) {
    return archive_detail::begin_bucket_parts(std::string(target), plan);
  }
  const std::filesystem::path destination = std::filesystem::absolute(target);
  PartsToken token;
  token.destination = destination.string();
  token.temporary =
      AtomicOutputFile::make_shared_temporary(destination, output, plan.payload_end()).string();
  token.durable = output.durable;
  token.follow_symlinks = output.follow_symlinks;
  token.plan = plan.to_bytes();
  return archive_detail::encode_token(token);
}

void abort_parts(ByteSpan token_bytes) {
  const PartsToken token = archive_detail::decode_token(token_bytes);
  if (!token.upload_id.empty()) return archive_detail::abort_bucket_parts(token);
  if (::unlink(token.temporary.c_str()) != 0 && errno != ENOENT) {
    throw Error(ErrorCode::kIo, {.file = token.destination},
                "cannot remove the temporary " + token.temporary + ": " + std::strerror(errno));
  }
}

struct PartWriter::State {
  PartsToken token;
  PartsPlan plan;
  std::uint32_t part = 0;
  std::size_t first = 0;  // The part's first entry in plan.entries().
  detail::Fd fd;          // A file's.
  std::optional<archive_detail::BucketPieceWriter> pieces;  // A bucket's.
  std::vector<std::optional<EntryDigest>> written;          // By entry of the part.
};

PartWriter::PartWriter(ByteSpan token_bytes, std::uint32_t part) {
  PartsToken token = archive_detail::decode_token(token_bytes);
  PartsPlan plan = PartsPlan::from_bytes(token.plan);
  const std::span<const PlannedEntry> entries = plan.part(part);
  const std::size_t first = entries.empty() ? 0 : entries.data() - plan.entries().data();
  std::optional<archive_detail::BucketPieceWriter> pieces;
  if (!token.upload_id.empty()) pieces.emplace(token, plan, part);
  detail::Fd fd(pieces ? -1 : ::open(token.temporary.c_str(), O_WRONLY | O_CLOEXEC));
  if (!pieces && fd.get() < 0) {
    const int error = errno;
    throw Error(error == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                {.file = token.destination},
                "cannot open the temporary " + token.temporary + " (" + std::strerror(error) +
                    (error == ENOENT ? "; finished or aborted already?)" : ")"));
  }
  state_ = std::make_unique<State>(State{.token = std::move(token),
                                         .plan = std::move(plan),
                                         .part = part,
                                         .first = first,
                                         .fd = std::move(fd),
                                         .pieces = std::move(pieces),
                                         .written = {}});
  state_->written.resize(entries.size());
}

PartWriter::~PartWriter() = default;
PartWriter::PartWriter(PartWriter&& other) noexcept = default;
PartWriter& PartWriter::operator=(PartWriter&& other) noexcept = default;

const PartsPlan& PartWriter::plan() const noexcept { return state_->plan; }
std::uint32_t PartWriter::part() const noexcept { return state_->part; }

namespace {

// The gap and local header of entry `index` of `plan`, with its CRC-32.
std::vector<std::uint8_t> head_of(const PartsPlan& plan, std::size_t index, std::uint32_t crc) {
  const zip::EntryLayout layout = layout_of(plan, index);
  std::vector<std::uint8_t> head(layout.gap, 0);
  const std::vector<std::uint8_t> header =
      zip::encode_local_header(layout, plan.entries()[index].entry, crc, plan.alignment());
  head.insert(head.end(), header.begin(), header.end());
  ONNXZIP_DCHECK(layout.local_header_offset - layout.gap + head.size() == layout.data_offset);
  return head;
}

}  // namespace

// A bucket's bytes go out in file order: the payload is hashed first, then its head and the
// payload are streamed into the part's pieces.
EntryDigest PartWriter::write_to_bucket(State& state, const PlannedEntry& planned,
                                        std::size_t index, ByteSpan bytes) {
  const auto done =
      std::count_if(state.written.begin(), state.written.end(),
                    [](const std::optional<EntryDigest>& w) { return w.has_value(); });
  const std::size_t expected = state.first + static_cast<std::size_t>(done);
  if (index != expected) {
    throw Error(ErrorCode::kInvalidArgument,
                {.file = state.token.destination, .tensor = "tensor " + quote(planned.name)},
                "in a bucket a part writes its tensors in plan order; next is " +
                    quote(state.plan.entries()[expected].name));
  }
  std::optional<Sha256> hasher;
  if (state.plan.digests()) hasher.emplace();
  std::uint32_t crc = 0;
  for (std::size_t at = 0; at < bytes.size(); at += kPieceBytes) {
    const ByteSpan piece = bytes.subspan(at, std::min(kPieceBytes, bytes.size() - at));
    crc = crc32(piece, crc);
    if (hasher) hasher->update(piece);
  }
  state.pieces->write(head_of(state.plan, index, crc));
  state.pieces->write(bytes);
  return EntryDigest{.name = planned.entry,
                     .sha256 = hasher ? hasher->finish() : Sha256Digest{},
                     .size = planned.size,
                     .crc32 = crc};
}

void PartWriter::add_tensor(std::string_view name, ByteSpan bytes) {
  if (!state_) throw Error(ErrorCode::kBadState, "add_tensor on a moved-from PartWriter");
  State& state = *state_;
  const std::string label = "part " + std::to_string(state.part) + ": tensor " + quote(name);
  const PlannedEntry* planned = state.plan.find(name);
  if (planned == nullptr || planned->part != state.part) {
    throw Error(ErrorCode::kInvalidArgument, {.file = state.token.destination, .tensor = label},
                planned == nullptr ? "the plan has no such tensor"
                                   : "is planned for part " + std::to_string(planned->part));
  }
  const std::size_t index = static_cast<std::size_t>(planned - state.plan.entries().data());
  std::optional<EntryDigest>& written = state.written[index - state.first];
  if (written) {
    throw Error(ErrorCode::kInvalidArgument, {.file = state.token.destination, .tensor = label},
                "was written already");
  }
  if (bytes.size() != planned->size) {
    throw Error(ErrorCode::kInvalidArgument, {.file = state.token.destination, .tensor = label},
                std::to_string(bytes.size()) + " bytes given, but the plan has " +
                    std::to_string(planned->size) + " (dims x element size)");
  }
  if (state.pieces) {
    written = write_to_bucket(state, *planned, index, bytes);
    return;
  }
  // The payload first, piece by piece as it is hashed; the header once its CRC-32 is known.
  std::optional<Sha256> hasher;
  if (state.plan.digests()) hasher.emplace();
  std::uint32_t crc = 0;
  for (std::size_t done = 0; done < bytes.size(); done += kPieceBytes) {
    const ByteSpan piece = bytes.subspan(done, std::min(kPieceBytes, bytes.size() - done));
    crc = crc32(piece, crc);
    if (hasher) hasher->update(piece);
    write_fully(state.fd.get(), piece, planned->offset + done, state.token.temporary);
  }
  const std::vector<std::uint8_t> head = head_of(state.plan, index, crc);
  write_fully(state.fd.get(), head, planned->offset - head.size(), state.token.temporary);
  written = EntryDigest{.name = planned->entry,
                        .sha256 = hasher ? hasher->finish() : Sha256Digest{},
                        .size = planned->size,
                        .crc32 = crc};
}

std::vector<std::uint8_t> PartWriter::receipt() const {
  if (!state_) throw Error(ErrorCode::kBadState, "receipt on a moved-from PartWriter");
  const State& state = *state_;
  PartReceipt receipt{.token_id = state.token.id,
                      .part = state.part,
                      .hashed = state.plan.digests(),
                      .entries = {},
                      .pieces = {}};
  std::string missing;
  for (std::size_t i = 0; i < state.written.size(); ++i) {
    if (state.written[i]) {
      receipt.entries.push_back(*state.written[i]);
    } else {
      missing += (missing.empty() ? "" : ", ") + quote(state.plan.entries()[state.first + i].name);
    }
  }
  if (!missing.empty()) {
    throw Error(ErrorCode::kBadState, {.file = state.token.destination},
                "part " + std::to_string(state.part) + " has not written " + missing);
  }
  if (state.pieces) receipt.pieces = state.pieces->uploaded();
  // A writer on another host hands its bytes to the shared file system before it reports them.
  if (!state.pieces && state.token.durable && ::fdatasync(state.fd.get()) != 0) {
    throw Error(ErrorCode::kIo, {.file = state.token.destination},
                std::string("fdatasync of the temporary failed: ") + std::strerror(errno));
  }
  return archive_detail::encode_receipt(receipt);
}

}  // namespace onnxzip
