#include "onnxzip/internal/http_source.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "onnxzip/error.h"
#include "onnxzip/internal/byte_source.h"
#include "read_range.h"

#if ONNXZIP_HAVE_CURL
#include "curl_library.h"
#endif

namespace onnxzip {

bool is_url(std::string_view text) noexcept {
  const auto starts = [&](std::string_view scheme) {
    if (text.size() < scheme.size()) return false;
    for (std::size_t i = 0; i < scheme.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(text[i])) != scheme[i]) return false;
    }
    return true;
  };
  return starts("http://") || starts("https://");
}

std::string display_url(std::string_view url) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos)
    return std::string(url.substr(0, url.find_first_of("?#")));
  std::string_view rest = url.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find_first_of("?#"));
  // A user (and password) before the host is a credential.
  const std::size_t authority_end = rest.find('/');
  const std::string_view authority = rest.substr(0, authority_end);
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    rest = rest.substr(at + 1);
  }
  return std::string(url.substr(0, scheme_end + 3)) + std::string(rest);
}

#if !ONNXZIP_HAVE_CURL

bool http_available() noexcept { return false; }

struct HttpSource::State {};

std::shared_ptr<const HttpSource> HttpSource::open(const std::string& url, const HttpOptions&) {
  throw Error(
      ErrorCode::kUnsupported,
      display_url(url) + ": this build of onnxzip cannot read URLs (built without libcurl)");
}

HttpSource::HttpSource(std::unique_ptr<State> state) : state_(std::move(state)) {}
HttpSource::~HttpSource() = default;
std::uint64_t HttpSource::size() const noexcept { return 0; }
const std::string& HttpSource::name() const noexcept {
  static const std::string kNone;
  return kNone;
}
TensorBytes HttpSource::read(std::uint64_t, std::uint64_t) const { return {}; }
void HttpSource::read_into(std::uint64_t, MutableByteSpan) const {}
std::vector<TensorBytes> HttpSource::read_ranges(std::span<const ByteRange>) const { return {}; }
void HttpSource::fetch(std::uint64_t, std::uint64_t,
                       const std::function<void(std::uint64_t, ByteSpan)>&,
                       const ProgressCallback&) const {}
ByteSpan HttpSource::tail() const noexcept { return {}; }
std::uint64_t HttpSource::tail_offset() const noexcept { return 0; }
HttpStats HttpSource::stats() const noexcept { return {}; }
const HttpOptions& HttpSource::options() const noexcept {
  static const HttpOptions kDefaults;
  return kDefaults;
}
const std::string& HttpSource::etag() const noexcept {
  static const std::string kNone;
  return kNone;
}

#else  // ONNXZIP_HAVE_CURL

bool http_available() noexcept { return true; }

namespace {

bool iequals_prefix(std::string_view line, std::string_view name) {
  if (line.size() < name.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  }
  return true;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

std::optional<std::uint64_t> parse_number(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

struct ContentRange {
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  std::uint64_t total = 0;
};

// "bytes FIRST-LAST/TOTAL"; nullopt for anything else (an unknown total included).
std::optional<ContentRange> parse_content_range(std::string_view value) {
  if (!value.starts_with("bytes ")) return std::nullopt;
  value.remove_prefix(6);
  const std::size_t dash = value.find('-');
  const std::size_t slash = value.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash) {
    return std::nullopt;
  }
  const auto first = parse_number(value.substr(0, dash));
  const auto last = parse_number(value.substr(dash + 1, slash - dash - 1));
  const auto total = parse_number(value.substr(slash + 1));
  if (!first || !last || !total || *last < *first || *last >= *total) return std::nullopt;
  return ContentRange{*first, *last, *total};
}

// What went wrong with one attempt, and whether another attempt may do better.
struct Failure {
  bool retryable = false;
  ErrorCode code = ErrorCode::kIo;
  std::string message;
};

}  // namespace

struct HttpSource::State {
  std::string url;
  std::string name;  // display_url(url).
  HttpOptions options;
  std::uint64_t size = 0;
  // The first response's validator: a strong ETag, else a Last-Modified date; empty for none.
  std::string etag;
  std::string last_modified;
  std::shared_ptr<OwnedBytes> tail_buffer;
  ByteSpan tail;
  std::uint64_t tail_offset = 0;
  mutable std::atomic<std::uint64_t> requests{0};
  mutable std::atomic<std::uint64_t> bytes{0};
  curl::HandlePool handles;
};

namespace {

// The most of a refused request's body kept for HttpOptions::describe_refusal.
constexpr std::size_t kMaxRefusalBody = std::size_t{64} << 10;

// One request for bytes [first, first + length) (or, for the open, the last `length` bytes),
// its body handed to `sink` as it comes.
struct Exchange {
  const HttpSource::State* state = nullptr;
  bool suffix = false;  // The open's `Range: bytes=-length`.
  std::uint64_t first = 0;
  std::uint64_t length = 0;
  // Where each body byte goes: (offset in the file, bytes). False aborts (failure set).
  std::function<bool(std::uint64_t, ByteSpan)> sink;

