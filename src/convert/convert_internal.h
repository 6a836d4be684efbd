// Private to src/convert/: what convert() and convert_remote() share.
#ifndef ONNXZIP_SRC_CONVERT_CONVERT_INTERNAL_H_
#define ONNXZIP_SRC_CONVERT_CONVERT_INTERNAL_H_

#include <filesystem>

#include "onnxzip/onnx_model.h"

namespace onnxzip::detail {

// What convert() refuses in its input before writing anything, naming the input `in` as
// `shown` ("" for its path): a file that parses as a ModelProto but is no model at all (a 0-byte
// file does), and an inline tensor whose payload disagrees with its dims and type, which no
// writer can carry faithfully.
void check_input_model(const std::filesystem::path& in, const ModelProto& model,
                       const std::string& shown = "");

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_CONVERT_CONVERT_INTERNAL_H_
