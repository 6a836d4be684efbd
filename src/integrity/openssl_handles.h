// Private to the integrity layer: OpenSSL objects held by unique_ptr, and the one way an OpenSSL
// failure becomes an onnxzip::Error (with OpenSSL's own reason, its error queue emptied).
#ifndef ONNXZIP_SRC_OPENSSL_HANDLES_H_
#define ONNXZIP_SRC_OPENSSL_HANDLES_H_

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include <memory>
#include <string>

#include "onnxzip/error.h"
#include "onnxzip/integrity.h"

namespace onnxzip::integrity_detail {

struct BioFree {
  void operator()(BIO* bio) const noexcept { BIO_free(bio); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};
struct MdContextFree {
  void operator()(EVP_MD_CTX* context) const noexcept { EVP_MD_CTX_free(context); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using MdContextPtr = std::unique_ptr<EVP_MD_CTX, MdContextFree>;

// OpenSSL's reason for the last failure ("" when it gave none); empties its error queue, so a
// failure leaves nothing behind for the next caller to misread.
inline std::string openssl_reason() {
  std::string reason;
  unsigned long code = 0;
  while ((code = ERR_get_error()) != 0) {
    char text[256];
    ERR_error_string_n(code, text, sizeof text);
    reason = text;  // The last one is the outermost.
  }
  return reason;
}

}  // namespace onnxzip::integrity_detail

// The key objects of integrity.h: the EVP_PKEY they hold.
struct onnxzip::PublicKey::Key {
  integrity_detail::PkeyPtr pkey;
};
struct onnxzip::PrivateKey::Key {
  integrity_detail::PkeyPtr pkey;
  // Its public key's id, worked out once: each signature names it, and the encoder that makes
  // the public key's PEM takes longer than the signing.
  std::string key_id;
};

#endif  // ONNXZIP_SRC_OPENSSL_HANDLES_H_