  // The response (the last one, after redirects).
  long status = 0;
  std::optional<ContentRange> content_range;
  bool bad_content_range = false;
  std::optional<std::uint64_t> content_length;
  std::string etag;
  std::string last_modified;
  bool checked = false;        // The headers were checked at the first body byte.
  std::uint64_t received = 0;  // Over every attempt.
  std::uint64_t resume = 0;    // `received` when this attempt began: it asks for the rest.
  // Bytes [body_first, body_first + body_length) are what the body holds.
  std::uint64_t body_first = 0;
  std::uint64_t body_length = 0;
  std::optional<Failure> failure;
  std::exception_ptr sink_error;
  // A refused request's body, for HttpOptions::describe_refusal.
  std::string refusal_body;

  std::string asked() const {
    return suffix ? "the last " + std::to_string(length) + " bytes"
                  : "bytes " + std::to_string(first) + "-" + std::to_string(first + length - 1);
  }

  void fail(bool retryable, std::string message, ErrorCode code = ErrorCode::kIo) {
    if (!failure) failure = Failure{retryable, code, std::move(message)};
  }

  // The file is no longer the one the open saw: another attempt would mix two files' bytes.
  void fail_changed(const std::string& how) {
    fail(false, "the remote file changed while it was read: " + how);
  }

  void on_header(std::string_view line) {
    if (line.starts_with("HTTP/")) {  // A new response (after a redirect, or 100 Continue).
      const std::size_t space = line.find(' ');
      status = space == std::string_view::npos
                   ? 0
                   : static_cast<long>(parse_number(line.substr(space + 1, 3)).value_or(0));
      content_range.reset();
      refusal_body.clear();
      bad_content_range = false;
      content_length.reset();
      etag.clear();
      last_modified.clear();
      return;
    }
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    const std::string_view value = trim(line.substr(colon + 1));
    const std::string_view header = line.substr(0, colon + 1);
    if (iequals_prefix(header, "content-range:")) {
      content_range = parse_content_range(value);
      bad_content_range = !content_range;
    } else if (iequals_prefix(header, "content-length:")) {
      content_length = parse_number(value);
    } else if (iequals_prefix(header, "etag:")) {
      etag = std::string(value);
    } else if (iequals_prefix(header, "last-modified:")) {
      last_modified = std::string(value);
    }
  }

  // The response's headers against what was asked, at its first body byte (or its end): on
  // false, `failure` says why, unless the status is judged when the transfer ends.
  bool check_headers() {
    checked = true;
    if (status == 200) return suffix ? accept_whole_file_as_tail() : refuse_whole_file();
    if (status != 206) return false;  // Judged when the transfer ends.
    if (!content_range) {
      fail(false, "HTTP 206 without a valid Content-Range for " + asked(), ErrorCode::kCorrupt);
      return false;
    }
    const std::uint64_t got = content_range->last - content_range->first + 1;
    if (!(suffix ? check_tail_range(got) : check_asked_range(got))) return false;
    if (content_length && *content_length != got) {
      fail(false,
           "the answer's Content-Length (" + std::to_string(*content_length) +
               ") is not its Content-Range's length (" + std::to_string(got) + ")",
           ErrorCode::kCorrupt);
      return false;
    }
    body_first = suffix ? content_range->first : first;
    body_length = suffix ? got : length;
    return true;
  }

