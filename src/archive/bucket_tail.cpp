#include "bucket_tail.h"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "check.h"
#include "crc32.h"
#include "onnxzip/error.h"
#include "s3_client.h"
#include "s3_config.h"

namespace onnxzip::archive_detail {
namespace {

// The copies of the prefix, each only while the source's ETag is `etag`.
std::vector<s3::CopySource> prefix_parts(const s3::Location& location, std::uint64_t size,
                                         const std::string& etag) {
  std::vector<s3::CopySource> parts;
  for (const CopyRange& range : copy_ranges(size)) {
    parts.push_back({location, range.first, range.length, etag});
  }
  return parts;
}

// The prefix read from the object and the tail after it: the one part of a whole rewrite.
OwnedBytes prefix_and_tail(const HttpSource& source, std::uint64_t prefix, ByteSpan tail) {
  OwnedBytes whole(static_cast<std::size_t>(prefix + tail.size()));
  if (prefix != 0) source.read_into(0, whole.mutable_span().first(prefix));
  if (!tail.empty()) std::memcpy(whole.data() + prefix, tail.data(), tail.size());
  return whole;
}

// The parts of the new object: the prefix copied inside the store (or read and sent with the
// tail when too small to be a part), then the tail.
std::vector<s3::UploadedPart> send_parts(s3::Client& client, const s3::Location& location,
                                         const std::string& upload, const HttpSource& source,
                                         std::uint64_t prefix, ByteSpan tail) {
  std::vector<s3::UploadedPart> parts;
  if (prefix < kMinCopyPart) {
    const OwnedBytes whole = prefix_and_tail(source, prefix, tail);
    parts.push_back(client.upload_part(location, upload, 1, whole.span(), crc32(whole.span())));
    return parts;
  }
  for (const s3::CopySource& copy : prefix_parts(location, prefix, source.etag())) {
    parts.push_back(
        client.upload_part_copy(location, upload, static_cast<unsigned>(parts.size() + 1), copy));
  }
  parts.push_back(client.upload_part(location, upload, static_cast<unsigned>(parts.size() + 1),
                                     tail, crc32(tail)));
  return parts;
}

// The error for an edit the store refused: Error(kChanged) when the object is no longer the
// version read (the refusal was the compare-and-swap failing), else `refusal` as it is.
[[noreturn]] void rethrow_refusal(const Error& refusal, s3::Client& client,
                                  const s3::Location& location, const std::string& etag) {
  std::optional<s3::ObjectHead> now;
  try {
    now = client.head_object(location);
  } catch (const Error&) {
    throw refusal;  // The store's first answer says more than a failed look.
  }
  if (now && now->etag == etag) throw refusal;
  throw Error(ErrorCode::kChanged, {.file = s3::display_name(location)},
              "the object changed while it was edited: it was " + etag + " when read, it is " +
                  (now ? now->etag : std::string("gone")) +
                  " now (another client wrote it); nothing was written: edit it again");
}

// Aborts the upload after a failure, whose error is the one to report: should the abort fail as
// well (the store unreachable), the parts stay listed by ListMultipartUploads until a lifecycle
// rule or another abort removes them; the object is unchanged either way.
void abort_after_failure(s3::Client& client, const s3::Location& location,
                         const std::string& upload) noexcept {
  try {
    client.abort_multipart_upload(location, upload);
  } catch (...) {  // NOLINT(bugprone-empty-catch): the failure before it is reported.
  }
}

}  // namespace

std::vector<CopyRange> copy_ranges(std::uint64_t size) {
  ONNXZIP_DCHECK(size >= kMinCopyPart);
  const std::uint64_t count = (size + kMaxPart - 1) / kMaxPart;
  std::vector<CopyRange> ranges;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t first = size / count * i;
    const std::uint64_t end = i + 1 == count ? size : size / count * (i + 1);
    ranges.push_back({first, end - first});
  }
  return ranges;
}

BucketReplacement replace_tail_in_bucket(const HttpSource& source, const ZipDirectory& zip,
                                         const NewTail& tail, const S3Options& s3) {
  const s3::Location location = s3::parse_s3_url(source.name());
  const std::string& etag = source.etag();
  if (etag.empty()) {
    throw Error(ErrorCode::kUnsupported, {.file = source.name()},
                "the store gave no strong ETag for the object, so an edit cannot be made "
                "conditional on its version: download it, edit it, upload it");
  }
  const zip::EntryTail laid_out = tail.lay_out(zip, tail.start);
  const OwnedBytes bytes = tail.bytes(zip);
  s3::Client client(s3::resolve_config(s3));
  const std::string upload = client.create_multipart_upload(location, false);
  try {
    const std::vector<s3::UploadedPart> parts =
        send_parts(client, location, upload, source, tail.start, bytes.span());
    client.complete_multipart_upload(location, upload, parts, {.if_match = etag});
  } catch (const Error& refusal) {
    abort_after_failure(client, location, upload);
    rethrow_refusal(refusal, client, location, etag);
  } catch (...) {
    abort_after_failure(client, location, upload);
    throw;
  }
  return {laid_out.local_header_offset, laid_out.data_offset, tail.start + bytes.size(),
          tail.start < kMinCopyPart};
}

}  // namespace onnxzip::archive_detail
