// The `__SIGNATURE` entry (spec §12.3): a Sigstore bundle v0.3 in its JSON form, holding a DSSE
// envelope over the `__DIGESTS` bytes signed with ECDSA P-256 / SHA-256, as model_signing's
// key-based signer writes it (public-key verification material whose hint is the key id, no
// transparency log entries).
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "json_input.h"
#include "message_text.h"
#include "onnxzip/error.h"
#include "onnxzip/integrity.h"
#include "onnxzip/internal/json_text.h"
#include "openssl_handles.h"

namespace onnxzip {
namespace {

using integrity_detail::Json;
using integrity_detail::JsonSource;
using integrity_detail::MdContextPtr;
using integrity_detail::openssl_reason;

constexpr std::string_view kBundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json";

// The characters of base64 (with padding) for `size` bytes.
std::size_t base64_size(std::size_t size) { return 4 * ((size + 2) / 3); }

// Writes base64 of `bytes` at `out`, which has room for base64_size(bytes.size()) + 1 characters
// (OpenSSL ends with a NUL), and returns base64_size(bytes.size()). In pieces of a multiple of 3
// bytes, which encode without padding, since EVP_EncodeBlock counts in an int.
std::size_t write_base64(ByteSpan bytes, char* out) {
  constexpr std::size_t kPiece = std::size_t{3} << 20;
  std::size_t written = 0;
  while (!bytes.empty()) {
    const ByteSpan piece = bytes.first(std::min(kPiece, bytes.size()));
    written +=
        static_cast<std::size_t>(EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out + written),
                                                 piece.data(), static_cast<int>(piece.size())));
    bytes = bytes.subspan(piece.size());
  }
  return written;
}

// The bytes as a JSON string of base64, encoded in place.
void base64_string(JsonText& json, ByteSpan bytes) {
  json.ascii_string(base64_size(bytes.size()) + 1,
                    [&](char* out) { return write_base64(bytes, out); });
}

// What DSSE's pre-authentication encoding puts before the payload.
std::string pae_head(std::string_view payload_type, std::size_t payload_size) {
  return "DSSEv1 " + std::to_string(payload_type.size()) + " " + std::string(payload_type) + " " +
         std::to_string(payload_size) + " ";
}

// Standard base64 with padding (protobuf's JSON form of bytes); nullopt for anything else.
std::optional<std::vector<std::uint8_t>> unbase64(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  if (text.empty()) return std::vector<std::uint8_t>{};
  std::vector<std::uint8_t> bytes(text.size() / 4 * 3);
  // EVP_DecodeBlock takes an int: the signature limit keeps the text far below 2^31.
  const int length =
      EVP_DecodeBlock(bytes.data(), reinterpret_cast<const unsigned char*>(text.data()),
                      static_cast<int>(text.size()));
  if (length < 0) return std::nullopt;
  // It decodes padding as zero bytes: those come off, and '=' may only end the text.
  std::size_t padding = 0;
  while (padding < 2 && text[text.size() - 1 - padding] == '=') ++padding;
  if (text.find('=') < text.size() - padding) return std::nullopt;
  bytes.resize(static_cast<std::size_t>(length) - padding);
  return bytes;
}

}  // namespace

std::vector<std::uint8_t> dsse_pae(std::string_view payload_type, ByteSpan payload) {
  const std::string head = pae_head(payload_type, payload.size());
  std::vector<std::uint8_t> pae(head.begin(), head.end());
  pae.insert(pae.end(), payload.begin(), payload.end());
  return pae;
}

void prepare_signing() noexcept {
  // The private generator, made and seeded when first asked for: ECDSA draws its nonce from it.
  RAND_get0_private(nullptr);
  ERR_clear_error();  // Whatever failed fails again, and is reported, in encode_signature.
}