  // A 200 to the open's suffix request is the whole file: fine when it fits what was asked for
  // (then it is the tail).
  bool accept_whole_file_as_tail() {
    if (content_length && *content_length > length) {
      fail(false,
           "the server does not answer range requests (HTTP 200 with the whole file of " +
               std::to_string(*content_length) + " bytes to a request for " + asked() + ")",
           ErrorCode::kUnsupported);
      return false;
    }
    body_first = 0;
    body_length = content_length.value_or(length);
    return true;
  }

  // A 200 to a range request: the validator failed If-Range, or ranges are not served at all.
  bool refuse_whole_file() {
    const HttpSource::State& s = *state;
    if (etag_changed()) {
      fail_changed("its ETag was " + s.etag + ", it is now " + etag);
    } else if (!s.etag.empty() || !s.last_modified.empty()) {
      fail_changed("If-Range was not met (HTTP 200 instead of 206 for " + asked() + ")");
    } else {
      fail(false,
           "the server does not answer range requests (HTTP 200 to a request for " + asked() + ")",
           ErrorCode::kUnsupported);
    }
    return false;
  }

  // The open's 206 must end at the file's end and hold no more than was asked for.
  bool check_tail_range(std::uint64_t got) {
    if (got <= length && content_range->last + 1 == content_range->total) return true;
    fail(false, "the answer's Content-Range (" + describe_content_range() + ") is not " + asked(),
         ErrorCode::kCorrupt);
    return false;
  }

  // A later 206 must be of the file the open saw, and be exactly the rest of the range asked for.
  bool check_asked_range(std::uint64_t got) {
    const HttpSource::State& s = *state;
    if (content_range->total != s.size) {
      fail_changed("its size was " + std::to_string(s.size) + " bytes, it is now " +
                   std::to_string(content_range->total));
      return false;
    }
    if (content_range->first != first + resume || got != length - resume) {
      fail(false,
           "the answer's Content-Range (" + describe_content_range() +
               ") is not the range asked for (" + asked() + ")",
           ErrorCode::kCorrupt);
      return false;
    }
    if (etag_changed()) {
      fail_changed("its ETag was " + s.etag + ", it is now " + etag);
      return false;
    }
    return true;
  }

  // Both the open's and this response's ETag are known, and they differ.
  bool etag_changed() const { return !state->etag.empty() && !etag.empty() && etag != state->etag; }

  std::string describe_content_range() const {
    return "bytes " + std::to_string(content_range->first) + "-" +
           std::to_string(content_range->last) + "/" + std::to_string(content_range->total);
  }

