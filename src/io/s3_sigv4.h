// AWS Signature Version 4 for S3 requests (the "Authorization" header form), computed here with
// OpenSSL because Debian 12's libcurl 7.88 signs S3 requests wrongly (it adds no
// x-amz-content-sha256, fails unsorted queries, and sorts x-amz-copy-source-range before
// x-amz-copy-source). tests/s3_sigv4_test.cpp holds it to botocore's S3SigV4Auth.
//
// The signer sees the secret key and the session token; nothing it returns that a message could
// show holds either (SignedHeaders' values go on the wire only).
#ifndef ONNXZIP_IO_S3_SIGV4_H_
#define ONNXZIP_IO_S3_SIGV4_H_

#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnxzip/bytes.h"
#include "onnxzip/s3_options.h"

namespace onnxzip::s3 {

// What signs a request (s3_options.h). Never shown: no message, log line or repr holds these.
using Credentials = S3Credentials;

// One query parameter or header, as given (not encoded).
struct NameValue {
  std::string name;
  std::string value;
};

// The x-amz-content-sha256 value for a body that is not hashed (over TLS, or streamed).
inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";

// A request to sign. `encoded_path` is the path as sent: the S3 key encoded by encode_path.
struct SigV4Request {
  std::string_view method;               // "GET", "PUT", ...
  std::string_view host;                 // The Host header: host, with ":port" unless the default.
  std::string_view encoded_path;         // "/bucket/key" or "/key", percent-encoded (encode_path).
  std::span<const NameValue> query{};    // Unencoded; any order (the signer sorts).
  std::span<const NameValue> headers{};  // To sign besides host and the x-amz-* it adds.
  std::string_view payload_sha256 = kUnsignedPayload;  // Lower-case hex, or kUnsignedPayload.
};

// The headers to send with the request: x-amz-date, x-amz-content-sha256, x-amz-security-token
// (with a session token) and Authorization; and the intermediate texts, for tests.
struct SignedHeaders {
  std::vector<NameValue> headers;
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;
};

// `text` percent-encoded as S3 wants a key in a path and SigV4 a query name or value: every byte
// but A-Z a-z 0-9 - _ . ~ (and '/' when `keep_slash`) as %XX, upper-case hex.
std::string uri_encode(std::string_view text, bool keep_slash);
// A key's path, "/" + uri_encode(key, true); with a bucket (path-style) "/bucket/key".
std::string encode_path(std::string_view bucket, std::string_view key);
// The query string as sent and as signed: encoded pairs sorted by name then value, "name=value"
// joined by '&' (a valueless parameter such as "uploads" is "uploads=").
std::string canonical_query(std::span<const NameValue> query);
// "YYYYMMDDTHHMMSSZ" in UTC.
std::string amz_date(std::chrono::system_clock::time_point time);
// Lower-case hex SHA-256 of `bytes`.
std::string sha256_hex(ByteSpan bytes);

// Signs `request` for `region` and the s3 service at `time`. Error(kInvalidArgument) for an empty
// access key or secret, or a header name or value with a line break.
SignedHeaders sign(const SigV4Request& request, const Credentials& credentials,
                   std::string_view region, std::chrono::system_clock::time_point time);

}  // namespace onnxzip::s3

#endif  // ONNXZIP_IO_S3_SIGV4_H_
