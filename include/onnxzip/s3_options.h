// How onnxzip reaches an object store for an s3://bucket/key destination (and source): explicit
// settings that override what the AWS tools' environment and files say, and how a write is cut
// into the parts of a multipart upload (spec/object-storage.md). Anyone may use this header.
#ifndef ONNXZIP_S3_OPTIONS_H_
#define ONNXZIP_S3_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>

namespace onnxzip {

// Keys that sign requests. Never shown: no message, log line or repr holds them.
struct S3Credentials {
  std::string access_key_id{};
  std::string secret_access_key{};
  std::string session_token{};  // "" without one (long-term keys).
};

// S3's limits on a multipart upload's parts: each but the last at least 5 MiB, none over
// 5 GiB, at most 10,000 of them.
inline constexpr std::uint64_t kS3MinPartSize = std::uint64_t{5} << 20;
inline constexpr std::uint64_t kS3MaxPartSize = std::uint64_t{5} << 30;
inline constexpr unsigned kS3MaxParts = 10'000;

struct S3Options {
  // Each empty field is found as the AWS tools find it (AWS_* variables, ~/.aws/credentials and
  // ~/.aws/config; internal/s3.h lists the order).
  std::optional<S3Credentials> credentials{};
  std::string profile{};
  std::string region{};
  std::string
      endpoint_url{};  // "http://127.0.0.1:9000", "https://ACCOUNT.r2.cloudflarestorage.com"

  // Writes. The bytes of each part, in [kS3MinPartSize, kS3MaxPartSize]. Past 1,000 parts each
  // next 1,000 are twice as large (up to kS3MaxPartSize), so a write of unknown size fits in
  // 10,000 parts; fixed_part_size keeps every part but the last this size (Cloudflare R2 needs
  // equal parts) and refuses a write that needs more than 10,000 of them.
  std::uint64_t part_size = std::uint64_t{64} << 20;
  bool fixed_part_size = false;
  // Parts being uploaded at once, at least 1. Memory stays within (parts_in_flight + 2) ×
  // part_size: those, the part being filled and one held back for a header still to be patched.
  unsigned parts_in_flight = 4;
  // Replace an existing object. By default the upload completes only if no object has the key
  // (If-None-Match: *), so an existing one is never clobbered.
  bool overwrite = false;
};

}  // namespace onnxzip

#endif  // ONNXZIP_S3_OPTIONS_H_
