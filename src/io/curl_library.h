// libcurl as the io layer uses it: loaded with dlopen the first time a URL is used (not linked:
// see curl_library.cpp), its easy handles kept between requests so connections are reused, and
// the options every transfer sets. Only compiled with ONNXZIP_HAVE_CURL; used by http_source.cpp
// (streamed ranged GETs) and http_request.cpp (one request, answer in memory).
#ifndef ONNXZIP_IO_CURL_LIBRARY_H_
#define ONNXZIP_IO_CURL_LIBRARY_H_

#include <curl/curl.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace onnxzip::curl {

// The functions of libcurl.so.4 onnxzip calls.
struct Api {
  decltype(&::curl_global_init) global_init = nullptr;
  decltype(&::curl_easy_init) easy_init = nullptr;
  decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&::curl_easy_reset) easy_reset = nullptr;
  decltype(&::curl_easy_setopt) easy_setopt = nullptr;
  decltype(&::curl_easy_perform) easy_perform = nullptr;
  decltype(&::curl_easy_strerror) easy_strerror = nullptr;
  decltype(&::curl_slist_append) slist_append = nullptr;
  decltype(&::curl_slist_free_all) slist_free_all = nullptr;
  std::string problem;  // Why it cannot be used; empty when it can.
};

// Loaded once, on first use. A handle or list exists only once it loaded (problem empty).
const Api& api();

struct HandleDeleter {
  void operator()(CURL* handle) const noexcept { api().easy_cleanup(handle); }
};
using Handle = std::unique_ptr<CURL, HandleDeleter>;

struct ListDeleter {
  void operator()(curl_slist* list) const noexcept { api().slist_free_all(list); }
};
using HeaderList = std::unique_ptr<curl_slist, ListDeleter>;

// Appends "Name: value" to `headers`; std::bad_alloc when libcurl cannot.
void append_header(HeaderList& headers, const std::string& line);

// Whether a transfer that failed with `code` may succeed when tried again (a refused or reset
// connection, a timeout, a body cut short).
bool retryable(CURLcode code);

// Easy handles between requests, so connections are reused. Thread-safe.
class HandlePool final {
 public:
  // An idle handle, else a new one. Error(kIo) naming `name` when libcurl cannot make one.
  Handle acquire(const std::string& name) const;
  // Back to the pool: only a handle whose transfer ended (not one abandoned mid-transfer).
  void release(Handle handle) const;

 private:
  mutable std::mutex mutex_;
  mutable std::vector<Handle> idle_;
};

// The options every transfer sets, after a reset of `handle`: `url`, no signals, http(s) only,
// the timeouts (a transfer slower than 1 byte/s for `stall_timeout` is aborted), the user agent.
// Redirects are not followed unless the caller sets CURLOPT_FOLLOWLOCATION after this.
void configure(CURL* handle, const std::string& url, std::chrono::milliseconds connect_timeout,
               std::chrono::seconds stall_timeout);

}  // namespace onnxzip::curl

#endif  // ONNXZIP_IO_CURL_LIBRARY_H_
