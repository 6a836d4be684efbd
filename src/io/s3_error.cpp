#include "s3_error.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "xml_answer.h"

namespace onnxzip::s3 {
namespace {

// The store's own words are shown, but not at any length.
constexpr std::size_t kMaxQuotedMessage = 200;

std::string printable(std::string_view text, std::size_t limit) {
  std::string out;
  for (const char c : text) {
    if (out.size() >= limit) {
      out += "...";
      break;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7F) out.push_back(c);
  }
  return out;
}

// What to do about a store's error Code; "" when there is nothing to say beyond the code.
std::string advice(std::string_view code, const Location& location, std::string_view region) {
  if (code == "SignatureDoesNotMatch") {
    return "check the secret key (AWS_SECRET_ACCESS_KEY or the profile's aws_secret_access_key) "
           "and the region, and that the clock is right";
  }
  if (code == "InvalidAccessKeyId") {
    return "the store does not know this access key id: check AWS_ACCESS_KEY_ID or the "
           "profile's aws_access_key_id, and the endpoint (AWS_ENDPOINT_URL)";
  }
  if (code == "AccessDenied" || code == "AllAccessDisabled") {
    return "these credentials may not do this: check the bucket's policy and the user's "
           "permissions for bucket '" +
           location.bucket + "'";
  }
  if (code == "ExpiredToken" || code == "TokenRefreshRequired" || code == "InvalidToken") {
    return "the session token has expired or is not valid: get new credentials";
  }
  if (code == "RequestTimeTooSkewed") return "the clock of this machine is wrong: set it right";
  if (code == "NoSuchKey") {
    return "bucket '" + location.bucket + "' has no object '" + location.key + "'";
  }
  if (code == "NoSuchBucket") return "there is no bucket '" + location.bucket + "'";
  if (code == "PermanentRedirect" || code == "AuthorizationHeaderMalformed" ||
      code == "IllegalLocationConstraintException") {
    return region.empty() ? "the bucket is in another region: set AWS_REGION to it"
                          : "the bucket is in region " + std::string(region) +
                                ": set AWS_REGION=" + std::string(region);
  }
  if (code == "SlowDown" || code == "ServiceUnavailable") return "the store asks to slow down";
  if (code == "PreconditionFailed" || code == "ConditionalRequestConflict") {
    return "the object changed meanwhile (or exists, for a write that must not replace it)";
  }
  return "";
}

}  // namespace

StoreRefusal store_refusal(long status, std::string_view body, const Location& location,
                           std::string_view bucket_region, std::string_view doing) {
  std::string code;
  std::string message;
  std::string region(bucket_region);
  try {
    const XmlAnswer answer = parse_xml_answer(body);
    if (answer.root == "Error") {
      code = printable(answer.field("Code"), 64);
      message = printable(answer.field("Message"), kMaxQuotedMessage);
      if (region.empty()) region = printable(answer.field("Region"), 64);
    }
  } catch (const Error&) {
    // Not the store's XML (a proxy's page, an empty HEAD answer): the status says what we know.
  }
  if (code.empty()) {
    switch (status) {
      case 301:
        code = "PermanentRedirect";
        break;
      case 403:
        code = "AccessDenied";
        break;
      case 404:
        code = "NoSuchKey";  // A HEAD has no body; the bucket may be missing too.
        break;
      case 412:
        code = "PreconditionFailed";
        break;
      case 503:
        code = "SlowDown";
        break;
      default:
        break;
    }
  }
  const bool region_ok = std::all_of(region.begin(), region.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
  });
  if (!region_ok) region.clear();

  std::string problem = std::string(doing) + " failed: HTTP " + std::to_string(status);
  if (!code.empty()) problem += " " + code;
  if (!message.empty()) problem += " (\"" + message + "\")";
  if (const std::string what_to_do = advice(code, location, region); !what_to_do.empty()) {
    problem += "; " + what_to_do;
  }
  const bool retryable = status >= 500 || status == 429 || status == 408 || code == "SlowDown";
  const ErrorCode error_code = status == 404 ? ErrorCode::kNotFound : ErrorCode::kIo;
  return {Error(error_code, {.file = display_name(location)}, problem), retryable, code};
}

}  // namespace onnxzip::s3
