// Test support: ECDSA P-256 key pairs made with the openssl command line, as a user makes them
// (`openssl ecparam -name prime256v1 -genkey`, `openssl ec -pubout`), for the signing tests.
#ifndef ONNXZIP_TESTS_SUPPORT_TEST_KEYS_H_
#define ONNXZIP_TESTS_SUPPORT_TEST_KEYS_H_

#include <filesystem>
#include <string>

namespace onnxzip::test_support {

struct KeyFiles {
  std::filesystem::path private_pem;  // dir/<tag>.pem
  std::filesystem::path public_pem;   // dir/<tag>.pub.pem
};

// Writes a new key pair into `dir`; a failure of the openssl tool fails the calling test (callers
// skip first when find_tool("openssl") finds none).
KeyFiles make_key_pair(const std::filesystem::path& dir, const std::string& tag);

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_TEST_KEYS_H_
