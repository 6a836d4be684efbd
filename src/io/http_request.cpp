#include "http_request.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "onnxzip/error.h"

#if ONNXZIP_HAVE_CURL
#include "curl_library.h"
#endif

namespace onnxzip {

std::string HttpAnswer::header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return value;
  }
  return "";
}

#if !ONNXZIP_HAVE_CURL

struct HttpClient::Handles {};
HttpClient::HttpClient() = default;
HttpClient::~HttpClient() = default;

HttpAnswer HttpClient::perform(const HttpRequest&, const std::string& name) const {
  throw Error(ErrorCode::kUnsupported, {.file = name},
              "this build of onnxzip cannot make HTTP requests (built without libcurl)");
}

#else  // ONNXZIP_HAVE_CURL

struct HttpClient::Handles {
  curl::HandlePool pool;
};

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

// One transfer: the body going out, the answer coming in.
struct Transfer {
  const HttpRequest* request = nullptr;
  std::size_t sent = 0;
  HttpAnswer answer;

  void on_header(std::string_view line) {
    if (line.starts_with("HTTP/")) {  // A new response (after 100 Continue): forget the last.
      const std::size_t space = line.find(' ');
      long status = 0;
      if (space != std::string_view::npos && line.size() >= space + 4) {
        std::from_chars(line.data() + space + 1, line.data() + space + 4, status);
      }
      answer.status = status;
      answer.headers.clear();
      answer.body.clear();
      answer.body_size = 0;
      return;
    }
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    answer.headers.emplace_back(std::move(name), std::string(trim(line.substr(colon + 1))));
  }

  void on_body(const char* data, std::size_t size) {
    const std::size_t room = request->max_answer_body - answer.body.size();
    answer.body.append(data, std::min(room, size));
    answer.body_size += size;
  }

  // libcurl rewinds the body when an answer came before all of it was sent (a 503 to a part).
  bool rewind(curl_off_t offset) {
    if (offset < 0 || static_cast<std::uint64_t>(offset) > request->body.size()) return false;
    sent = static_cast<std::size_t>(offset);
    return true;
  }

  std::size_t fill(char* out, std::size_t capacity) {
    const std::size_t count = std::min(capacity, request->body.size() - sent);
    std::memcpy(out, request->body.data() + sent, count);
    sent += count;
    return count;
  }
};

extern "C" std::size_t on_request_header(char* data, std::size_t size, std::size_t count,
                                         void* user) {
  static_cast<Transfer*>(user)->on_header(std::string_view(data, size * count));
  return size * count;
}

extern "C" std::size_t on_request_body(char* data, std::size_t size, std::size_t count,
                                       void* user) {
  static_cast<Transfer*>(user)->on_body(data, size * count);
  return size * count;
}

extern "C" std::size_t on_request_upload(char* out, std::size_t size, std::size_t count,
                                         void* user) {
  return static_cast<Transfer*>(user)->fill(out, size * count);
}

extern "C" int on_request_seek(void* user, curl_off_t offset, int origin) {
  if (origin != SEEK_SET) return CURL_SEEKFUNC_CANTSEEK;
  return static_cast<Transfer*>(user)->rewind(offset) ? CURL_SEEKFUNC_OK : CURL_SEEKFUNC_FAIL;
}

// The method, and the body for one that has one: every method but GET, HEAD and DELETE sends
// its body (maybe empty) as an upload with a known length, read from memory.
void set_method(CURL* handle, Transfer& transfer) {
  const curl::Api& api = curl::api();
  const std::string& method = transfer.request->method;
  if (method == "HEAD") {
    api.easy_setopt(handle, CURLOPT_NOBODY, 1L);
    return;
  }
  if (method == "GET") return;
  if (method != "DELETE") {
    api.easy_setopt(handle, CURLOPT_UPLOAD, 1L);
    api.easy_setopt(handle, CURLOPT_READFUNCTION, on_request_upload);
    api.easy_setopt(handle, CURLOPT_READDATA, &transfer);
    api.easy_setopt(handle, CURLOPT_SEEKFUNCTION, on_request_seek);
    api.easy_setopt(handle, CURLOPT_SEEKDATA, &transfer);
    api.easy_setopt(handle, CURLOPT_INFILESIZE_LARGE,
                    static_cast<curl_off_t>(transfer.request->body.size()));
  }
  if (method != "PUT") api.easy_setopt(handle, CURLOPT_CUSTOMREQUEST, method.c_str());
}

curl::HeaderList header_list(const HttpRequest& request, const std::string& name) {
  curl::HeaderList headers;
  for (const std::string& line : request.headers) {
    if (line.find_first_of("\r\n") != std::string::npos || line.find(':') == std::string::npos) {
      throw Error(ErrorCode::kInvalidArgument, {.file = name},
                  "a request header must be 'Name: value' on one line");
    }
    curl::append_header(headers, line);
  }
  // No "Expect: 100-continue" round trip before a body (the answer to a refused part comes
  // anyway), and no Content-Type the caller did not ask for.
  curl::append_header(headers, "Expect:");
  curl::append_header(headers, "Accept-Encoding: identity");
  return headers;
}

}  // namespace

HttpClient::HttpClient() : handles_(std::make_unique<Handles>()) {}
HttpClient::~HttpClient() = default;

HttpAnswer HttpClient::perform(const HttpRequest& request, const std::string& name) const {
  if (const std::string& problem = curl::api().problem; !problem.empty()) {
    throw Error(ErrorCode::kUnsupported, {.file = name},
                "cannot make HTTP requests: libcurl cannot be loaded (" + problem + ")");
  }
  const curl::HeaderList headers = header_list(request, name);
  curl::Handle handle = handles_->pool.acquire(name);
  const curl::Api& api = curl::api();
  Transfer transfer;
  transfer.request = &request;
  curl::configure(handle.get(), request.url, request.connect_timeout, request.stall_timeout);
  set_method(handle.get(), transfer);
  api.easy_setopt(handle.get(), CURLOPT_HTTPHEADER, headers.get());
  api.easy_setopt(handle.get(), CURLOPT_HEADERFUNCTION, on_request_header);
  api.easy_setopt(handle.get(), CURLOPT_HEADERDATA, &transfer);
  api.easy_setopt(handle.get(), CURLOPT_WRITEFUNCTION, on_request_body);
  api.easy_setopt(handle.get(), CURLOPT_WRITEDATA, &transfer);
  const CURLcode code = api.easy_perform(handle.get());
  if (code != CURLE_OK) {
    transfer.answer.status = 0;
    transfer.answer.transport_error = api.easy_strerror(code);
    transfer.answer.transport_retryable = curl::retryable(code);
    return std::move(transfer.answer);  // The handle may be mid-transfer: not reused.
  }
  handles_->pool.release(std::move(handle));
  return std::move(transfer.answer);
}

#endif  // ONNXZIP_HAVE_CURL

}  // namespace onnxzip
