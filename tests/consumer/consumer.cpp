// Uses the installed library through its public headers only, and checks a real result.
#include <onnxzip/crc32.h>
#include <onnxzip/error.h>

#include <cstdio>
#include <string_view>

int main() {
  constexpr std::string_view kCheck = "123456789";
  const auto crc = onnxzip::crc32(
      onnxzip::ByteSpan(reinterpret_cast<const std::uint8_t*>(kCheck.data()), kCheck.size()));
  if (crc != 0xCBF43926u) {
    std::fprintf(stderr, "crc32 mismatch: %08x\n", crc);
    return 1;
  }
  std::puts("consumer ok");
  return 0;
}
