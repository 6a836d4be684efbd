// An archive written in parts into a bucket (parts_bucket.h, spec §13): one multipart upload;
// each writer's range cut into pieces the plan fixes, each piece one UploadPart; finish writes
// the tail as the file writer does (into a sparse local scratch file), uploads it as the last
// part and completes the upload.
#include "parts_bucket.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "archive_internal.h"
#include "check.h"
#include "crc32.h"
#include "output_file.h"
#include "posix_file.h"
#include "s3_client.h"
#include "s3_config.h"
#include "zip_layout.h"

namespace onnxzip::archive_detail {
namespace {

s3::Client client_for() { return s3::Client(s3::resolve_config({})); }

// The writer parts' pieces from the plan, numbered from 1 in file order.
std::vector<BucketPiece> cut(const PartsPlan& plan, std::uint64_t target) {
  std::vector<BucketPiece> pieces;
  for (std::uint32_t p = 0; p < plan.part_count(); ++p) {
    const auto [first, end] = plan.part_range(p);
    const std::uint64_t length = end - first;
    if (length == 0) continue;
    const std::uint64_t count = std::max(
        {std::uint64_t{1}, length / target, (length + kMaxBucketPart - 1) / kMaxBucketPart});
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t from = first + length * i / count;
      const std::uint64_t to = first + length * (i + 1) / count;
      pieces.push_back({.number = static_cast<unsigned>(pieces.size() + 1),
                        .part = p,
                        .first = from,
                        .length = to - from});
    }
  }
  return pieces;
}

}  // namespace

std::vector<BucketPiece> bucket_pieces(const PartsPlan& plan, const std::string& url) {
  for (std::uint32_t p = 0; p < plan.part_count(); ++p) {
    const auto [first, end] = plan.part_range(p);
    if (end != first && end - first < kMinBucketPart) {
      throw Error(ErrorCode::kInvalidArgument, {.file = url},
                  "part " + std::to_string(p) + " covers " + std::to_string(end - first) +
                      " bytes, and in a bucket every part but the tail needs at least 5 MiB (the "
                      "store's smallest multipart part): give its tensors to a neighbouring part, "
                      "or give it more");
    }
  }
  const std::uint64_t target =
      std::max(kBucketPieceTarget, plan.payload_end() / (kMaxBucketParts - 1) + 1);
  std::vector<BucketPiece> pieces = cut(plan, target);
  if (pieces.size() + 1 > kMaxBucketParts) {
    throw Error(ErrorCode::kInvalidArgument, {.file = url},
                "the plan needs " + std::to_string(pieces.size() + 1) +
                    " multipart parts, more than the store's 10,000: plan fewer, larger parts");
  }
  return pieces;
}

std::vector<std::uint8_t> begin_bucket_parts(const std::string& url, const PartsPlan& plan) {
  static_cast<void>(bucket_pieces(plan, url));  // Refused before anything is created.
  const s3::Location location = s3::parse_s3_url(url);
  PartsToken token;
  token.destination = url;
  token.upload_id = client_for().create_multipart_upload(location, false);
  token.plan = plan.to_bytes();
  return encode_token(token);
}

void abort_bucket_parts(const PartsToken& token) {
  client_for().abort_multipart_upload(s3::parse_s3_url(token.destination), token.upload_id);
}

struct BucketPieceWriter::State {
  std::unique_ptr<s3::Client> client;
  s3::Location location;
  std::string upload_id;
  std::vector<BucketPiece> pieces;  // This part's.
  std::size_t next = 0;             // The piece being filled.
  std::vector<std::uint8_t> buffer;
  std::vector<UploadedPiece> uploaded;
};

BucketPieceWriter::BucketPieceWriter(const PartsToken& token, const PartsPlan& plan,
                                     std::uint32_t part) {
  std::vector<BucketPiece> mine;
  for (const BucketPiece& piece : bucket_pieces(plan, token.destination)) {
    if (piece.part == part) mine.push_back(piece);
  }
  state_ =
      std::make_unique<State>(State{.client = std::make_unique<s3::Client>(s3::resolve_config({})),
                                    .location = s3::parse_s3_url(token.destination),
                                    .upload_id = token.upload_id,
                                    .pieces = std::move(mine),
                                    .next = 0,
                                    .buffer = {},
                                    .uploaded = {}});
}

BucketPieceWriter::~BucketPieceWriter() = default;
BucketPieceWriter::BucketPieceWriter(BucketPieceWriter&&) noexcept = default;
BucketPieceWriter& BucketPieceWriter::operator=(BucketPieceWriter&&) noexcept = default;

