// An object store's XML answer (src/io/xml_answer.cpp): any bytes either parse or are an Error,
// never a crash, a hang or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "onnxzip/error.h"
#include "xml_answer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const onnxzip::s3::XmlAnswer answer =
        onnxzip::s3::parse_xml_answer(std::string_view(reinterpret_cast<const char*>(data), size));
    (void)answer.field("Code");
  } catch (const onnxzip::Error&) {
  }
  return 0;
}
