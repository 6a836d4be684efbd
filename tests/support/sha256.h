// Test support: SHA-256 (FIPS 180-4), to compare payloads with what external tools read back
// without shipping the payloads themselves across a pipe.
#ifndef ONNXZIP_TESTS_SUPPORT_SHA256_H_
#define ONNXZIP_TESTS_SUPPORT_SHA256_H_

#include <string>

#include "onnxzip/bytes.h"

namespace onnxzip::test_support {

// Lower-case hexadecimal digest of `bytes`.
std::string sha256_hex(ByteSpan bytes);

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_SHA256_H_
