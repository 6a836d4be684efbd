#include "s3_client.h"

#include <charconv>
#include <string>
#include <thread>
#include <utility>

#include "onnxzip/error.h"
#include "s3_error.h"
#include "s3_sigv4.h"
#include "xml_answer.h"

namespace onnxzip::s3 {
namespace {

// An answer's <Error> Code that asks for the same request again later.
bool retryable_code(std::string_view code) {
  return code == "InternalError" || code == "SlowDown" || code == "ServiceUnavailable" ||
         code == "RequestTimeout";
}

// The XML answer of a 2xx, whose fields the call needs: a body that is not XML is the store's
// fault, named as such.
XmlAnswer parse_answer(const HttpAnswer& answer, const Location& location, std::string_view doing) {
  try {
    return parse_xml_answer(answer.body);
  } catch (const Error& error) {
    throw Error(error.code(), {.file = display_name(location)},
                std::string(doing) + ": " + error.problem());
  }
}

std::string required_field(const XmlAnswer& answer, const std::string& name,
                           const Location& location, std::string_view doing) {
  std::string value = answer.field(name);
  if (value.empty()) {
    throw Error(
        ErrorCode::kCorrupt, {.file = display_name(location)},
        std::string(doing) + ": the store's answer <" + answer.root + "> has no <" + name + ">");
  }
  return value;
}

std::string xml_escaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

// The CompleteMultipartUpload body: each part's number, ETag and (when sent) CRC-32.
std::string parts_xml(std::span<const UploadedPart> parts) {
  std::string xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">";
  for (const UploadedPart& part : parts) {
    xml += "<Part><PartNumber>" + std::to_string(part.number) + "</PartNumber><ETag>" +
           xml_escaped(part.etag) + "</ETag>";
    if (part.crc32) xml += "<ChecksumCRC32>" + crc32_base64(*part.crc32) + "</ChecksumCRC32>";
    xml += "</Part>";
  }
  return xml + "</CompleteMultipartUpload>";
}

ByteSpan bytes_of(std::string_view text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

}  // namespace

std::string crc32_base64(std::uint32_t crc) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  // Four bytes are 32 bits: five whole sextets, the sixth padded with zeros, then "==".
  const std::uint64_t bits = std::uint64_t{crc} << 4;
  std::string out;
  for (int shift = 30; shift >= 0; shift -= 6) out.push_back(kAlphabet[(bits >> shift) & 63]);
  return out + "==";
}

Client::Client(Config config, ClientOptions options)
    : config_(std::move(config)), options_(options) {}

HttpAnswer Client::attempt(const Call& call, const std::string& name) {
  const Target where = target(config_, call.location);
  const std::string payload_sha256 =
      call.sign_body ? sha256_hex(call.body) : std::string(kUnsignedPayload);
  const SigV4Request request{.method = call.method,
                             .host = where.host,
                             .encoded_path = where.encoded_path,
                             .query = call.query,
                             .headers = call.headers,
                             .payload_sha256 = payload_sha256};
  const SignedHeaders signed_headers =
      sign(request, config_.credentials, config_.region, std::chrono::system_clock::now());
  HttpRequest http{.method = call.method,
                   .url = where.url,
                   .body = call.body,
                   .connect_timeout = options_.connect_timeout,
                   .stall_timeout = options_.stall_timeout};
  if (!call.query.empty()) http.url += "?" + canonical_query(call.query);
  // The Host signed, sent as signed.
  http.headers.push_back("Host: " + where.host);
  for (const NameValue& header : call.headers)
    http.headers.push_back(header.name + ": " + header.value);
  for (const NameValue& header : signed_headers.headers) {
    http.headers.push_back(header.name + ": " + header.value);
  }
  requests_.fetch_add(1);
  return http_.perform(http, name);
}

HttpAnswer Client::send(const Call& call) {
  const std::string name = display_name(call.location);
  std::chrono::milliseconds delay = options_.retry_delay;
  for (unsigned attempt_number = 0;; ++attempt_number) {
    HttpAnswer answer = attempt(call, name);
    std::optional<StoreRefusal> refusal;
    if (answer.status == 0) {
      refusal = StoreRefusal{
          Error(ErrorCode::kIo, {.file = name}, call.doing + " failed: " + answer.transport_error),
          answer.transport_retryable, ""};
    } else if (answer.status == 404 && call.missing_ok) {
      return answer;
    } else if ((answer.status == 404 || answer.status == 412) && call.check_refusal) {
      return answer;
    } else if (answer.status < 200 || answer.status > 299) {
      refusal = store_refusal(answer.status, answer.body, call.location,
                              answer.header("x-amz-bucket-region"), call.doing);
    } else if (call.error_in_ok && answer.body.find("<Error>") != std::string::npos) {
      // S3 answers 200 before it knows how a Complete or a copy ends: the body says.
      refusal = store_refusal(answer.status, answer.body, call.location, "", call.doing);
      refusal->retryable = retryable_code(refusal->code);
    } else {
      return answer;
    }
    if (!refusal->retryable || attempt_number >= options_.retries) {
      if (!refusal->retryable || attempt_number == 0) throw refusal->error;
      throw Error(refusal->error.code(), {.file = name},
                  refusal->error.problem() + " (after " + std::to_string(attempt_number + 1) +
                      " attempts)");
    }
    std::this_thread::sleep_for(delay);
    delay *= 2;
  }
}

std::string Client::create_multipart_upload(const Location& location, bool crc32_full_object) {
  Call call{.method = "POST", .location = location, .query = {{"uploads", ""}}};
  if (crc32_full_object) {
    call.headers = {{"x-amz-checksum-algorithm", "CRC32"}, {"x-amz-checksum-type", "FULL_OBJECT"}};
  }
  call.doing = "starting the upload (CreateMultipartUpload)";
  const HttpAnswer answer = send(call);
  const XmlAnswer xml = parse_answer(answer, location, call.doing);
  return required_field(xml, "UploadId", location, call.doing);
}

UploadedPart Client::upload_part(const Location& location, const std::string& upload_id,
                                 unsigned number, ByteSpan bytes, std::uint32_t crc32) {
  const Call call{.method = "PUT",
                  .location = location,
                  .query = {{"partNumber", std::to_string(number)}, {"uploadId", upload_id}},
                  .headers = {{"x-amz-checksum-crc32", crc32_base64(crc32)}},
                  .body = bytes,
                  .sign_body = false,  // The signed CRC-32 checks the bytes; SHA-256 would cost.
                  .doing = "uploading part " + std::to_string(number) + " (" +
                           std::to_string(bytes.size()) + " bytes)"};
  const HttpAnswer answer = send(call);
  const std::string etag = answer.header("etag");
  if (etag.empty()) {
    throw Error(ErrorCode::kCorrupt, {.file = display_name(location)},
                call.doing + ": the store's answer has no ETag");
  }
  return {number, etag, crc32};
}

UploadedPart Client::upload_part_copy(const Location& location, const std::string& upload_id,
                                      unsigned number, const CopySource& copy) {
  const std::uint64_t last = copy.first + copy.length - 1;
  const std::string range = "bytes=" + std::to_string(copy.first) + "-" + std::to_string(last);
  Call call{.method = "PUT",
            .location = location,
            .query = {{"partNumber", std::to_string(number)}, {"uploadId", upload_id}},
            .headers = {{"x-amz-copy-source", encode_path(copy.source.bucket, copy.source.key)},
                        {"x-amz-copy-source-range", range}},
            .doing = "copying " + display_name(copy.source) + " " + range + " into part " +
                     std::to_string(number),
            .error_in_ok = true};
  if (!copy.if_match.empty()) call.headers.push_back({"x-amz-copy-source-if-match", copy.if_match});
  const HttpAnswer answer = send(call);
  const XmlAnswer xml = parse_answer(answer, location, call.doing);
  return {number, required_field(xml, "ETag", location, call.doing), std::nullopt};
}

std::string Client::complete_multipart_upload(const Location& location,
                                              const std::string& upload_id,
                                              std::span<const UploadedPart> parts,
                                              const CompleteOptions& options) {
  const std::string body = parts_xml(parts);
  Call call{.method = "POST",
            .location = location,
            .query = {{"uploadId", upload_id}},
            .body = bytes_of(body),
            .doing = "completing the upload of " + std::to_string(parts.size()) + " parts",
            .error_in_ok = true};
  call.headers.push_back({"Content-Type", "application/xml"});
  if (options.full_object_crc32) {
    call.headers.push_back({"x-amz-checksum-crc32", crc32_base64(*options.full_object_crc32)});
    call.headers.push_back({"x-amz-checksum-type", "FULL_OBJECT"});
  }
  if (options.if_none_match) call.headers.push_back({"If-None-Match", "*"});
  if (!options.if_match.empty()) call.headers.push_back({"If-Match", options.if_match});
  call.check_refusal = options.full_object_crc32.has_value();
  const HttpAnswer answer = send(call);
  if (answer.status == 404 || answer.status == 412) {
    return completed_by_lost_attempt(location, upload_id, answer, *options.full_object_crc32,
                                     call.doing);
  }
  const XmlAnswer xml = parse_answer(answer, location, call.doing);
  std::string etag = xml.field("ETag");
  return etag.empty() ? answer.header("etag") : etag;
}

std::string Client::completed_by_lost_attempt(const Location& location,
                                              const std::string& upload_id,
                                              const HttpAnswer& answer, const std::uint32_t crc32,
                                              const std::string& doing) {
  const StoreRefusal refusal = store_refusal(answer.status, answer.body, location, "", doing);
  if (refusal.code != "NoSuchUpload") {
    if (answer.status != 412) throw refusal.error;
    // A repeated If-None-Match: * finds the object the lost attempt made -- or the condition
    // refused a first Complete, the object older (its bytes may even be the same). Only the
    // first leaves no upload behind; the second's is aborted here, as the caller would.
    const HttpAnswer aborted = send({.method = "DELETE",
                                     .location = location,
                                     .query = {{"uploadId", upload_id}},
                                     .doing = "aborting the upload (AbortMultipartUpload)",
                                     .missing_ok = true});
    if (aborted.status != 404) throw refusal.error;
  }
  const std::optional<ObjectHead> head = head_object(location, true);
  if (!head || head->crc32 != crc32_base64(crc32)) throw refusal.error;
  return head->etag;
}

void Client::abort_multipart_upload(const Location& location, const std::string& upload_id) {
  send({.method = "DELETE",
        .location = location,
        .query = {{"uploadId", upload_id}},
        .doing = "aborting the upload (AbortMultipartUpload)",
        .missing_ok = true});
}

std::vector<PendingUpload> Client::list_multipart_uploads(const std::string& bucket,
                                                          const std::string& prefix) {
  Call call{.method = "GET",
            .location = {bucket, ""},
            .query = {{"uploads", ""}},
            .doing = "listing the uploads in progress (ListMultipartUploads)"};
  if (!prefix.empty()) call.query.push_back({"prefix", prefix});
  const HttpAnswer answer = send(call);
  const XmlAnswer xml = parse_answer(answer, call.location, call.doing);
  std::vector<PendingUpload> uploads;
  for (const XmlRecord& record : xml.records) {
    if (record.name != "Upload") continue;
    const auto key = record.fields.find("Key");
    const auto id = record.fields.find("UploadId");
    if (key != record.fields.end() && id != record.fields.end()) {
      uploads.push_back({key->second, id->second});
    }
  }
  return uploads;
}

std::optional<ObjectHead> Client::head_object(const Location& location, const bool with_checksum) {
  Call call{.method = "HEAD",
            .location = location,
            .doing = "reading the object's size (HeadObject)",
            .missing_ok = true};
  if (with_checksum) call.headers.push_back({"x-amz-checksum-mode", "ENABLED"});
  const HttpAnswer answer = send(call);
  if (answer.status == 404) return std::nullopt;
  ObjectHead head{.etag = answer.header("etag"), .crc32 = answer.header("x-amz-checksum-crc32")};
  const std::string length = answer.header("content-length");
  const auto [end, ec] = std::from_chars(length.data(), length.data() + length.size(), head.size);
  if (ec != std::errc() || end != length.data() + length.size() || length.empty()) {
    throw Error(ErrorCode::kCorrupt, {.file = display_name(location)},
                "the store's HeadObject answer has no valid Content-Length");
  }
  return head;
}

}  // namespace onnxzip::s3
