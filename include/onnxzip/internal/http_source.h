// Archives over HTTP(S): a ByteSource whose reads are range requests (RFC 9110 §14), with libcurl.
//
// HttpSource::open makes one request, a suffix range (`Range: bytes=-tail_size`), which gives the
// file's size (Content-Range), its validator (a strong ETag, else Last-Modified) and its last
// bytes, kept: an .onnxz archive ends with its central directory and its model, so that one
// request is usually all an open of the archive reads (spec "Reading over HTTP"). Every later
// request carries `If-Range` and `If-Match` (`If-Unmodified-Since` for a date) with that
// validator, and each answer is checked before a byte of it is used: a file replaced or edited in
// place between requests is Error(kIo) "the remote file changed while it was read", never a mix
// of two files. A 200 to a range request is refused (a server that ignores Range), except for the
// first request when the whole file is no larger than tail_size; so is a 206 whose Content-Range
// is not the range asked for or names another size, a Content-Length other than the range's, and
// a body longer than its range. 5xx answers, connection failures, bodies cut short and bodies
// that stall for stall_timeout are retried `retries` times with doubling delays, resuming at the
// byte reached; any other status fails at once, naming it. Messages name the URL without its
// user, query and fragment (a presigned URL's credentials) and never show request headers.
//
// libcurl follows redirects (at most max_redirects, http and https only), verifies TLS against
// the system's CA store, and honours the proxy variables (http_proxy, https_proxy, no_proxy).
// The library builds without libcurl (CMake option ONNXZIP_WITH_CURL): http_available() is then
// false and open() is Error(kUnsupported). Any module may use this header.
#ifndef ONNXZIP_HTTP_SOURCE_H_
#define ONNXZIP_HTTP_SOURCE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "onnxzip/bytes.h"
#include "onnxzip/http_options.h"
#include "onnxzip/internal/byte_source.h"
#include "onnxzip/progress.h"

namespace onnxzip {

// What a source has asked for so far.
struct HttpStats {
  std::uint64_t requests = 0;  // Every attempt counts.
  std::uint64_t bytes = 0;     // Body bytes received.
};

// Whether this build reads URLs (it was built with libcurl).
bool http_available() noexcept;
// Whether `text` is an http:// or https:// URL (the scheme in any case).
bool is_url(std::string_view text) noexcept;
// The URL as messages show it: scheme, host, port and path; no user, query or fragment.
std::string display_url(std::string_view url);

class HttpSource final : public ByteSource {
 public:
  // Makes the first request (see the header comment). Errors: kUnsupported without libcurl;
  // kInvalidArgument for a URL that is not http(s) or a header without ':'; kIo naming the URL
  // for a failed request (the HTTP status, or what went wrong, after the retries).
  static std::shared_ptr<const HttpSource> open(const std::string& url,
                                                const HttpOptions& options = {});

  ~HttpSource() override;
  HttpSource(const HttpSource&) = delete;
  HttpSource& operator=(const HttpSource&) = delete;

  Access access() const noexcept override { return Access::kRanges; }
  std::uint64_t size() const noexcept override;
  const std::string& name() const noexcept override;
  // One request, unless the bytes are in the first request's tail (no request: a view of it).
  TensorBytes read(std::uint64_t offset, std::uint64_t length) const override;
  void read_into(std::uint64_t offset, MutableByteSpan out) const override;
  // One request per range not in the tail, up to max_parallel at once.
  std::vector<TensorBytes> read_ranges(std::span<const ByteRange> ranges) const override;
  // HttpOptions::tail_size: the open's request brought that much of the end.
  std::uint64_t tail_size_held() const noexcept override;

  // Hands every byte of [offset, offset + length) to `sink(at, piece)`: pieces of piece_size
  // bytes, up to max_parallel requests at once; each request's bytes come in order, each byte
  // once, and calls may come from several threads at once (never two for the same piece).
  // `progress` gets the bytes received. An exception from `sink` ends the fetch and propagates.
  void fetch(std::uint64_t offset, std::uint64_t length,
             const std::function<void(std::uint64_t at, ByteSpan piece)>& sink,
             const ProgressCallback& progress = nullptr) const;

  // The last bytes the first request brought, and where they start.
  ByteSpan tail() const noexcept;
  std::uint64_t tail_offset() const noexcept;
  HttpStats stats() const noexcept;
  // The options it was opened with.
  const HttpOptions& options() const noexcept;
  // The first answer's strong ETag, quotes included ("" when it had none): the version every
  // later read is checked against, and the one an edit of the object in a bucket replaces.
  const std::string& etag() const noexcept;

  struct State;

 private:
  explicit HttpSource(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace onnxzip

#endif  // ONNXZIP_HTTP_SOURCE_H_
