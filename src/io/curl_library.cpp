#if ONNXZIP_HAVE_CURL

#include "curl_library.h"

#include <dlfcn.h>

#include <new>

#include "onnxzip/error.h"

namespace onnxzip::curl {
namespace {

// libcurl, loaded the first time a URL is opened rather than linked: linked, it and the ~30
// libraries it needs (GnuTLS, LDAP, Kerberos, ...) were loaded, relocated and initialized by every
// run of every program using onnxzip, more CPU and page faults than an in-place edit of a 1 GiB
// archive takes (bench/edit_bench.cpp). The soname is the one libcurl4 has had since 2006.
constexpr const char* kCurlLibrary = "libcurl.so.4";

template <class Function>
void find_symbol(void* library, const char* name, Function& function, std::string& problem) {
  function = reinterpret_cast<Function>(::dlsym(library, name));
  if (function == nullptr && problem.empty()) {
    problem = std::string(kCurlLibrary) + " has no " + name;
  }
}

Api load() {
  Api loaded;
  // Never closed: handles may outlive any one source.
  void* const library = ::dlopen(kCurlLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* reason = ::dlerror();
    loaded.problem = reason != nullptr ? reason : std::string("cannot load ") + kCurlLibrary;
    return loaded;
  }
  std::string& problem = loaded.problem;
  find_symbol(library, "curl_global_init", loaded.global_init, problem);
  find_symbol(library, "curl_easy_init", loaded.easy_init, problem);
  find_symbol(library, "curl_easy_cleanup", loaded.easy_cleanup, problem);
  find_symbol(library, "curl_easy_reset", loaded.easy_reset, problem);
  find_symbol(library, "curl_easy_setopt", loaded.easy_setopt, problem);
  find_symbol(library, "curl_easy_perform", loaded.easy_perform, problem);
  find_symbol(library, "curl_easy_strerror", loaded.easy_strerror, problem);
  find_symbol(library, "curl_slist_append", loaded.slist_append, problem);
  find_symbol(library, "curl_slist_free_all", loaded.slist_free_all, problem);
  if (problem.empty() && loaded.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    problem = "curl_global_init failed";
  }
  return loaded;
}

}  // namespace

const Api& api() {
  static const Api loaded = load();
  return loaded;
}

void append_header(HeaderList& headers, const std::string& line) {
  curl_slist* const grown = api().slist_append(headers.get(), line.c_str());
  if (grown == nullptr) throw std::bad_alloc();
  (void)headers.release();  // `grown` continues the list: freeing the old head would free it.
  headers.reset(grown);
}

bool retryable(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

Handle HandlePool::acquire(const std::string& name) const {
  {
    const std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      Handle handle = std::move(idle_.back());
      idle_.pop_back();
      return handle;
    }
  }
  Handle handle(api().easy_init());
  if (!handle) throw Error(ErrorCode::kIo, {.file = name}, "cannot start an HTTP client (libcurl)");
  return handle;
}

void HandlePool::release(Handle handle) const {
  const std::lock_guard lock(mutex_);
  idle_.push_back(std::move(handle));
}

void configure(CURL* handle, const std::string& url, std::chrono::milliseconds connect_timeout,
               std::chrono::seconds stall_timeout) {
  const Api& curl = api();
  curl.easy_reset(handle);
  curl.easy_setopt(handle, CURLOPT_URL, url.c_str());
  curl.easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  curl.easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 0L);
  curl.easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
  curl.easy_setopt(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl.easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect_timeout.count()));
  curl.easy_setopt(handle, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl.easy_setopt(handle, CURLOPT_LOW_SPEED_TIME, static_cast<long>(stall_timeout.count()));
  curl.easy_setopt(handle, CURLOPT_USERAGENT, "onnxzip");
}

}  // namespace onnxzip::curl

#endif  // ONNXZIP_HAVE_CURL