  bool on_body(ByteSpan piece) {
    if (status != 206 && status != 200) {
      if (!state->options.describe_refusal) return false;
      const std::size_t room = kMaxRefusalBody - refusal_body.size();
      refusal_body.append(reinterpret_cast<const char*>(piece.data()),
                          std::min(room, piece.size()));
      return piece.size() <= room;
    }
    if (!checked && !check_headers()) return false;
    if (piece.size() > body_length - received) {
      fail(false,
           "the body is longer than the " + std::to_string(body_length) + " bytes asked for (" +
               asked() + ")",
           ErrorCode::kCorrupt);
      return false;
    }
    try {
      if (!sink(body_first + received, piece)) return false;
    } catch (...) {
      sink_error = std::current_exception();
      return false;
    }
    received += piece.size();
    state->bytes.fetch_add(piece.size(), std::memory_order_relaxed);
    return true;
  }
};

extern "C" std::size_t on_header_line(char* data, std::size_t size, std::size_t count, void* user) {
  static_cast<Exchange*>(user)->on_header(std::string_view(data, size * count));
  return size * count;
}

extern "C" std::size_t on_body_bytes(char* data, std::size_t size, std::size_t count, void* user) {
  const ByteSpan piece(reinterpret_cast<const std::uint8_t*>(data), size * count);
  return static_cast<Exchange*>(user)->on_body(piece) ? size * count : 0;
}

std::string status_words(long status) {
  switch (status) {
    case 401:
      return "401 Unauthorized";
    case 403:
      return "403 Forbidden";
    case 404:
      return "404 Not Found";
    case 412:
      return "412 Precondition Failed";
    case 416:
      return "416 Range Not Satisfiable";
    default:
      return std::to_string(status);
  }
}

// The options every attempt sets on its handle, reset first: where, what may be followed, how
// long to wait, and where the answer goes.
void configure_transfer(CURL* handle, Exchange& exchange) {
  const curl::Api& api = curl::api();
  const HttpSource::State& s = *exchange.state;
  const HttpOptions& o = s.options;
  curl::configure(handle, s.url, o.connect_timeout, o.stall_timeout);
  // With max_redirects 0 a redirect is an answer like any other (describe_refusal judges it).
  api.easy_setopt(handle, CURLOPT_FOLLOWLOCATION, o.max_redirects > 0 ? 1L : 0L);
  api.easy_setopt(handle, CURLOPT_MAXREDIRS, o.max_redirects);
  api.easy_setopt(handle, CURLOPT_HEADERFUNCTION, on_header_line);
  api.easy_setopt(handle, CURLOPT_HEADERDATA, &exchange);
  api.easy_setopt(handle, CURLOPT_WRITEFUNCTION, on_body_bytes);
  api.easy_setopt(handle, CURLOPT_WRITEDATA, &exchange);
  // Bodies handed over in pieces of up to 512 KiB rather than 16 KiB: a whole-archive read
  // (convert_remote) makes one pwrite per piece.
  api.easy_setopt(handle, CURLOPT_BUFFERSIZE, 512L * 1024);
}

// The attempt's request headers: the caller's, then the bytes still missing, which a later
// request asks for only if the file is still the one the open saw (its validator).
curl::HeaderList request_headers(const Exchange& exchange) {
  const HttpSource::State& s = *exchange.state;
  curl::HeaderList headers;
  for (const std::string& line : s.options.headers) curl::append_header(headers, line);
  // Bodies as stored: a compressed one could not be cut into ranges.
  curl::append_header(headers, "Accept-Encoding: identity");
  std::string range;
  if (exchange.suffix) {
    range = "Range: bytes=-" + std::to_string(exchange.length);
  } else {
    range = "Range: bytes=" + std::to_string(exchange.first + exchange.resume) + "-" +
            std::to_string(exchange.first + exchange.length - 1);
    if (!s.etag.empty()) {
      curl::append_header(headers, "If-Range: " + s.etag);
      curl::append_header(headers, "If-Match: " + s.etag);
    } else if (!s.last_modified.empty()) {
      curl::append_header(headers, "If-Range: " + s.last_modified);
      curl::append_header(headers, "If-Unmodified-Since: " + s.last_modified);
    }
  }
  curl::append_header(headers, range);
  if (s.options.sign_request) {
    for (const std::string& line : s.options.sign_request()) curl::append_header(headers, line);
  }
  return headers;
}

// A 200 or 206 whose transfer ended: its headers hold, and every byte of its body came.
void judge_body_answer(Exchange& exchange) {
  if (!exchange.checked && !exchange.check_headers()) return;
  // A whole file sent without its length (chunked) ends where it ends.
  if (exchange.status == 200 && exchange.suffix && !exchange.content_length) {
    exchange.body_length = exchange.received;
  }
  if (exchange.received < exchange.body_length) {
    exchange.fail(true, "the body was cut at offset " +
                            std::to_string(exchange.body_first + exchange.received) + " (" +
                            exchange.asked() + ")");
  }
}

// Any other status: a failed precondition is a changed file; the rest are refusals, some of
// them transient.
void judge_refusal(Exchange& exchange) {
  const HttpSource::State& s = *exchange.state;
  const long status = exchange.status;
  if (status == 412) {
    exchange.fail_changed((s.etag.empty() ? "it was modified after " + s.last_modified
                                          : "its ETag is no longer " + s.etag) +
                          " (HTTP 412 for " + exchange.asked() + ")");
    return;
  }
  const bool retry = status >= 500 || status == 408 || status == 429;
  if (s.options.describe_refusal) {
    if (const std::optional<Error> refusal =
            s.options.describe_refusal(status, exchange.refusal_body)) {
      exchange.fail(retry, refusal->problem(), refusal->code());
      return;
    }
  }
  const ErrorCode error_code = status == 404 ? ErrorCode::kNotFound : ErrorCode::kIo;
  exchange.fail(retry, "HTTP " + status_words(status) + " (" + exchange.asked() + ")", error_code);
}

// One attempt of `exchange` on `handle`; a Failure when it did not bring every byte.
void perform(CURL* handle, Exchange& exchange) {
  configure_transfer(handle, exchange);
  const curl::HeaderList headers = request_headers(exchange);
  curl::api().easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get());
  exchange.state->requests.fetch_add(1, std::memory_order_relaxed);
  const CURLcode code = curl::api().easy_perform(handle);
  if (exchange.sink_error) std::rethrow_exception(exchange.sink_error);
  if (exchange.failure) return;  // Set while the answer came (its headers, or its body).
  if (code != CURLE_OK && code != CURLE_WRITE_ERROR) {
    exchange.fail(curl::retryable(code),
                  std::string(curl::api().easy_strerror(code)) + " (" + exchange.asked() + ")");
  } else if (exchange.status == 206 || exchange.status == 200) {
    judge_body_answer(exchange);
  } else {
    judge_refusal(exchange);
  }
}

// `exchange` with retries, each resuming at the byte reached.
void run(const HttpSource::State& s, Exchange& exchange) {
  curl::Handle handle = s.handles.acquire(s.name);
  std::chrono::milliseconds delay = s.options.retry_delay;
  for (unsigned attempt = 0;; ++attempt) {
    exchange.failure.reset();
    exchange.checked = false;
    if (exchange.suffix && exchange.received > 0) {
      // The first response said which bytes the tail is: the rest of them is an ordinary range.
      exchange.suffix = false;
      exchange.first = exchange.body_first;
      exchange.length = exchange.body_length;
    }
    exchange.resume = exchange.received;
    perform(handle.get(), exchange);
    if (!exchange.failure) break;
    if (!exchange.failure->retryable || attempt >= s.options.retries) {
      const std::string attempts = exchange.failure->retryable && attempt > 0
                                       ? " (after " + std::to_string(attempt + 1) + " attempts)"
                                       : "";
      // The handle may be mid-transfer: it is not reused.
      throw Error(exchange.failure->code, {.file = s.name}, exchange.failure->message + attempts);
    }
    std::this_thread::sleep_for(delay);
    delay *= 2;
  }
  s.handles.release(std::move(handle));
}

// Runs `work(i)` for i in [0, count) on up to `parallel` threads; the first exception stops the
// rest and propagates.
void run_parallel(std::size_t count, unsigned parallel,
                  const std::function<void(std::size_t)>& work) {
  if (count == 0) return;
  const std::size_t threads = std::min<std::size_t>(count, std::max(1U, parallel));
  if (threads == 1) {
    for (std::size_t i = 0; i < count; ++i) work(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (std::size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      while (!stop.load()) {
        const std::size_t i = next.fetch_add(1);
        if (i >= count) return;
        try {
          work(i);
        } catch (...) {
          const std::lock_guard lock(error_mutex);
          if (!error) error = std::current_exception();
          stop = true;
        }
      }
    });
  }
  for (std::thread& thread : pool) thread.join();
  if (error) std::rethrow_exception(error);
}

// Refuses what no request could make right: not a URL, a malformed header, no tail, no libcurl.
void check_open_arguments(const std::string& url, const HttpOptions& options) {
  if (!is_url(url)) {
    throw Error(ErrorCode::kInvalidArgument, {.file = display_url(url)},
                "not an http:// or https:// URL");
  }
  for (const std::string& header : options.headers) {
    if (header.find(':') == std::string::npos ||
        header.find_first_of("\r\n") != std::string::npos) {
      // The header's text is not shown: it may be a credential.
      throw Error(ErrorCode::kInvalidArgument, {.file = display_url(url)},
                  "a request header must be 'Name: value' on one line");
    }
  }
  if (options.tail_size == 0) {
    throw Error(ErrorCode::kInvalidArgument, {.file = display_url(url)},
                "HttpOptions::tail_size is 0");
  }
  if (const std::string& problem = curl::api().problem; !problem.empty()) {
    throw Error(ErrorCode::kUnsupported, {.file = display_url(url)},
                "cannot read URLs: libcurl cannot be loaded (" + problem + ")");
  }
}

// The tail's bytes as they come, in one buffer allocated at the first of them.
struct TailBuffer {
  std::shared_ptr<OwnedBytes> bytes;
  std::size_t lead = 0;  // Bytes before the tail's first.