std::string encode_signature(ByteSpan digests, const PrivateKey& key) {
  // The PAE signed in two pieces, its head and the payload where it is: no copy of the payload.
  const std::string head = pae_head(kInTotoPayloadType, digests.size());
  const MdContextPtr context(EVP_MD_CTX_new());
  std::size_t length = 0;
  if (!context ||
      EVP_DigestSignInit(context.get(), nullptr, EVP_sha256(), nullptr, key.key().pkey.get()) !=
          1 ||
      EVP_DigestSignUpdate(context.get(), head.data(), head.size()) != 1 ||
      EVP_DigestSignUpdate(context.get(), digests.data(), digests.size()) != 1 ||
      EVP_DigestSignFinal(context.get(), nullptr, &length) != 1) {
    throw Error(ErrorCode::kIo, "__SIGNATURE: OpenSSL cannot sign: " + openssl_reason());
  }
  std::vector<std::uint8_t> signature(length);
  if (EVP_DigestSignFinal(context.get(), signature.data(), &length) != 1) {
    throw Error(ErrorCode::kIo, "__SIGNATURE: OpenSSL cannot sign: " + openssl_reason());
  }
  signature.resize(length);
  JsonText json(base64_size(digests.size()) + 1024);
  json.begin_object();
  json.key("mediaType");
  json.string(kBundleMediaType);
  json.key("verificationMaterial");
  json.begin_object();
  json.key("publicKey");
  json.begin_object();
  json.key("hint");
  json.string(key.key_id());
  json.end_object();
  json.key("tlogEntries");
  json.begin_array();
  json.end_array();
  json.end_object();
  json.key("dsseEnvelope");
  json.begin_object();
  json.key("payload");
  base64_string(json, digests);
  json.key("payloadType");
  json.string(kInTotoPayloadType);
  json.key("signatures");
  json.begin_array();
  json.begin_object();
  json.key("sig");
  base64_string(json, signature);
  json.key("keyid");
  json.string("");
  json.end_object();
  json.end_array();
  json.end_object();
  json.end_object();
  return std::move(json).finish();
}

SignatureBundle decode_signature(ByteSpan json, const IntegrityLimits& limits,
                                 std::string_view source_name) {
  const JsonSource source{std::string(source_name), "entry " + detail::quote(kSignatureEntryName),
                          limits.max_signature_size, "IntegrityLimits::max_signature_size"};
  const Json document = integrity_detail::parse_json(json, source);
  integrity_detail::expect_object(document, "", source);
  integrity_detail::expect_string(document, "mediaType", kBundleMediaType, "", source);
  const Json& material =
      integrity_detail::object_member(document, "verificationMaterial", "", source);
  const Json& public_key =
      integrity_detail::object_member(material, "publicKey", "verificationMaterial", source);
  SignatureBundle bundle;
  bundle.key_hint =
      integrity_detail::string_member(public_key, "hint", "verificationMaterial.publicKey", source);
  const Json& envelope = integrity_detail::object_member(document, "dsseEnvelope", "", source);
  bundle.payload_type =
      integrity_detail::string_member(envelope, "payloadType", "dsseEnvelope", source);
  const std::string& payload =
      integrity_detail::string_member(envelope, "payload", "dsseEnvelope", source);
  auto payload_bytes = unbase64(payload);
  if (!payload_bytes) source.fail("dsseEnvelope.payload is not base64");
  bundle.payload = std::move(*payload_bytes);
  const Json& signatures =
      integrity_detail::array_member(envelope, "signatures", "dsseEnvelope", source);
  if (signatures.size() != 1) {
    source.fail("dsseEnvelope.signatures has " + std::to_string(signatures.size()) +
                " items, expected 1");
  }
  const std::string& sig =
      integrity_detail::string_member(signatures[0], "sig", "dsseEnvelope.signatures[0]", source);
  auto signature = unbase64(sig);
  if (!signature || signature->empty()) {
    source.fail("dsseEnvelope.signatures[0].sig is not a non-empty base64 string");
  }
  bundle.signature = std::move(*signature);
  return bundle;
}

std::string signature_problem(const SignatureBundle& bundle, ByteSpan digests,
                              const PublicKey& key) {
  if (bundle.key_hint != key.key_id()) {
    return "signed by another key (key id " + bundle.key_hint + ", the key given has " +
           key.key_id() + ")";
  }
  if (bundle.payload_type != kInTotoPayloadType) {
    return "its payload type is " + detail::quote(bundle.payload_type) + ", expected " +
           detail::quote(kInTotoPayloadType);
  }
  if (!std::equal(bundle.payload.begin(), bundle.payload.end(), digests.begin(), digests.end())) {
    return "its payload is not the __DIGESTS entry";
  }
  const std::vector<std::uint8_t> pae = dsse_pae(bundle.payload_type, bundle.payload);
  const MdContextPtr context(EVP_MD_CTX_new());
  if (!context || EVP_DigestVerifyInit(context.get(), nullptr, EVP_sha256(), nullptr,
                                       key.key().pkey.get()) != 1) {
    throw Error(ErrorCode::kIo, "__SIGNATURE: OpenSSL cannot verify: " + openssl_reason());
  }
  const int verdict = EVP_DigestVerify(context.get(), bundle.signature.data(),
                                       bundle.signature.size(), pae.data(), pae.size());
  openssl_reason();  // A bad DER signature leaves errors queued; they are this verdict.
  return verdict == 1 ? "" : "the signature does not verify with the key given";
}

}  // namespace onnxzip