void BucketPieceWriter::write(ByteSpan bytes) {
  State& state = *state_;
  while (!bytes.empty()) {
    if (state.next >= state.pieces.size()) {
      throw Error(ErrorCode::kInvalidArgument, {.file = s3::display_name(state.location)},
                  "a part wrote past the end of its range");
    }
    const BucketPiece& piece = state.pieces[state.next];
    if (state.buffer.capacity() < piece.length) state.buffer.reserve(piece.length);
    const std::size_t take = static_cast<std::size_t>(
        std::min<std::uint64_t>(bytes.size(), piece.length - state.buffer.size()));
    state.buffer.insert(state.buffer.end(), bytes.begin(), bytes.begin() + take);
    bytes = bytes.subspan(take);
    if (state.buffer.size() == piece.length) {
      const std::uint32_t crc = crc32(state.buffer);
      const s3::UploadedPart done = state.client->upload_part(state.location, state.upload_id,
                                                              piece.number, state.buffer, crc);
      state.uploaded.push_back({.number = done.number, .etag = done.etag, .crc32 = crc});
      state.buffer.clear();
      ++state.next;
    }
  }
}

std::vector<UploadedPiece> BucketPieceWriter::uploaded() const {
  if (state_->next != state_->pieces.size()) {
    throw Error(ErrorCode::kBadState, {.file = s3::display_name(state_->location)},
                "the part's range is not written whole");
  }
  return state_->uploaded;
}

namespace {

// The tail's bytes: what an ArchiveWriter continuing after the planned entries writes, into a
// sparse scratch file (its payload range is a hole), read back from `payload_end` on.
std::vector<std::uint8_t> tail_bytes(const PartsToken& token, const PartsPlan& plan,
                                     ResumedEntries entries, const ModelProto& model,
                                     const std::optional<PrivateKey>& key,
                                     const SaveOptions& options) {
  const std::filesystem::path scratch =
      std::filesystem::temp_directory_path() / ("onnxzip-parts-" + to_hex(token.id) + ".onnxz");
  const std::filesystem::path temporary = AtomicOutputFile::make_shared_temporary(scratch, {}, 0);
  struct Remove {
    std::filesystem::path a, b;
    ~Remove() {
      ::unlink(a.c_str());
      ::unlink(b.c_str());
    }
  } const remove{temporary, scratch};
  auto file = AtomicOutputFile::adopt(scratch, temporary, {}, plan.payload_end());
  // __DIGESTS names the model after the key's file name, as a file's after its name.
  const std::string key_path = "/" + s3::parse_s3_url(token.destination).key;
  ArchiveWriter writer = ResumedWriter::make(
      key_path, ZipWriter(std::move(file), std::move(entries.written), plan.alignment()), options,
      entries.tensor_names, std::move(entries.digests), key);
  writer.finish(model);
  const detail::Fd fd(::open(scratch.c_str(), O_RDONLY | O_CLOEXEC));
  const off_t end = fd.get() < 0 ? -1 : ::lseek(fd.get(), 0, SEEK_END);
  if (end < 0 || static_cast<std::uint64_t>(end) < plan.payload_end()) {
    throw Error(ErrorCode::kIo, {.file = scratch.string()}, "cannot read the tail back");
  }
  std::vector<std::uint8_t> tail(static_cast<std::size_t>(end) - plan.payload_end());
  std::size_t done = 0;
  while (done < tail.size()) {
    const ssize_t n = ::pread(fd.get(), tail.data() + done, tail.size() - done,
                              static_cast<off_t>(plan.payload_end() + done));
    if (n <= 0) throw Error(ErrorCode::kIo, {.file = scratch.string()}, "cannot read the tail");
    done += static_cast<std::size_t>(n);
  }
  return tail;
}

}  // namespace

void finish_bucket_parts(const PartsToken& token, const PartsPlan& plan,
                         const std::vector<PartReceipt>& receipts, ResumedEntries entries,
                         const ModelProto& model, const std::optional<PrivateKey>& key,
                         const SaveOptions& options) {
  const std::vector<BucketPiece> pieces = bucket_pieces(plan, token.destination);
  std::vector<s3::UploadedPart> parts;
  for (const PartReceipt& receipt : receipts) {
    std::size_t expected = 0;
    for (const BucketPiece& piece : pieces) {
      if (piece.part != receipt.part) continue;
      if (expected >= receipt.pieces.size() || receipt.pieces[expected].number != piece.number) {
        break;
      }
      ++expected;
    }
    const std::size_t planned = static_cast<std::size_t>(
        std::count_if(pieces.begin(), pieces.end(),
                      [&](const BucketPiece& p) { return p.part == receipt.part; }));
    if (expected != planned || receipt.pieces.size() != planned) {
      throw Error(ErrorCode::kInvalidArgument, {.file = token.destination},
                  "the receipt of part " + std::to_string(receipt.part) + " lists " +
                      std::to_string(receipt.pieces.size()) + " uploaded pieces, not the plan's " +
                      std::to_string(planned) + "; nothing is published");
    }
    for (const UploadedPiece& piece : receipt.pieces) {
      parts.push_back({.number = piece.number, .etag = piece.etag, .crc32 = piece.crc32});
    }
  }
  const std::vector<std::uint8_t> tail =
      tail_bytes(token, plan, std::move(entries), model, key, options);
  const s3::Location location = s3::parse_s3_url(token.destination);
  s3::Client client = client_for();
  parts.push_back(client.upload_part(location, token.upload_id,
                                     static_cast<unsigned>(pieces.size() + 1), tail, crc32(tail)));
  client.complete_multipart_upload(location, token.upload_id, parts);
}

}  // namespace onnxzip::archive_detail
