// SHA-256 through OpenSSL's EVP interface (SHA-NI where the CPU has it).
#include <openssl/evp.h>

#include "onnxzip/error.h"
#include "onnxzip/integrity.h"
#include "openssl_handles.h"

namespace onnxzip {

struct Sha256::Context {
  integrity_detail::MdContextPtr md{EVP_MD_CTX_new()};
};

namespace {

void start(EVP_MD_CTX* md) {
  if (md == nullptr || EVP_DigestInit_ex(md, EVP_sha256(), nullptr) != 1) {
    // Only memory exhaustion or a broken OpenSSL installation gets here.
    throw Error(ErrorCode::kIo,
                "SHA-256: OpenSSL cannot start a digest: " + integrity_detail::openssl_reason());
  }
}

}  // namespace

Sha256::Sha256() : context_(std::make_unique<Context>()) { start(context_->md.get()); }
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&& other) noexcept = default;
Sha256& Sha256::operator=(Sha256&& other) noexcept = default;

void Sha256::update(ByteSpan bytes) {
  if (!context_) throw Error(ErrorCode::kBadState, "SHA-256: update on a moved-from hasher");
  if (EVP_DigestUpdate(context_->md.get(), bytes.data(), bytes.size()) != 1) {
    throw Error(ErrorCode::kIo, "SHA-256: " + integrity_detail::openssl_reason());
  }
}

Sha256Digest Sha256::finish() {
  if (!context_) throw Error(ErrorCode::kBadState, "SHA-256: finish on a moved-from hasher");
  Sha256Digest digest{};
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(context_->md.get(), digest.data(), &length) != 1 ||
      length != digest.size()) {
    throw Error(ErrorCode::kIo, "SHA-256: " + integrity_detail::openssl_reason());
  }
  start(context_->md.get());
  return digest;
}

Sha256Digest Sha256::of(ByteSpan bytes) {
  Sha256 hasher;
  hasher.update(bytes);
  return hasher.finish();
}

std::string to_hex(ByteSpan bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(bytes.size() * 2, '\0');
  char* out = text.data();
  for (const std::uint8_t byte : bytes) {
    *out++ = kDigits[byte >> 4];
    *out++ = kDigits[byte & 15];
  }
  return text;
}

Sha256Digest root_digest(std::span<const EntryDigest> entries) {
  Sha256 hasher;
  for (const EntryDigest& entry : entries) hasher.update(entry.sha256);
  return hasher.finish();
}

}  // namespace onnxzip
