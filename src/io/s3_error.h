// What an object store's refusal means, and what to do about it: an HTTP status and the <Error>
// XML body it came with, made into an onnxzip::Error naming the object (s3://bucket/key).
#ifndef ONNXZIP_IO_S3_ERROR_H_
#define ONNXZIP_IO_S3_ERROR_H_

#include <string>
#include <string_view>

#include "onnxzip/error.h"
#include "s3_config.h"

namespace onnxzip::s3 {

// A refusal, and whether the same request may succeed later (503 SlowDown, 500, 429, ...).
struct StoreRefusal {
  Error error;
  bool retryable = false;
  // The store's Code ("NoSuchUpload"), or the one the status implies ("" when neither says).
  std::string code;
};

// The error for an answer with `status` (not 2xx) and `body` (the store's XML, maybe empty or not
// XML at all: a proxy's page) to a request for `location`. `bucket_region` is the answer's
// x-amz-bucket-region header ("" when absent); `doing` says what the request was for ("reading",
// "writing"). The message quotes the store's Code and Message (clipped, control characters
// dropped) and never any other field: a SignatureDoesNotMatch body echoes the access key id and
// the string to sign.
StoreRefusal store_refusal(long status, std::string_view body, const Location& location,
                           std::string_view bucket_region, std::string_view doing);

}  // namespace onnxzip::s3

#endif  // ONNXZIP_IO_S3_ERROR_H_
