// The library's doors to object storage (internal/s3.h): what the other layers call, over the
// S3 pieces of this folder.
#include "onnxzip/internal/s3.h"

#include "s3_source.h"

namespace onnxzip {

bool is_s3_url(std::string_view text) noexcept {
  return text.size() >= 5 && (text[0] == 's' || text[0] == 'S') && text[1] == '3' &&
         text.substr(2, 3) == "://";
}

std::shared_ptr<const HttpSource> open_s3_source(const std::string& url, const HttpOptions& http,
                                                 const S3Options& s3) {
  return s3::open_source(url, http, s3);
}

}  // namespace onnxzip