  // The first byte at an address congruent to its offset modulo 64 (byte_source.h).
  void allocate(std::uint64_t offset, std::uint64_t length) {
    lead = static_cast<std::size_t>(offset % kDefaultBufferAlignment);
    bytes = std::make_shared<OwnedBytes>(lead + static_cast<std::size_t>(length));
  }
  // `piece` at `at` bytes into the tail.
  void store(std::uint64_t at, ByteSpan piece) {
    std::memcpy(bytes->mutable_span().data() + lead + at, piece.data(), piece.size());
  }
};

// The first response fixes the size and validator that later ones are checked against.
void adopt_first_answer(HttpSource::State& state, const Exchange& exchange) {
  state.size = exchange.status == 200 ? exchange.body_length : exchange.content_range->total;
  if (exchange.etag.starts_with('"')) {
    state.etag = exchange.etag;  // Strong: a weak one (W/"...") cannot guard ranges.
  } else {
    state.last_modified = exchange.last_modified;
  }
}

// The open's tail in `state`, once `exchange` brought all of it into `tail`.
void keep_tail(HttpSource::State& state, const Exchange& exchange, TailBuffer tail) {
  if (!tail.bytes) {  // An empty body: an empty file (200), or a 206 of nothing.
    if (exchange.status == 200 && exchange.body_length == 0) {
      state.size = 0;
      tail.bytes = std::make_shared<OwnedBytes>(0);
    } else {
      throw Error(ErrorCode::kCorrupt, {.file = state.name}, "the first answer had no body");
    }
  }
  if (exchange.status == 200) state.size = exchange.body_length;
  state.tail_offset = exchange.body_first;
  state.tail_buffer = tail.bytes;
  state.tail =
      tail.bytes->span().subspan(tail.lead, static_cast<std::size_t>(exchange.body_length));
}

// The open's one request, for the last tail_size bytes (the whole file when it is smaller): its
// answer also tells the file's size and validator.
void read_tail(HttpSource::State& state) {
  Exchange exchange;
  exchange.state = &state;
  exchange.suffix = true;
  exchange.length = state.options.tail_size;
  const std::uint64_t capacity = state.options.tail_size + kDefaultBufferAlignment;
  if (!fits(0, capacity, std::uint64_t{PTRDIFF_MAX})) {
    throw Error(ErrorCode::kLimitExceeded, {.file = state.name},
                "HttpOptions::tail_size is too large");
  }
  TailBuffer tail;
  exchange.sink = [&](std::uint64_t at, ByteSpan piece) {
    if (!tail.bytes) {
      adopt_first_answer(state, exchange);
      tail.allocate(exchange.body_first, exchange.body_length);
    }
    tail.store(at - exchange.body_first, piece);
    return true;
  };
  run(state, exchange);
  keep_tail(state, exchange, std::move(tail));
}

}  // namespace

