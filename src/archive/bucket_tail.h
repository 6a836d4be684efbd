// Private to the library: an edited archive's new tail (tail_edit.h) written into the object in a
// bucket it was read from, the unchanged prefix copied inside the store. The format puts the
// model entry last (spec §2.4), so an edit's new tail is the model, the integrity entries before
// it and the central directory; everything before -- nearly every byte of a large archive --
// stays where it is. Object stores have no in-place write, but S3's multipart upload composes a
// new object from byte ranges of an existing one (UploadPartCopy, inside the store) and parts
// uploaded: the client moves the tail, not the archive. How it is done and why: spec §9.9.
#ifndef ONNXZIP_SRC_BUCKET_TAIL_H_
#define ONNXZIP_SRC_BUCKET_TAIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "onnxzip/internal/http_source.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/s3_options.h"
#include "tail_edit.h"

namespace onnxzip::archive_detail {

// S3's limits on a part: every part but the last at least kMinCopyPart bytes, each at most
// kMaxPart.
inline constexpr std::uint64_t kMinCopyPart = std::uint64_t{5} << 20;
inline constexpr std::uint64_t kMaxPart = std::uint64_t{5} << 30;

// The byte ranges [first, first + length) of a prefix of `size` bytes (at least kMinCopyPart)
// copied as parts: as few as kMaxPart allows, of near-equal sizes, so that none of them is under
// kMinCopyPart.
struct CopyRange {
  std::uint64_t first = 0;
  std::uint64_t length = 0;
};
std::vector<CopyRange> copy_ranges(std::uint64_t size);

// Where the new last entry went, and how.
struct BucketReplacement {
  std::uint64_t local_header_offset = 0;
  std::uint64_t data_offset = 0;
  std::uint64_t object_size = 0;  // The object's size afterwards.
  // The prefix was under kMinCopyPart: read and uploaded with the tail, the object written whole.
  bool rewritten_whole = false;
};

// Replaces the object `source` read (s3://bucket/key, its ETag E) by its first tail.start bytes
// followed by `tail` (make_new_tail's for the archive `zip` read from `source`), as one
// compare-and-swap: CreateMultipartUpload; ⌈start / kMaxPart⌉ UploadPartCopy of the prefix, in
// near-equal parts, each only while the source's ETag is E (x-amz-copy-source-if-match); one
// UploadPart of the tail; CompleteMultipartUpload only while the object's ETag is E (If-Match).
// A prefix under kMinCopyPart cannot be a part (only the last may be smaller): it is read (one
// ranged GET, checked against E) and uploaded with the tail as the only part. Requests go through
// the S3 client with the settings of s3_config.h, `s3`'s overriding the environment's (the
// store that answered `source`'s reads).
//
// Errors (the object then unchanged, the upload aborted): Error(kUnsupported) when the store gave
// no ETag (nothing to make the swap conditional on); Error(kChanged) naming s3://bucket/key when
// the object is no longer the one read (a copy or the Complete refused with 412
// PreconditionFailed or 409 ConditionalRequestConflict, and a HeadObject shows another ETag);
// the client's errors otherwise.
BucketReplacement replace_tail_in_bucket(const HttpSource& source, const ZipDirectory& zip,
                                         const NewTail& tail, const S3Options& s3);

}  // namespace onnxzip::archive_detail

#endif  // ONNXZIP_SRC_BUCKET_TAIL_H_
