// Fuzzes the two parsers of the integrity entries (integrity.h): decode_digests and
// decode_signature, and re-encoding what they accept. Any onnxzip::Error is an acceptable
// answer to hostile bytes; anything else (a crash, a sanitizer report, another exception type
// escaping, a statement that does not survive its own round trip) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "onnxzip/error.h"
#include "onnxzip/integrity.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const onnxzip::ByteSpan input(data, size);
  onnxzip::IntegrityLimits limits;
  limits.max_digests_size = 1 << 20;
  limits.max_signature_size = 1 << 20;
  try {
    const onnxzip::DigestStatement statement = onnxzip::decode_digests(input, limits, "fuzz");
    check(onnxzip::root_digest(statement.entries) == statement.root);
    // What parsed re-encodes into a statement that parses to the same entries (sorted).
    const std::string again = onnxzip::encode_digests(statement.model_name, statement.entries);
    const onnxzip::DigestStatement reparsed = onnxzip::decode_digests(
        {reinterpret_cast<const std::uint8_t*>(again.data()), again.size()}, limits, "fuzz");
    check(reparsed.entries.size() == statement.entries.size());
  } catch (const onnxzip::Error&) {
  }
  try {
    const onnxzip::SignatureBundle bundle = onnxzip::decode_signature(input, limits, "fuzz");
    check(!bundle.signature.empty());
  } catch (const onnxzip::Error&) {
  }
  return 0;
}
