// The one check of a read against its source's size, shared by the byte sources of
// byte_source.cpp and http_source.cpp. Internal to the library.
#pragma once

#include <cstdint>

#include "onnxzip/byte_source.h"

namespace onnxzip::detail {

// Error(kInvalidArgument) naming the source when [offset, offset + length) does not lie within
// its size: a caller's mistake, since readers check untrusted offsets before they read.
void check_read_range(const ByteSource& source, std::uint64_t offset, std::uint64_t length);

}  // namespace onnxzip::detail
