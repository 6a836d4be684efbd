// PEM keys for __SIGNATURE: ECDSA on P-256 only (spec §12.3), read by OpenSSL.
#include <openssl/core_names.h>
#include <openssl/decoder.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <array>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "onnxzip/error.h"
#include "onnxzip/integrity.h"
#include "openssl_handles.h"

namespace onnxzip {
namespace {

using integrity_detail::BioPtr;
using integrity_detail::openssl_reason;
using integrity_detail::PkeyPtr;

// A key file is a few hundred bytes; anything much larger is not one.
constexpr std::uintmax_t kMaxKeyFileSize = 64 * 1024;

std::vector<std::uint8_t> read_key_file(const std::filesystem::path& path) {
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error) {
    throw Error(
        error == std::errc::no_such_file_or_directory ? ErrorCode::kNotFound : ErrorCode::kIo,
        path.string() + ": cannot read the key: " + error.message());
  }
  if (size > kMaxKeyFileSize) {
    throw Error(ErrorCode::kInvalidArgument, {.file = path.string()},
                std::to_string(size) + " bytes, too large for a PEM key (at most " +
                    std::to_string(kMaxKeyFileSize) + ")");
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    throw Error(ErrorCode::kIo, {.file = path.string()}, "cannot read the key");
  }
  return bytes;
}

BioPtr memory_bio(ByteSpan bytes) {
  BioPtr bio(BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())));
  if (!bio) throw Error(ErrorCode::kIo, "OpenSSL cannot allocate a buffer: " + openssl_reason());
  return bio;
}

// "an RSA", "an EC", "a DSA": the article English gives a key type's name as it is read aloud
// (each letter of an acronym), so by its first letter's spoken sound.
std::string with_article(std::string_view type) {
  constexpr std::string_view kVowelSounds = "AEFHILMNORSXaeiou";
  const bool an = !type.empty() && kVowelSounds.find(type.front()) != std::string_view::npos;
  return (an ? "an " : "a ") + std::string(type);
}

// Refuses what is not an EC key on P-256, the one curve spec §12.3 allows.
void check_p256(EVP_PKEY* pkey, std::string_view source, std::string_view kind) {
  char group[64] = {};
  std::size_t length = 0;
  if (EVP_PKEY_is_a(pkey, "EC") != 1 ||
      EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group,
                                     &length) != 1 ||
      std::string_view(group, length) != "prime256v1") {
    openssl_reason();
    throw Error(ErrorCode::kInvalidArgument, {.file = std::string(source)},
                "not an ECDSA P-256 (prime256v1) " + std::string(kind) + " (" +
                    with_article(EVP_PKEY_get0_type_name(pkey)) +
                    (length > 0 ? " key on " + std::string(group, length) : std::string(" key")) +
                    "); make one with: openssl ecparam -name prime256v1 -genkey -noout");
  }
}

struct DecoderFree {
  void operator()(OSSL_DECODER_CTX* decoder) const noexcept { OSSL_DECODER_CTX_free(decoder); }
};

// No password callback: an encrypted key fails instead of prompting on a terminal.
int refuse_password(char* /*buffer*/, int /*size*/, int /*writing*/, void* /*data*/) { return 0; }

// The EC key in `pem`, by OpenSSL's decoders for PEM text of an EC key only: a private key
// (EVP_PKEY_KEYPAIR; SEC1 or PKCS #8), or a public one (EVP_PKEY_PUBLIC_KEY; the
// SubjectPublicKeyInfo that PEM_read_bio_PUBKEY reads); null for anything else. The general readers
// (PEM_read_bio_PrivateKey...) try every decoder OpenSSL has, which was most of a key's load
// time: they stay for what this does not take, and say what it is.
PkeyPtr read_ec_pem(ByteSpan pem, int selection) {
  EVP_PKEY* decoded = nullptr;
  const std::unique_ptr<OSSL_DECODER_CTX, DecoderFree> decoder(
      OSSL_DECODER_CTX_new_for_pkey(&decoded, "PEM", nullptr, "EC", selection, nullptr, nullptr));
  PkeyPtr pkey;
  if (decoder && OSSL_DECODER_CTX_set_pem_password_cb(decoder.get(), refuse_password, nullptr) &&
      OSSL_DECODER_from_bio(decoder.get(), memory_bio(pem).get()) == 1) {
    pkey.reset(decoded);
  }
  openssl_reason();  // A refusal here is no error: the general reader follows.
  return pkey;
}

// The DER of a P-256 SubjectPublicKeyInfo (RFC 5480) up to its 65-byte uncompressed point:
// SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING { 0 unused bits, point } }.
constexpr std::array<std::uint8_t, 26> kP256InfoHead = {
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
    0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00};

