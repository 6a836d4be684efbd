#include "s3_config.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include "onnxzip/error.h"

namespace onnxzip::s3 {
namespace {

using Section = std::map<std::string, std::string>;
using IniFile = std::map<std::string, Section>;

// A config or credentials file larger than this is refused rather than read.
constexpr std::uintmax_t kMaxIniSize = std::uintmax_t{1} << 20;

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The INI dialect of ~/.aws/*: [section], `name = value`, comments from '#' or ';' at a line's
// start. Names are compared in lower case (as Python's configparser does). An indented line
// belongs to a nested block (`s3 =` followed by indented settings), which this reader skips.
IniFile parse_ini(std::string_view text) {
  IniFile out;
  Section* section = nullptr;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const bool indented = !line.empty() && (line.front() == ' ' || line.front() == '\t');
    line = trim(line);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[' && line.back() == ']' && !indented) {
      section = &out[std::string(trim(line.substr(1, line.size() - 2)))];
      continue;
    }
    if (section == nullptr || indented) continue;
    const std::size_t equals = line.find_first_of("=:");
    if (equals == std::string_view::npos) continue;
    (*section)[lower(trim(line.substr(0, equals)))] = std::string(trim(line.substr(equals + 1)));
  }
  return out;
}

// The file at `path`, parsed; empty when it does not exist.
IniFile read_ini(const std::string& path, std::string_view what) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return {};
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error) {
    throw Error(ErrorCode::kIo, {.file = path},
                "cannot read the AWS " + std::string(what) + " file: " + error.message());
  }
  if (size > kMaxIniSize) {
    throw Error(ErrorCode::kLimitExceeded, {.file = path},
                "the AWS " + std::string(what) + " file is larger than 1 MiB");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) {
    throw Error(ErrorCode::kIo, {.file = path},
                "cannot read the AWS " + std::string(what) + " file");
  }
  return parse_ini(text.str());
}

std::string home_file(const Environment& environment, std::string_view variable,
                      std::string_view under_home) {
  if (auto path = environment(variable); path && !path->empty()) {
    if (path->starts_with("~/")) {
      if (auto home = environment("HOME")) return *home + path->substr(1);
    }
    return *path;
  }
  const std::string home = environment("HOME").value_or("");
  return home + "/" + std::string(under_home);
}

std::string non_empty(const Environment& environment, std::string_view variable) {
  return environment(variable).value_or("");
}

const Section* find(const IniFile& file, const std::string& name) {
  const auto found = file.find(name);
  return found == file.end() ? nullptr : &found->second;
}

// The config file's section of a profile: [profile NAME]; for "default" also [default].
const Section* config_profile(const IniFile& config, const std::string& profile) {
  for (const auto& [name, section] : config) {
    if (name.starts_with("profile") && name.size() > 7 &&
        std::isspace(static_cast<unsigned char>(name[7])) &&
        trim(std::string_view(name).substr(8)) == profile) {
      return &section;
    }
  }
  return profile == "default" ? find(config, "default") : nullptr;
}

std::string value_of(const Section* section, const std::string& key) {
  if (section == nullptr) return "";
  const auto found = section->find(key);
  return found == section->end() ? "" : found->second;
}

std::optional<Credentials> credentials_in(const Section* section) {
  Credentials out{value_of(section, "aws_access_key_id"),
                  value_of(section, "aws_secret_access_key"),
                  value_of(section, "aws_session_token")};
  if (out.session_token.empty()) out.session_token = value_of(section, "aws_security_token");
  if (out.access_key_id.empty() || out.secret_access_key.empty()) return std::nullopt;
  return out;
}

// "scheme://host[:port]" from an endpoint URL, checked; a trailing '/' is dropped.
std::string check_endpoint(std::string_view url, std::string_view where) {
  std::string_view rest = url;
  std::string scheme;
  if (lower(url.substr(0, 7)) == "http://") {
    scheme = "http://";
  } else if (lower(url.substr(0, 8)) == "https://") {
    scheme = "https://";
  }
  rest.remove_prefix(scheme.size());
  while (rest.ends_with('/')) rest.remove_suffix(1);
  const bool plain_host =
      !rest.empty() && rest.find_first_of("/?#@ \t\r\n") == std::string_view::npos;
  if (scheme.empty() || !plain_host) {
    throw Error(ErrorCode::kInvalidArgument,
                "the S3 endpoint from " + std::string(where) +
                    " must be http(s)://host[:port] with no path, user or query");
  }
  return scheme + lower(rest);
}

bool bucket_character(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

}  // namespace

Location parse_s3_url(std::string_view url) {
  const auto refuse = [&](const std::string& problem) {
    throw Error(ErrorCode::kInvalidArgument, {.file = std::string(url)}, problem);
  };
  if (!is_s3_url(url)) refuse("not an s3://bucket/key URL");
  const std::string_view rest = url.substr(5);
  const std::size_t slash = rest.find('/');
  const std::string_view bucket = rest.substr(0, slash);
  if (bucket.empty() || bucket.size() > 255 ||
      !std::all_of(bucket.begin(), bucket.end(), bucket_character)) {
    refuse("an S3 bucket name is 1 to 255 of A-Z a-z 0-9 . - _");
  }
  if (slash == std::string_view::npos || slash + 1 == rest.size()) {
    refuse("the URL names a bucket but no key (s3://bucket/key)");
  }
  return Location{std::string(bucket), std::string(rest.substr(slash + 1))};
}

std::string display_name(const Location& location) {
  return "s3://" + location.bucket + "/" + location.key;
}

std::optional<std::string> process_environment(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

namespace {

// The profile in use and the two shared files it was looked up in. The sections point into the
// files' maps, whose nodes stay put when the struct is moved.
struct ProfileFiles {
  std::string profile;
  std::string credentials_path;
  std::string config_path;
  IniFile credentials_file;
  IniFile config_file;
  const Section* credentials_section = nullptr;
  const Section* config_section = nullptr;
};

// The profile named by the caller, else AWS_PROFILE, else "default", with its sections; a profile
// the caller named must exist somewhere, a default one need not.
ProfileFiles read_profile(const S3Options& options, const Environment& environment) {
  ProfileFiles out;
  out.profile = options.profile;
  if (out.profile.empty()) out.profile = non_empty(environment, "AWS_PROFILE");
  if (out.profile.empty()) out.profile = "default";
  out.credentials_path = home_file(environment, "AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
  out.config_path = home_file(environment, "AWS_CONFIG_FILE", ".aws/config");
  out.credentials_file = read_ini(out.credentials_path, "credentials");
  out.config_file = read_ini(out.config_path, "config");
  out.credentials_section = find(out.credentials_file, out.profile);
  out.config_section = config_profile(out.config_file, out.profile);
  if (!options.profile.empty() && out.credentials_section == nullptr &&
      out.config_section == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, "the AWS profile '" + out.profile +
                                                 "' is in neither " + out.credentials_path +
                                                 " nor " + out.config_path);
  }
  return out;
}

std::optional<Credentials> environment_credentials(const Environment& environment) {
  Credentials out{non_empty(environment, "AWS_ACCESS_KEY_ID"),
                  non_empty(environment, "AWS_SECRET_ACCESS_KEY"),
                  non_empty(environment, "AWS_SESSION_TOKEN")};
  if (out.session_token.empty()) out.session_token = non_empty(environment, "AWS_SECURITY_TOKEN");
  if (out.access_key_id.empty() || out.secret_access_key.empty()) return std::nullopt;
  return out;
}

// The caller's keys, else the environment's, else the profile's in the credentials file, else
// in the config file.
Credentials resolve_credentials(const S3Options& options, const Environment& environment,
                                const ProfileFiles& files) {
  if (options.credentials) return *options.credentials;
  std::optional<Credentials> found;
  // botocore: a profile named by the caller negates the environment's keys; AWS_PROFILE does not.
  if (options.profile.empty()) found = environment_credentials(environment);
  if (!found) found = credentials_in(files.credentials_section);
  if (!found) found = credentials_in(files.config_section);
  if (!found) {
    throw Error(ErrorCode::kNotFound,
                "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give "
                "profile '" +
                    files.profile + "' aws_access_key_id and aws_secret_access_key in " +
                    files.credentials_path + " or " + files.config_path);
  }
  return std::move(*found);
}

std::string resolve_region(const S3Options& options, const Environment& environment,
                           const ProfileFiles& files) {
  std::string region = options.region;
  for (const std::string_view variable : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    if (region.empty()) region = non_empty(environment, variable);
  }
  if (region.empty()) region = value_of(files.config_section, "region");
  if (region.empty()) region = "us-east-1";
  // The region goes into a host name and the signing scope.
  if (!std::all_of(region.begin(), region.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
      })) {
    throw Error(ErrorCode::kInvalidArgument,
                "an AWS region is letters, digits and '-' (\"" + region + "\")");
  }
  return region;
}

// The checked endpoint, or "" for AWS itself; an error names where the bad value came from.
std::string resolve_endpoint(const S3Options& options, const Environment& environment,
                             const ProfileFiles& files) {
  std::string endpoint = options.endpoint_url;
  std::string where = "S3Options::endpoint_url";
  for (const std::string_view variable : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    if (endpoint.empty()) {
      endpoint = non_empty(environment, variable);
      where = variable;
    }
  }
  if (endpoint.empty()) {
    endpoint = value_of(files.config_section, "endpoint_url");
    where = "profile '" + files.profile + "' in " + files.config_path;
  }
  return endpoint.empty() ? "" : check_endpoint(endpoint, where);
}

}  // namespace

Config resolve_config(const S3Options& options, const Environment& environment) {
  const ProfileFiles files = read_profile(options, environment);
  Config out;
  out.credentials = resolve_credentials(options, environment, files);
  out.region = resolve_region(options, environment, files);
  out.endpoint = resolve_endpoint(options, environment, files);
  return out;
}

Target target(const Config& config, const Location& location) {
  Target out;
  std::string base;
  if (!config.endpoint.empty()) {
    base = config.endpoint;
    out.encoded_path = encode_path(location.bucket, location.key);
  } else if (location.bucket.find('.') != std::string::npos) {
    base = "https://s3." + config.region + ".amazonaws.com";
    out.encoded_path = encode_path(location.bucket, location.key);
  } else {
    base = "https://" + location.bucket + ".s3." + config.region + ".amazonaws.com";
    out.encoded_path = encode_path("", location.key);
  }
  out.url = base + out.encoded_path;
  std::string_view host = std::string_view(base).substr(base.find("://") + 3);
  // The port is left out of Host when it is the scheme's own (as curl and botocore do).
  if (base.starts_with("http://") && host.ends_with(":80")) host.remove_suffix(3);
  if (base.starts_with("https://") && host.ends_with(":443")) host.remove_suffix(4);
  out.host = std::string(host);
  return out;
}

}  // namespace onnxzip::s3
