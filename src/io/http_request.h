// One HTTP request whose answer is kept in memory: any method, a query already in the URL, the
// caller's headers, a body from memory (sent again as it is on a retry), and an answer body
// bounded in size. The object store's requests (s3_client.h) are made with it; the streamed,
// ranged reads of an archive are HttpSource's (http_source.h). It neither retries nor judges a
// status: the caller knows what an answer means.
#ifndef ONNXZIP_IO_HTTP_REQUEST_H_
#define ONNXZIP_IO_HTTP_REQUEST_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onnxzip/bytes.h"

namespace onnxzip {

struct HttpRequest {
  std::string method = "GET";          // "HEAD" expects no body.
  std::string url;                     // With its query, encoded.
  std::vector<std::string> headers{};  // "Name: value", each on one line. Never shown.
  ByteSpan body{};                     // Borrowed for the call; sent with Content-Length.
  std::size_t max_answer_body = std::size_t{1} << 20;  // Kept at most; the rest is counted.
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::seconds stall_timeout{30};
};

struct HttpAnswer {
  // 0 when no answer came whole: `transport_error` says why.
  long status = 0;
  // The final response's headers: names in lower case, values trimmed, in order.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;                  // Its first max_answer_body bytes.
  std::size_t body_size = 0;         // Every byte the body had.
  std::string transport_error;       // libcurl's words; "" when an answer came whole.
  bool transport_retryable = false;  // The failure may not happen again (a reset, a timeout).

  // The header's value, "" when absent. `lower_name` in lower case.
  std::string header(std::string_view lower_name) const;
};

// Makes requests, keeping connections open between them. Thread-safe.
class HttpClient final {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `request` once. A status of any kind is an answer, not an error. Errors:
  // Error(kUnsupported) naming `name` when this build or machine has no libcurl;
  // Error(kInvalidArgument) for a header with a line break (its text not shown).
  HttpAnswer perform(const HttpRequest& request, const std::string& name) const;

 private:
  struct Handles;
  std::unique_ptr<Handles> handles_;
};

}  // namespace onnxzip

#endif  // ONNXZIP_IO_HTTP_REQUEST_H_
