// Private to the archive layer: an archive written in parts into a bucket (parts.h, spec §13)
// -- one multipart upload whose parts are the writers' byte ranges cut into pieces, and the
// tail, uploaded by finish. The store's rules: every part but the last at least 5 MiB, at most
// 5 GiB, at most 10,000 parts.
#ifndef ONNXZIP_SRC_PARTS_BUCKET_H_
#define ONNXZIP_SRC_PARTS_BUCKET_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "onnxzip/bytes.h"
#include "onnxzip/parts.h"
#include "parts_codec.h"
#include "zip_writer.h"

namespace onnxzip::archive_detail {

inline constexpr std::uint64_t kMinBucketPart = std::uint64_t{5} << 20;
inline constexpr std::uint64_t kMaxBucketPart = std::uint64_t{5} << 30;
inline constexpr std::uint64_t kMaxBucketParts = 10000;
// A writer holds one piece in memory: pieces are about this size (more for a huge archive, so
// that the count stays within the store's limit).
inline constexpr std::uint64_t kBucketPieceTarget = std::uint64_t{64} << 20;

// One UploadPart of a writer's range.
struct BucketPiece {
  unsigned number = 0;  // 1 ... 9,999; the tail takes the next.
  std::uint32_t part = 0;
  std::uint64_t first = 0;
  std::uint64_t length = 0;
};

// Every writer's pieces, in file order. Error(kInvalidArgument) saying how to regroup when a
// writer's range is under 5 MiB or the pieces would be too many.
std::vector<BucketPiece> bucket_pieces(const PartsPlan& plan, const std::string& url);

// What finish hands the ArchiveWriter that continues the payloads (ResumedWriter::make).
struct ResumedEntries {
  std::vector<WrittenEntry> written;
  std::vector<std::string> tensor_names;
  std::vector<EntryDigest> digests;
};

// begin/abort/finish for a token of kind "bucket" (PartsToken::upload_id set).
std::vector<std::uint8_t> begin_bucket_parts(const std::string& url, const PartsPlan& plan);
void abort_bucket_parts(const PartsToken& token);
// `receipts` by part, checked against the plan but for their pieces, which this checks.
void finish_bucket_parts(const PartsToken& token, const PartsPlan& plan,
                         const std::vector<PartReceipt>& receipts, ResumedEntries entries,
                         const ModelProto& model, const std::optional<PrivateKey>& key,
                         const SaveOptions& options);

// A bucket part writer's stream: the bytes of its range in order, uploaded piece by piece.
class BucketPieceWriter final {
 public:
  BucketPieceWriter(const PartsToken& token, const PartsPlan& plan, std::uint32_t part);
  ~BucketPieceWriter();
  BucketPieceWriter(BucketPieceWriter&&) noexcept;
  BucketPieceWriter& operator=(BucketPieceWriter&&) noexcept;
  // The next bytes of the range.
  void write(ByteSpan bytes);
  // The pieces uploaded; Error(kBadState) unless the whole range was written.
  std::vector<UploadedPiece> uploaded() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace onnxzip::archive_detail

#endif  // ONNXZIP_SRC_PARTS_BUCKET_H_
