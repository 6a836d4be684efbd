// Archives named by a URL on the command line: the request options (--header), and the copy a
// command that reads every byte works on. Private to src/cli/.
//
// Commands that need only the archive's tail (info) read it through HttpSource directly;
// extract and convert of an archive write while they download (convert_remote, convert.h). The
// others that read every byte (verify, and convert of a legacy model) download it first, with
// HttpSource::fetch -- 64 MiB ranges, several at once, each checked against the first response's
// validator -- into an unlinked temporary file in $TMPDIR, and then read that file as they read
// a local one: one reading path, and the output is the local one's byte for byte. The file
// vanishes with the process, even a killed one; it costs disk space, not memory.
#ifndef ONNXZIP_CLI_REMOTE_H_
#define ONNXZIP_CLI_REMOTE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli_common.h"
#include "onnxzip/http_source.h"
#include "onnxzip/mapped_file.h"
#include "onnxzip/s3.h"

namespace onnxzip::cli {

// The request options every command uses: GlobalOptions::headers, defaults otherwise.
HttpOptions http_options(const GlobalOptions& global);

// Whether `text` names a remote archive: an http(s) URL, or s3://bucket/key (s3.h).
bool is_remote(std::string_view text) noexcept;
// HttpSource::open of an http(s) URL, open_s3_source of an s3:// one, with http_options(global).
std::shared_ptr<const HttpSource> open_remote(const std::string& url, const GlobalOptions& global);

// A URL's archive downloaded (see the header comment).
struct Download {
  std::string shown;  // display_url(url): what messages call it.
  std::shared_ptr<const MappedFile> file;
  // A path that opens the downloaded file ("/proc/self/fd/N"), for functions that take a path;
  // in_tool_terms() turns it back into `shown` in messages.
  std::string path;
};

// Downloads `url` with a progress bar labelled `label`. Errors: HttpSource's; kIo when the
// temporary file cannot be made or written.
Download download(const std::string& url, const GlobalOptions& global, const std::string& label);
// The same for a source already opened.
Download download(const HttpSource& source, const GlobalOptions& global, const std::string& label);

// `message` with the paths of downloads replaced by their URLs (called by in_tool_terms).
std::string in_remote_terms(std::string message);

// The file name a URL's path ends with ("model.onnxz" for https://host/m/model.onnxz?sig=...).
std::string url_file_name(const std::string& url);

}  // namespace onnxzip::cli

#endif  // ONNXZIP_CLI_REMOTE_H_
