// The object store's requests a write, an in-bucket edit and their tests need, each signed with
// SigV4 (s3_sigv4.h) and sent over one HttpClient (http_request.h): multipart uploads (create,
// upload a part from memory, copy a part from an object's byte range, complete, abort, list) and
// HeadObject. Each call is one request, tried again with doubling delays after a reset
// connection, a timeout, 5xx, 429 or 503 SlowDown (an UploadPart resends the same bytes); an
// answer of 200 whose body is an <Error> (CompleteMultipartUpload and UploadPartCopy may answer
// so) is a refusal like any other. Refusals are s3_error.h's: Error naming s3://bucket/key,
// what the store said and what to do. Nothing shown ever holds a key, a token or a signature.
#ifndef ONNXZIP_IO_S3_CLIENT_H_
#define ONNXZIP_IO_S3_CLIENT_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "http_request.h"
#include "onnxzip/bytes.h"
#include "s3_config.h"

namespace onnxzip::s3 {

struct ClientOptions {
  // Attempts after the first, for what may succeed later (see the header comment).
  unsigned retries = 4;
  // Before the first retry; doubled for each next one.
  std::chrono::milliseconds retry_delay{200};
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::seconds stall_timeout{30};
};

// A part of a multipart upload, as CompleteMultipartUpload lists it.
struct UploadedPart {
  unsigned number = 0;                   // 1 ... 10,000.
  std::string etag;                      // As the store answered it, quotes included.
  std::optional<std::uint32_t> crc32{};  // The part's CRC-32, when it was sent with it.
};

// Bytes [first, first + length) of `source` as a part (UploadPartCopy), only while the source's
// ETag is `if_match` ("" for no condition).
struct CopySource {
  Location source;
  std::uint64_t first = 0;
  std::uint64_t length = 0;
  std::string if_match{};
};

// How CompleteMultipartUpload is conditioned and checked.
struct CompleteOptions {
  // The whole object's CRC-32, sent as x-amz-checksum-crc32 with x-amz-checksum-type
  // FULL_OBJECT: the store checks the object it composes against it.
  std::optional<std::uint32_t> full_object_crc32{};
  // If-None-Match: * (the object must not exist yet: never clobber).
  bool if_none_match = false;
  // If-Match: this ETag (the object must still be the one read: an edit's compare-and-swap);
  // "" for none.
  std::string if_match{};
};

// What HeadObject tells.
struct ObjectHead {
  std::uint64_t size = 0;
  std::string etag;
  std::string crc32{};  // x-amz-checksum-crc32 (base64) when asked for and the store has it.
};

// A multipart upload not yet completed or aborted.
struct PendingUpload {
  std::string key;
  std::string upload_id;
};

// The SigV4 checksum header's value: the CRC-32's four bytes, big-endian, in base64.
std::string crc32_base64(std::uint32_t crc);

class Client final {
 public:
  explicit Client(Config config, ClientOptions options = {});

  // CreateMultipartUpload; the upload id. With `crc32_full_object` the upload is declared to be
  // checked with a full-object CRC-32 (x-amz-checksum-algorithm CRC32, type FULL_OBJECT).
  std::string create_multipart_upload(const Location& location, bool crc32_full_object);
  // UploadPart of `bytes` (borrowed for the call) with their CRC-32 `crc32`, which the store
  // checks.
  UploadedPart upload_part(const Location& location, const std::string& upload_id, unsigned number,
                           ByteSpan bytes, std::uint32_t crc32);
  // UploadPartCopy of `copy` as part `number` (its length ≥ 1).
  UploadedPart upload_part_copy(const Location& location, const std::string& upload_id,
                                unsigned number, const CopySource& copy);
  // CompleteMultipartUpload of `parts` (in ascending part order); the new object's ETag. A
  // failed condition is Error(kIo) "... 412 PreconditionFailed ..." (409
  // ConditionalRequestConflict for a race), the upload left to abort. With full_object_crc32, a
  // refusal with 404 NoSuchUpload or 412 is checked with HeadObject: a Complete whose answer was
  // lost (the connection dropped after the store completed the upload) is sent again -- by the
  // retries here, or by libcurl on a fresh connection when a reused one died -- and refused so.
  // When the upload is gone (NoSuchUpload; after a 412, an Abort answering NoSuchUpload: a
  // refused upload would still be there, and is aborted) and the object's full-object CRC-32 is
  // the upload's, the lost attempt completed it: a success, the object's ETag returned.
  std::string complete_multipart_upload(const Location& location, const std::string& upload_id,
                                        std::span<const UploadedPart> parts,
                                        const CompleteOptions& options = {});
  // AbortMultipartUpload. An upload the store no longer knows (404 NoSuchUpload) is not an error.
  void abort_multipart_upload(const Location& location, const std::string& upload_id);
  // The uploads in progress in `bucket` whose key starts with `prefix` (the first 1,000).
  std::vector<PendingUpload> list_multipart_uploads(const std::string& bucket,
                                                    const std::string& prefix = "");
  // HeadObject; nullopt when there is no such object (404). `with_checksum` asks for the
  // object's checksum (x-amz-checksum-mode: ENABLED) into ObjectHead::crc32.
  std::optional<ObjectHead> head_object(const Location& location, bool with_checksum = false);

  // Requests sent so far, every attempt counted.
  std::uint64_t requests() const noexcept { return requests_.load(); }
  const ClientOptions& options() const noexcept { return options_; }

  // One request to the store, as the calls above make it (public for tests and for requests
  // this class does not name).
  struct Call {
    std::string method;
    Location location;  // The key may be "" (a bucket's request).
    std::vector<NameValue> query{};
    std::vector<NameValue> headers{};  // Signed and sent.
    ByteSpan body{};
    bool sign_body = true;     // False: x-amz-content-sha256 UNSIGNED-PAYLOAD (a part's bytes).
    std::string doing{};       // "uploading part 3": how messages say what failed.
    bool error_in_ok = false;  // A 200 may carry an <Error> (Complete, UploadPartCopy).
    bool missing_ok = false;   // A 404 is an answer (HEAD, Abort), not a refusal.
    // A 404 or 412 is returned, for the caller to check: an attempt whose answer was lost may
    // have done what was asked (a Complete), and its repetition is refused so.
    bool check_refusal = false;
  };
  // Sends `call` with the retries; the answer of its last attempt (2xx, or 404 when missing_ok).
  HttpAnswer send(const Call& call);

 private:
  HttpAnswer attempt(const Call& call, const std::string& name);
  // The ETag of the object a Complete's lost attempt made, when the refusal `answer` of its
  // repetition and the store say the upload is gone and the object's CRC-32 is the upload's;
  // else throws the refusal.
  std::string completed_by_lost_attempt(const Location& location, const std::string& upload_id,
                                        const HttpAnswer& answer, std::uint32_t crc32,
                                        const std::string& doing);

  Config config_;
  ClientOptions options_;
  HttpClient http_;
  std::atomic<std::uint64_t> requests_{0};
};

}  // namespace onnxzip::s3

#endif  // ONNXZIP_IO_S3_CLIENT_H_
