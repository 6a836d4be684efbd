#include "output.h"

#include "onnxzip/internal/s3.h"
#include "output_file.h"
#include "s3_upload.h"

namespace onnxzip {

std::unique_ptr<Output> open_output(const std::filesystem::path& destination,
                                    const OutputFileOptions& file, const S3Options& s3,
                                    std::size_t buffer_size) {
  if (is_s3_url(destination.native())) {
    return std::make_unique<s3::S3Upload>(destination.native(), s3);
  }
  return std::make_unique<AtomicOutputFile>(destination, file, buffer_size);
}

}  // namespace onnxzip
