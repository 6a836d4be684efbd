// How archives are read over HTTP(S) (internal/http_source.h says how each request is made and
// checked). Anyone may use this header.
#ifndef ONNXZIP_HTTP_OPTIONS_H_
#define ONNXZIP_HTTP_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "onnxzip/error.h"

namespace onnxzip {

struct HttpOptions {
  // Extra request headers, "Name: value" (Authorization for a private hub). Never shown.
  std::vector<std::string> headers{};
  // The first request's suffix length: the archive's end records, central directory and model
  // are read with it when they fit (an archive's open then reads no more when they fit).
  std::uint64_t tail_size = std::uint64_t{1} << 20;
  // Attempts after the first for 5xx, connection failures, short and stalled bodies.
  unsigned retries = 3;
  // Before the first retry; doubled for each next one.
  std::chrono::milliseconds retry_delay{200};
  std::chrono::milliseconds connect_timeout{10'000};
  // A request that receives no byte for this long is aborted (and retried). Whole seconds.
  std::chrono::seconds stall_timeout{30};
  long max_redirects = 10;
  // Requests in flight at most when several ranges are read (read_ranges, fetch).
  unsigned max_parallel = 4;
  // fetch() asks for pieces of at most this many bytes, each one request.
  std::uint64_t piece_size = std::uint64_t{64} << 20;
  // read() refuses to buffer more than this at once (Error(kLimitExceeded)): the sizes it is
  // asked for come from the archive, which a hostile server writes. fetch() is not bounded.
  std::uint64_t max_read_size = std::uint64_t{4} << 30;
  // Called before every attempt of every request (all are GETs); the "Name: value" headers it
  // returns go with that attempt only: a signature over the time, such as S3's. Never shown.
  std::function<std::vector<std::string>()> sign_request{};
  // What messages call the source ("s3://bucket/key"); "" for the URL without its query.
  std::string display_name{};
  // The problem to report for a refused request (a status other than 2xx, 412 and 416), given
  // its status and the first 64 KiB of its body (a store's XML error); nullopt keeps "HTTP
  // <status>". Whether the request is retried does not change.
  std::function<std::optional<Error>(long status, std::string_view body)> describe_refusal{};
};

}  // namespace onnxzip

#endif  // ONNXZIP_HTTP_OPTIONS_H_