// The key's SubjectPublicKeyInfo as OpenSSL's encoder writes it, when that is the fixed head and
// the point: a P-256 key on its named curve, point uncompressed (OpenSSL writes a key read with
// explicit parameters or a compressed point that way again). Empty for any other key.
std::vector<std::uint8_t> p256_info(EVP_PKEY* pkey) {
  char encoding[32] = {};
  char form[32] = {};
  std::array<std::uint8_t, 65> point{};
  std::size_t length = 0;
  if (EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_EC_ENCODING, encoding, sizeof encoding,
                                     nullptr) != 1 ||
      std::string_view(encoding) != OSSL_PKEY_EC_ENCODING_GROUP ||
      EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT, form,
                                     sizeof form, nullptr) != 1 ||
      std::string_view(form) != OSSL_PKEY_EC_POINT_CONVERSION_FORMAT_UNCOMPRESSED ||
      EVP_PKEY_get_octet_string_param(pkey, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point.data(),
                                      point.size(), &length) != 1 ||
      length != point.size() || point[0] != 0x04) {
    openssl_reason();
    return {};
  }
  std::vector<std::uint8_t> info(kP256InfoHead.begin(), kP256InfoHead.end());
  info.insert(info.end(), point.begin(), point.end());
  return info;
}

// The key id: SHA-256 of the PEM SubjectPublicKeyInfo as `openssl ec -pubout` writes it. A P-256
// key's is PEM text of its fixed DER, without OpenSSL's encoders, whose setup took longer than
// signing; any other key's comes from them.
std::string key_id_of(EVP_PKEY* pkey) {
  const BioPtr out(BIO_new(BIO_s_mem()));
  const std::vector<std::uint8_t> info = p256_info(pkey);
  const bool written =
      out && (info.empty() ? PEM_write_bio_PUBKEY(out.get(), pkey) == 1
                           : PEM_write_bio(out.get(), PEM_STRING_PUBLIC, "", info.data(),
                                           static_cast<long>(info.size())) > 0);
  if (!written) {
    throw Error(ErrorCode::kIo, "OpenSSL cannot encode a public key: " + openssl_reason());
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(out.get(), &data);
  return to_hex(Sha256::of(
      ByteSpan(reinterpret_cast<const std::uint8_t*>(data), static_cast<std::size_t>(size))));
}

// The public half, copied out through its DER encoding so the PublicKey holds no private part.
PkeyPtr public_half(EVP_PKEY* private_key) {
  unsigned char* der = nullptr;
  const int length = i2d_PUBKEY(private_key, &der);
  if (length <= 0) {
    throw Error(ErrorCode::kIo, "OpenSSL cannot encode a public key: " + openssl_reason());
  }
  const unsigned char* cursor = der;
  PkeyPtr pkey(d2i_PUBKEY(nullptr, &cursor, length));
  OPENSSL_free(der);
  if (!pkey) throw Error(ErrorCode::kIo, "OpenSSL cannot decode a public key: " + openssl_reason());
  return pkey;
}

}  // namespace

PrivateKey PrivateKey::from_pem(ByteSpan pem, std::string_view source) {
  if (pem.size() > kMaxKeyFileSize) {
    throw Error(ErrorCode::kInvalidArgument, {.file = std::string(source)},
                "too large for a PEM key");
  }
  PkeyPtr pkey = read_ec_pem(pem, EVP_PKEY_KEYPAIR);
  if (!pkey)
    pkey.reset(PEM_read_bio_PrivateKey(memory_bio(pem).get(), nullptr, refuse_password, nullptr));
  if (!pkey) {
    const std::string reason = openssl_reason();
    throw Error(ErrorCode::kInvalidArgument, std::string(source) +
                                                 ": not an unencrypted PEM private key" +
                                                 (reason.empty() ? "" : " (" + reason + ")"));
  }
  check_p256(pkey.get(), source, "private key");
  auto key = std::make_shared<Key>();
  key->key_id = key_id_of(pkey.get());  // Its SubjectPublicKeyInfo: the public part only.
  key->pkey = std::move(pkey);
  return PrivateKey(std::move(key));
}

PrivateKey PrivateKey::load(const std::filesystem::path& path) {
  return from_pem(read_key_file(path), path.string());
}

PublicKey PrivateKey::public_key() const {
  auto key = std::make_shared<PublicKey::Key>();
  key->pkey = public_half(key_->pkey.get());
  return PublicKey(std::move(key), key_->key_id);
}

std::string PrivateKey::key_id() const { return key_->key_id; }

PublicKey PublicKey::from_pem(ByteSpan pem, std::string_view source) {
  if (pem.size() > kMaxKeyFileSize) {
    throw Error(ErrorCode::kInvalidArgument, {.file = std::string(source)},
                "too large for a PEM key");
  }
  PkeyPtr pkey = read_ec_pem(pem, EVP_PKEY_PUBLIC_KEY);
  if (!pkey) pkey.reset(PEM_read_bio_PUBKEY(memory_bio(pem).get(), nullptr, nullptr, nullptr));
  if (!pkey) {
    const std::string reason = openssl_reason();
    throw Error(ErrorCode::kInvalidArgument, {.file = std::string(source)},
                "not a PEM public key (-----BEGIN PUBLIC KEY-----)" +
                    (reason.empty() ? "" : " (" + reason + ")"));
  }
  check_p256(pkey.get(), source, "public key");
  std::string id = key_id_of(pkey.get());
  auto key = std::make_shared<Key>();
  key->pkey = std::move(pkey);
  return PublicKey(std::move(key), std::move(id));
}

PublicKey PublicKey::load(const std::filesystem::path& path) {
  return from_pem(read_key_file(path), path.string());
}

}  // namespace onnxzip
