// Where an s3:// URL points and how to sign for it: the bucket and key, the endpoint, the region
// and the credentials, found as the AWS tools find them (botocore's precedence):
//
//   credentials  S3Options::credentials; else AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+
//                AWS_SESSION_TOKEN) unless S3Options::profile is given; else the profile's
//                aws_access_key_id / aws_secret_access_key / aws_session_token in the shared
//                credentials file (AWS_SHARED_CREDENTIALS_FILE, ~/.aws/credentials, section
//                [name]), then in the config file (AWS_CONFIG_FILE, ~/.aws/config, section
//                [profile name], or [default]).
//   profile      S3Options::profile, else AWS_PROFILE, else "default".
//   region       S3Options::region, else AWS_REGION, else AWS_DEFAULT_REGION, else the profile's
//                `region` in the config file, else us-east-1.
//   endpoint     S3Options::endpoint_url, else AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else
//                the profile's `endpoint_url`; such an endpoint (MinIO, R2, Ceph, a test server)
//                is addressed path-style (http://host:port/bucket/key). Without one, AWS:
//                https://bucket.s3.region.amazonaws.com/key (path-style when the bucket has a
//                dot, which TLS names cannot cover).
// Messages name the variable, file and profile; never a key, secret or token.
#ifndef ONNXZIP_IO_S3_CONFIG_H_
#define ONNXZIP_IO_S3_CONFIG_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "onnxzip/internal/s3.h"
#include "s3_sigv4.h"

namespace onnxzip::s3 {

// "s3://bucket/key".
struct Location {
  std::string bucket;
  std::string key;
};

// The bucket and key of "s3://bucket/key". Error(kInvalidArgument) naming the URL for another
// scheme, an empty or ill-formed bucket (not [A-Za-z0-9._-]{1,255}), or an empty key.
Location parse_s3_url(std::string_view url);
// "s3://bucket/key", as messages name an object.
std::string display_name(const Location& location);

// Explicit settings (s3_options.h); an empty field is found as the header comment says.
using S3Options = onnxzip::S3Options;

// What a request needs: resolved once per open or save.
struct Config {
  Credentials credentials;
  std::string region;
  std::string endpoint;  // "scheme://host[:port]", no path, no trailing '/'; "" for AWS.
};

// Reads a variable of the environment: nullopt when unset. Tests pass their own.
using Environment = std::function<std::optional<std::string>(std::string_view name)>;
// The process's environment (getenv).
std::optional<std::string> process_environment(std::string_view name);

// The settings for `options`. Error(kNotFound) when no credentials are found (saying where it
// looked), Error(kInvalidArgument) for an endpoint that is not http(s)://host[:port], or a
// profile named explicitly that no file has; Error(kIo) for a file that exists but cannot be read.
Config resolve_config(const S3Options& options,
                      const Environment& environment = process_environment);

// Where a request for `location` goes: the URL (no query), the Host header and the encoded path
// that is signed.
struct Target {
  std::string url;
  std::string host;
  std::string encoded_path;
};
Target target(const Config& config, const Location& location);

}  // namespace onnxzip::s3

#endif  // ONNXZIP_IO_S3_CONFIG_H_
