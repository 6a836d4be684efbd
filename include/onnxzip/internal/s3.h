// Archives in object storage: s3://bucket/key, on AWS S3 or any store that speaks its API (MinIO,
// Cloudflare R2, Ceph, ...). An object opens like an http(s) URL (http_source.h): one suffix GET
// brings the size, the ETag and the tail, later reads are ranged GETs checked against that ETag.
// Every request is signed by onnxzip (AWS Signature Version 4), with the credentials, region and
// endpoint the AWS tools would use: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
// AWS_SESSION_TOKEN, AWS_PROFILE with ~/.aws/credentials and ~/.aws/config
// (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE), AWS_REGION / AWS_DEFAULT_REGION, and
// AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL for stores other than AWS (addressed path-style).
// Messages name s3://bucket/key and say what the store said and what to do; they never hold a
// key, a token or a signature. Any module may use this header.
#ifndef ONNXZIP_S3_H_
#define ONNXZIP_S3_H_

#include <memory>
#include <string>
#include <string_view>

#include "onnxzip/internal/http_source.h"
#include "onnxzip/s3_options.h"

namespace onnxzip {

// Whether `text` starts with "s3://" (the scheme in any case).
bool is_s3_url(std::string_view text) noexcept;

// Opens the object `url` names ("s3://bucket/key"). `http` tunes the reads as for any URL (its
// headers are not sent: the signature covers the request). Errors: kInvalidArgument for a URL
// that is not s3://bucket/key or an ill-formed endpoint or region; kNotFound when no credentials
// are found (saying where it looked) and for NoSuchKey / NoSuchBucket; kIo for other refusals
// (SignatureDoesNotMatch, InvalidAccessKeyId, AccessDenied, PermanentRedirect naming the region;
// 503 SlowDown after the retries), all naming s3://bucket/key; kUnsupported without libcurl.
// `s3`'s credentials, profile, region and endpoint override the environment's.
std::shared_ptr<const HttpSource> open_s3_source(const std::string& url,
                                                 const HttpOptions& http = {},
                                                 const S3Options& s3 = {});

// Aborts every multipart upload this process has started and not yet completed or aborted (one
// AbortMultipartUpload each), for a program about to end on a signal: the CLI calls it on Ctrl-C
// so that no upload is left in the bucket. The writers still running then fail. Never throws.
void abort_s3_uploads_in_progress() noexcept;

}  // namespace onnxzip

#endif  // ONNXZIP_S3_H_
