// An object in a bucket read as a ByteSource: s3://bucket/key opened like an http(s) URL
// (HttpSource: one suffix GET brings the size, the ETag and the tail; later reads are ranged
// GETs checked against that ETag), every request signed with SigV4 at the time it is sent, and a
// refusal reported as the store's error (s3_error.h) naming s3://bucket/key.
#ifndef ONNXZIP_IO_S3_SOURCE_H_
#define ONNXZIP_IO_S3_SOURCE_H_

#include <memory>
#include <string_view>

#include "onnxzip/http_source.h"
#include "s3_config.h"

namespace onnxzip::s3 {

// Opens `url` ("s3://bucket/key") with the settings of s3_config.h. `http` tunes the reads as for
// any URL; its headers, display_name, sign_request and describe_refusal are set here, and
// redirects are not followed (a store answers a wrong region with 301, which is reported).
// Errors: those of parse_s3_url and resolve_config, and HttpSource::open's, named
// s3://bucket/key.
std::shared_ptr<const HttpSource> open_source(std::string_view url, const HttpOptions& http = {},
                                              const S3Options& options = {},
                                              const Environment& environment = process_environment);

}  // namespace onnxzip::s3

#endif  // ONNXZIP_IO_S3_SOURCE_H_
