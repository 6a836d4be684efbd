#include "s3_source.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "s3_error.h"
#include "s3_sigv4.h"

namespace onnxzip::s3 {
namespace {

// SHA-256 of no bytes: a GET has no body, and signing that costs nothing.
constexpr std::string_view kEmptyPayloadSha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

}  // namespace

std::shared_ptr<const HttpSource> open_source(std::string_view url, const HttpOptions& http,
                                              const S3Options& options,
                                              const Environment& environment) {
  const Location location = parse_s3_url(url);
  const std::string name = display_name(location);
  Config config = with_error_context([&] { return ErrorContext{.file = name}; },
                                     [&] { return resolve_config(options, environment); });
  const Target where = target(config, location);

  HttpOptions reading = http;
  reading.headers.clear();  // A caller's Authorization would fight the signature.
  reading.display_name = name;
  reading.max_redirects = 0;
  reading.sign_request = [config = std::move(config), where]() {
    const SigV4Request request{.method = "GET",
                               .host = where.host,
                               .encoded_path = where.encoded_path,
                               .payload_sha256 = kEmptyPayloadSha256};
    const SignedHeaders signed_headers =
        sign(request, config.credentials, config.region, std::chrono::system_clock::now());
    std::vector<std::string> lines;
    lines.reserve(signed_headers.headers.size() + 1);
    // The Host signed, sent as signed: whatever curl would make of an explicit default port.
    lines.push_back("Host: " + where.host);
    for (const NameValue& header : signed_headers.headers) {
      lines.push_back(header.name + ": " + header.value);
    }
    return lines;
  };
  reading.describe_refusal = [location](long status,
                                        std::string_view body) -> std::optional<Error> {
    return store_refusal(status, body, location, "", "reading").error;
  };
  return HttpSource::open(where.url, reading);
}

}  // namespace onnxzip::s3