std::shared_ptr<const HttpSource> HttpSource::open(const std::string& url,
                                                   const HttpOptions& options) {
  check_open_arguments(url, options);
  auto state = std::make_unique<State>();
  state->url = url;
  state->name = options.display_name.empty() ? display_url(url) : options.display_name;
  state->options = options;
  read_tail(*state);
  return std::shared_ptr<const HttpSource>(new HttpSource(std::move(state)));
}

HttpSource::HttpSource(std::unique_ptr<State> state) : state_(std::move(state)) {}
HttpSource::~HttpSource() = default;

std::uint64_t HttpSource::size() const noexcept { return state_->size; }
const std::string& HttpSource::name() const noexcept { return state_->name; }
ByteSpan HttpSource::tail() const noexcept { return state_->tail; }
std::uint64_t HttpSource::tail_offset() const noexcept { return state_->tail_offset; }
HttpStats HttpSource::stats() const noexcept {
  return {state_->requests.load(), state_->bytes.load()};
}
const HttpOptions& HttpSource::options() const noexcept { return state_->options; }
const std::string& HttpSource::etag() const noexcept { return state_->etag; }

TensorBytes HttpSource::read(std::uint64_t offset, std::uint64_t length) const {
  detail::check_read_range(*this, offset, length);
  const State& s = *state_;
  if (offset >= s.tail_offset) {
    return TensorBytes::borrowed(s.tail.subspan(static_cast<std::size_t>(offset - s.tail_offset),
                                                static_cast<std::size_t>(length)),
                                 s.tail_buffer);
  }
  if (length > s.options.max_read_size) {
    throw Error(ErrorCode::kLimitExceeded, {.file = s.name},
                "a read of " + std::to_string(length) + " bytes at offset " +
                    std::to_string(offset) + " is more than HttpOptions::max_read_size (" +
                    std::to_string(s.options.max_read_size) + ")");
  }
  const std::size_t lead = static_cast<std::size_t>(offset % kDefaultBufferAlignment);
  const auto buffer = std::make_shared<OwnedBytes>(lead + static_cast<std::size_t>(length));
  const MutableByteSpan bytes = buffer->mutable_span().subspan(lead);
  read_into(offset, bytes);
  return TensorBytes::borrowed(bytes, buffer);
}

