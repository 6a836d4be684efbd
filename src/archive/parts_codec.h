// Private to the archive layer: the byte strings of parts.h (plan, token, receipt) -- a
// little-endian writer and a reader that checks every length against what is left before it
// reads (checked_subspan), naming the record and offset of what is wrong. The records
// themselves are spelled in spec §13.
#ifndef ONNXZIP_SRC_PARTS_CODEC_H_
#define ONNXZIP_SRC_PARTS_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "little_endian.h"
#include "onnxzip/bytes.h"
#include "onnxzip/error.h"
#include "onnxzip/integrity.h"

namespace onnxzip::archive_detail {

// Each string starts with an 8-byte magic naming the record, then a u32 version.
inline constexpr std::string_view kPlanMagic = "ONNXZPLN";
inline constexpr std::string_view kTokenMagic = "ONNXZTOK";
inline constexpr std::string_view kReceiptMagic = "ONNXZRCP";
inline constexpr std::uint32_t kPartsFormatVersion = 1;

class PartsEncoder final {
 public:
  explicit PartsEncoder(std::string_view magic) {
    append(magic);
    u32(kPartsFormatVersion);
  }
  void u8(std::uint8_t value) { bytes_.push_back(value); }
  void u32(std::uint32_t value) {
    std::uint8_t le[4];
    detail::store_le32(le, value);
    bytes_.insert(bytes_.end(), le, le + 4);
  }
  void u64(std::uint64_t value) {
    std::uint8_t le[8];
    detail::store_le64(le, value);
    bytes_.insert(bytes_.end(), le, le + 8);
  }
  // A u32 length, then the bytes.
  void text(std::string_view value) {
    u32(static_cast<std::uint32_t>(value.size()));
    append(value);
  }
  void blob(ByteSpan value) {
    u64(value.size());
    bytes_.insert(bytes_.end(), value.begin(), value.end());
  }
  void digest(const Sha256Digest& value) {
    bytes_.insert(bytes_.end(), value.begin(), value.end());
  }
  std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  void append(std::string_view value) { bytes_.insert(bytes_.end(), value.begin(), value.end()); }
  std::vector<std::uint8_t> bytes_;
};

class PartsDecoder final {
 public:
  // Checks the magic and version of `record` ("parts plan", "parts token", "parts receipt").
  PartsDecoder(ByteSpan bytes, std::string_view magic, std::string_view record)
      : bytes_(bytes), record_(record) {
    const ByteSpan found = take(magic.size(), "magic");
    if (!std::equal(found.begin(), found.end(), magic.begin())) {
      fail(0, "does not start with " + std::string(magic) + ": not a " + std::string(record));
    }
    const std::uint32_t version = u32("version");
    if (version != kPartsFormatVersion) {
      fail(magic.size(), "version " + std::to_string(version) + " is not " +
                             std::to_string(kPartsFormatVersion) + " (written by another onnxzip)");
    }
  }
  std::uint8_t u8(std::string_view what) { return take(1, what)[0]; }
  std::uint32_t u32(std::string_view what) { return detail::load_le32(take(4, what).data()); }
  std::uint64_t u64(std::string_view what) { return detail::load_le64(take(8, what).data()); }
  std::string text(std::string_view what) {
    const std::uint32_t length = u32(what);
    const ByteSpan value = take(length, what);
    return {value.begin(), value.end()};
  }
  ByteSpan blob(std::string_view what) { return take(u64(what), what); }
  Sha256Digest digest(std::string_view what) {
    Sha256Digest value;
    const ByteSpan found = take(value.size(), what);
    std::copy(found.begin(), found.end(), value.begin());
    return value;
  }
  // A count of records each at least `min_record_bytes` long, refused beyond `limit` or beyond
  // what the bytes left could hold (so no allocation follows a forged count).
  std::uint64_t count(std::string_view what, std::uint64_t limit, std::uint64_t min_record_bytes) {
    const std::uint64_t at = offset_;
    const std::uint64_t value = u32(what);
    if (value > limit) {
      throw Error(ErrorCode::kLimitExceeded, {.file = std::string(record_)},
                  std::string(what) + " " + std::to_string(value) + " at offset " +
                      std::to_string(at) + " is more than the limit " + std::to_string(limit));
    }
    if (value > (bytes_.size() - offset_) / min_record_bytes) {
      fail(at, std::string(what) + " " + std::to_string(value) + " is more than the " +
                   std::to_string(bytes_.size() - offset_) + " bytes left can hold");
    }
    return value;
  }
  void expect_end() const {
    if (offset_ != bytes_.size()) {
      fail(offset_, std::to_string(bytes_.size() - offset_) + " bytes follow the end");
    }
  }
  std::uint64_t offset() const noexcept { return offset_; }
  [[noreturn]] void fail(std::uint64_t at, const std::string& problem) const {
    throw Error(ErrorCode::kCorrupt, {.file = std::string(record_)},
                "offset " + std::to_string(at) + ": " + problem);
  }

 private:
  ByteSpan take(std::uint64_t length, std::string_view what) {
    if (!fits(offset_, length, bytes_.size())) {
      fail(offset_, std::string(what) + " (" + std::to_string(length) + " bytes) runs past the " +
                        std::to_string(bytes_.size()) + "-byte end");
    }
    const ByteSpan value = checked_subspan(bytes_, offset_, length, what);
    offset_ += length;
    return value;
  }

  ByteSpan bytes_;
  std::string_view record_;
  std::uint64_t offset_ = 0;
};

// What a parts token names (spec §13): the archive's final path and its temporary (absolute),
// how to publish it, and the plan.
struct PartsToken {
  std::string destination;  // A path, or "s3://bucket/key" for a bucket.
  std::string temporary;    // The file's temporary (a file).
  std::string upload_id;    // The multipart upload (a bucket).
  bool durable = false;
  bool follow_symlinks = false;
  std::vector<std::uint8_t> plan;  // PartsPlan::to_bytes().
  Sha256Digest id{};               // SHA-256 of the token's bytes: receipts name it.
};
std::vector<std::uint8_t> encode_token(const PartsToken& token);
PartsToken decode_token(ByteSpan bytes);

// One UploadPart a bucket's part writer made.
struct UploadedPiece {
  std::uint32_t number = 0;
  std::string etag;
  std::uint32_t crc32 = 0;
};

// What a part writer wrote: per entry of its part, in plan order, its name, size, CRC-32 and
// (`hashed`) SHA-256; in a bucket, its pieces' ETags.
struct PartReceipt {
  Sha256Digest token_id{};
  std::uint32_t part = 0;
  bool hashed = false;
  std::vector<EntryDigest> entries;
  std::vector<UploadedPiece> pieces;
};
std::vector<std::uint8_t> encode_receipt(const PartReceipt& receipt);
PartReceipt decode_receipt(ByteSpan bytes);

}  // namespace onnxzip::archive_detail

#endif  // ONNXZIP_SRC_PARTS_CODEC_H_
