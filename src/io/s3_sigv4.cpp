#include "s3_sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <ctime>

#include "onnxzip/error.h"

namespace onnxzip::s3 {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
constexpr std::string_view kService = "s3";
constexpr char kHexDigits[] = "0123456789abcdef";
constexpr char kUpperHexDigits[] = "0123456789ABCDEF";

bool unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

std::string to_hex(std::span<const unsigned char> bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const unsigned char byte : bytes) {
    out.push_back(kHexDigits[byte >> 4]);
    out.push_back(kHexDigits[byte & 0xF]);
  }
  return out;
}

using Digest = std::vector<unsigned char>;

Digest hmac_sha256(std::span<const unsigned char> key, std::string_view data) {
  Digest out(EVP_MAX_MD_SIZE);
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(),
           &length) == nullptr) {
    throw Error(ErrorCode::kIo, "HMAC-SHA256 failed (OpenSSL)");
  }
  out.resize(length);
  return out;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  });
  return out;
}

// SigV4's Trimall: no blanks at either end, each run of blanks inside one space.
std::string trim_all(std::string_view value) {
  std::string out;
  bool blank = false;
  for (const char c : value) {
    if (c == ' ' || c == '\t') {
      blank = !out.empty();
      continue;
    }
    if (blank) out.push_back(' ');
    blank = false;
    out.push_back(c);
  }
  return out;
}

ByteSpan text_bytes(std::string_view text) {
  return ByteSpan(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
}

bool has_line_break(std::string_view text) {
  return text.find_first_of("\r\n") != std::string_view::npos;
}

}  // namespace

std::string uri_encode(std::string_view text, bool keep_slash) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (unreserved(byte) || (keep_slash && byte == '/')) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kUpperHexDigits[byte >> 4]);
      out.push_back(kUpperHexDigits[byte & 0xF]);
    }
  }
  return out;
}

std::string encode_path(std::string_view bucket, std::string_view key) {
  std::string path = "/";
  if (!bucket.empty()) path += uri_encode(bucket, false) + "/";
  return path + uri_encode(key, true);
}

std::string canonical_query(std::span<const NameValue> query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const NameValue& parameter : query) {
    encoded.emplace_back(uri_encode(parameter.name, false), uri_encode(parameter.value, false));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out.push_back('&');
    out += name + "=" + value;
  }
  return out;
}

std::string amz_date(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  char text[sizeof "YYYYMMDDTHHMMSSZ"];
  const std::size_t length = std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &parts);
  return std::string(text, length);
}

std::string sha256_hex(ByteSpan bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw Error(ErrorCode::kIo, "SHA-256 failed (OpenSSL)");
  }
  return to_hex(std::span<const unsigned char>(digest, length));
}

SignedHeaders sign(const SigV4Request& request, const Credentials& credentials,
                   std::string_view region, std::chrono::system_clock::time_point time) {
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "S3 credentials need an access key and a secret key");
  }
  const std::string date_time = amz_date(time);
  const std::string_view date = std::string_view(date_time).substr(0, 8);

  SignedHeaders out;
  out.headers.push_back({"x-amz-date", date_time});
  out.headers.push_back({"x-amz-content-sha256", std::string(request.payload_sha256)});
  if (!credentials.session_token.empty()) {
    out.headers.push_back({"x-amz-security-token", credentials.session_token});
  }

  // Every signed header, lower-cased and sorted by name: a plain byte order puts
  // x-amz-copy-source before x-amz-copy-source-if-match and x-amz-copy-source-range.
  std::vector<std::pair<std::string, std::string>> signed_headers;
  signed_headers.emplace_back("host", trim_all(request.host));
  for (const std::span<const NameValue> list :
       {request.headers, std::span<const NameValue>(out.headers)}) {
    for (const NameValue& header : list) {
      if (has_line_break(header.name) || has_line_break(header.value)) {
        // The value is not shown: it may be a credential.
        throw Error(ErrorCode::kInvalidArgument,
                    "the request header '" + header.name + "' has a line break");
      }
      signed_headers.emplace_back(lower(trim_all(header.name)), trim_all(header.value));
    }
  }
  std::stable_sort(signed_headers.begin(), signed_headers.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string canonical_headers;
  std::string signed_names;
  for (std::size_t i = 0; i < signed_headers.size(); ++i) {
    const auto& [name, value] = signed_headers[i];
    if (i > 0 && signed_headers[i - 1].first == name) {
      canonical_headers += "," + value;  // A repeated header: its values in order, joined.
      continue;
    }
    if (i > 0) {
      canonical_headers += "\n";
      signed_names += ";";
    }
    canonical_headers += name + ":" + value;
    signed_names += name;
  }

  out.canonical_request = std::string(request.method) + "\n" + std::string(request.encoded_path) +
                          "\n" + canonical_query(request.query) + "\n" + canonical_headers +
                          "\n\n" + signed_names + "\n" + std::string(request.payload_sha256);
  const std::string scope =
      std::string(date) + "/" + std::string(region) + "/" + std::string(kService) + "/aws4_request";
  out.string_to_sign = std::string(kAlgorithm) + "\n" + date_time + "\n" + scope + "\n" +
                       sha256_hex(text_bytes(out.canonical_request));

  const std::string secret = "AWS4" + credentials.secret_access_key;
  Digest key = hmac_sha256(
      std::span(reinterpret_cast<const unsigned char*>(secret.data()), secret.size()), date);
  key = hmac_sha256(key, region);
  key = hmac_sha256(key, kService);
  key = hmac_sha256(key, "aws4_request");
  out.signature = to_hex(hmac_sha256(key, out.string_to_sign));
  out.headers.push_back({"Authorization", std::string(kAlgorithm) +
                                              " Credential=" + credentials.access_key_id + "/" +
                                              scope + ", SignedHeaders=" + signed_names +
                                              ", Signature=" + out.signature});
  return out;
}

}  // namespace onnxzip::s3