void HttpSource::read_into(std::uint64_t offset, MutableByteSpan out) const {
  detail::check_read_range(*this, offset, out.size());
  const State& s = *state_;
  if (out.empty()) return;
  // The part in the tail costs no request.
  if (offset + out.size() > s.tail_offset) {
    const std::uint64_t from = std::max(offset, s.tail_offset);
    const std::size_t count = static_cast<std::size_t>(offset + out.size() - from);
    std::memcpy(out.data() + (from - offset), s.tail.data() + (from - s.tail_offset), count);
    out = out.first(out.size() - count);
    if (out.empty()) return;
  }
  Exchange exchange;
  exchange.state = &s;
  exchange.first = offset;
  exchange.length = out.size();
  exchange.sink = [&](std::uint64_t at, ByteSpan piece) {
    std::memcpy(out.data() + (at - offset), piece.data(), piece.size());
    return true;
  };
  run(s, exchange);
}

std::vector<TensorBytes> HttpSource::read_ranges(std::span<const ByteRange> ranges) const {
  for (const ByteRange& range : ranges) detail::check_read_range(*this, range.offset, range.length);
  std::vector<TensorBytes> out(ranges.size());
  run_parallel(ranges.size(), state_->options.max_parallel,
               [&](std::size_t i) { out[i] = read(ranges[i].offset, ranges[i].length); });
  return out;
}

void HttpSource::fetch(std::uint64_t offset, std::uint64_t length,
                       const std::function<void(std::uint64_t at, ByteSpan piece)>& sink,
                       const ProgressCallback& progress) const {
  detail::check_read_range(*this, offset, length);
  const State& s = *state_;
  std::uint64_t remote_end = offset + length;
  const std::uint64_t tail_from = std::max(offset, s.tail_offset);
  const bool in_tail = offset + length > s.tail_offset;
  if (in_tail) remote_end = tail_from;
  const std::uint64_t piece_size = std::max<std::uint64_t>(1, s.options.piece_size);
  const std::uint64_t remote = remote_end - offset;
  const std::size_t pieces = static_cast<std::size_t>((remote + piece_size - 1) / piece_size);
  std::mutex progress_mutex;
  std::uint64_t done = 0;
  const auto advance = [&](std::uint64_t count) {
    if (!progress) return;
    const std::lock_guard lock(progress_mutex);
    done += count;
    progress(done, length);
  };
  if (progress) progress(0, length);
  run_parallel(pieces, s.options.max_parallel, [&](std::size_t i) {
    Exchange exchange;
    exchange.state = &s;
    exchange.first = offset + i * piece_size;
    exchange.length = std::min(piece_size, remote_end - exchange.first);
    exchange.sink = [&](std::uint64_t at, ByteSpan piece) {
      sink(at, piece);
      advance(piece.size());
      return true;
    };
    run(s, exchange);
  });
  if (in_tail) {
    const ByteSpan held = s.tail.subspan(static_cast<std::size_t>(tail_from - s.tail_offset),
                                         static_cast<std::size_t>(offset + length - tail_from));
    sink(tail_from, held);
    advance(held.size());
  }
}

#endif  // ONNXZIP_HAVE_CURL

std::uint64_t HttpSource::tail_size_held() const noexcept { return options().tail_size; }

}  // namespace onnxzip
