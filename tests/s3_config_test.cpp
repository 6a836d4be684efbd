// s3:// URLs, credentials, regions and endpoints (src/io/s3_config.cpp), found as botocore finds
// them, from an environment and files each test makes.
#include "s3_config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "support/error_of.h"
#include "support/scratch_dir.h"

namespace onnxzip::s3 {
namespace {

using test_support::error_of;
using test_support::ScratchDir;
using test_support::write_file_bytes;

// An environment of its own, HOME at a scratch folder (no ~/.aws of the machine is read).
class S3ConfigTest : public ::testing::Test {
 protected:
  S3ConfigTest() : home_("s3_config") {
    variables_["HOME"] = home_.path().string();
    std::filesystem::create_directories(home_.path() / ".aws");
  }
  Environment environment() const {
    return [this](std::string_view name) -> std::optional<std::string> {
      const auto found = variables_.find(std::string(name));
      if (found == variables_.end()) return std::nullopt;
      return found->second;
    };
  }
  void credentials_file(const std::string& text) {
    write_file_bytes(home_.path() / ".aws/credentials", text);
  }
  void config_file(const std::string& text) {
    write_file_bytes(home_.path() / ".aws/config", text);
  }
  Config resolve(const S3Options& options = {}) const {
    return resolve_config(options, environment());
  }

  ScratchDir home_;
  std::map<std::string, std::string> variables_;
};

TEST(S3Url, ParsesBucketAndKey) {
  EXPECT_TRUE(is_s3_url("s3://b/k"));
  EXPECT_TRUE(is_s3_url("S3://b/k"));
  EXPECT_FALSE(is_s3_url("s3:/b/k"));
  EXPECT_FALSE(is_s3_url("https://b/k"));
  const Location location = parse_s3_url("s3://my-bucket.v2/dir/a b/model.onnxz");
  EXPECT_EQ(location.bucket, "my-bucket.v2");
  EXPECT_EQ(location.key, "dir/a b/model.onnxz");
  EXPECT_EQ(display_name(location), "s3://my-bucket.v2/dir/a b/model.onnxz");
}

TEST(S3Url, RefusesUrlsWithoutBucketOrKey) {
  for (const std::string url : {"s3://", "s3:///key", "s3://bucket", "s3://bucket/",
                                "s3://bu cket/key", "s3://bu@cket/key", "http://b/k"}) {
    SCOPED_TRACE(url);
    const Error error = error_of([&] { parse_s3_url(url); });
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(error.context().file, url);
  }
}

TEST_F(S3ConfigTest, TakesKeysFromTheEnvironment) {
  variables_["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  variables_["AWS_SECRET_ACCESS_KEY"] = "secretenv";
  variables_["AWS_SESSION_TOKEN"] = "tokenenv";
  credentials_file("[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = secretfile\n");
  const Config config = resolve();
  EXPECT_EQ(config.credentials.access_key_id, "AKIDENV");
  EXPECT_EQ(config.credentials.secret_access_key, "secretenv");
  EXPECT_EQ(config.credentials.session_token, "tokenenv");
  EXPECT_EQ(config.region, "us-east-1");
  EXPECT_EQ(config.endpoint, "");
}

TEST_F(S3ConfigTest, ExplicitCredentialsWinOverEverything) {
  variables_["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  variables_["AWS_SECRET_ACCESS_KEY"] = "secretenv";
  const Config config = resolve({.credentials = Credentials{"AKIDX", "secretx", ""}});
  EXPECT_EQ(config.credentials.access_key_id, "AKIDX");
  EXPECT_EQ(config.credentials.session_token, "");
}

TEST_F(S3ConfigTest, ReadsTheProfileFromTheCredentialsFileThenTheConfigFile) {
  credentials_file(
      "# comment\n[default]\naws_access_key_id=AKIDDEF\naws_secret_access_key=secretdef\n"
      "[work]\r\naws_access_key_id = AKIDWORK\r\naws_secret_access_key = secretwork\r\n"
      "aws_session_token = tokenwork\r\n");
  config_file(
      "[default]\nregion = eu-west-1\n[profile work]\nregion = eu-central-1\n"
      "s3 =\n  addressing_style = path\n[profile cfgonly]\naws_access_key_id = AKIDCFG\n"
      "aws_secret_access_key = secretcfg\nregion = ap-south-1\n"
      "endpoint_url = http://127.0.0.1:9000/\n");
  Config config = resolve();
  EXPECT_EQ(config.credentials.access_key_id, "AKIDDEF");
  EXPECT_EQ(config.region, "eu-west-1");

  variables_["AWS_PROFILE"] = "work";
  config = resolve();
  EXPECT_EQ(config.credentials.access_key_id, "AKIDWORK");
  EXPECT_EQ(config.credentials.session_token, "tokenwork");
  EXPECT_EQ(config.region, "eu-central-1");

  config = resolve({.profile = "cfgonly"});
  EXPECT_EQ(config.credentials.access_key_id, "AKIDCFG");
  EXPECT_EQ(config.region, "ap-south-1");
  EXPECT_EQ(config.endpoint, "http://127.0.0.1:9000");
}

// botocore: AWS_PROFILE leaves the environment's keys first; a profile the caller names does not.
TEST_F(S3ConfigTest, EnvironmentKeysBeatAwsProfileButNotAnExplicitProfile) {
  variables_["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  variables_["AWS_SECRET_ACCESS_KEY"] = "secretenv";
  variables_["AWS_PROFILE"] = "work";
  credentials_file("[work]\naws_access_key_id = AKIDWORK\naws_secret_access_key = secretwork\n");
  EXPECT_EQ(resolve().credentials.access_key_id, "AKIDENV");
  EXPECT_EQ(resolve({.profile = "work"}).credentials.access_key_id, "AKIDWORK");
}

TEST_F(S3ConfigTest, FilesMayBeElsewhere) {
  const std::string credentials = (home_.path() / "creds").string();
  const std::string config = (home_.path() / "conf").string();
  write_file_bytes(credentials, "[p]\naws_access_key_id = AKIDP\naws_secret_access_key = sp\n");
  write_file_bytes(config, "[profile p]\nregion = us-west-2\n");
  variables_["AWS_SHARED_CREDENTIALS_FILE"] = credentials;
  variables_["AWS_CONFIG_FILE"] = config;
  variables_["AWS_PROFILE"] = "p";
  const Config resolved = resolve();
  EXPECT_EQ(resolved.credentials.access_key_id, "AKIDP");
  EXPECT_EQ(resolved.region, "us-west-2");
}

TEST_F(S3ConfigTest, RegionAndEndpointPrecedence) {
  variables_["AWS_ACCESS_KEY_ID"] = "A";
  variables_["AWS_SECRET_ACCESS_KEY"] = "S";
  config_file("[default]\nregion = eu-west-1\nendpoint_url = https://profile.example\n");
  EXPECT_EQ(resolve().region, "eu-west-1");
  EXPECT_EQ(resolve().endpoint, "https://profile.example");
  variables_["AWS_DEFAULT_REGION"] = "eu-west-2";
  variables_["AWS_ENDPOINT_URL"] = "http://generic.example:8080";
  EXPECT_EQ(resolve().region, "eu-west-2");
  EXPECT_EQ(resolve().endpoint, "http://generic.example:8080");
  variables_["AWS_REGION"] = "eu-west-3";
  variables_["AWS_ENDPOINT_URL_S3"] = "HTTP://S3.Example:9000/";
  EXPECT_EQ(resolve().region, "eu-west-3");
  EXPECT_EQ(resolve().endpoint, "http://s3.example:9000");
  const Config explicit_config =
      resolve({.region = "auto", .endpoint_url = "https://acct.r2.cloudflarestorage.com"});
  EXPECT_EQ(explicit_config.region, "auto");
  EXPECT_EQ(explicit_config.endpoint, "https://acct.r2.cloudflarestorage.com");
}

TEST_F(S3ConfigTest, MissingCredentialsSayWhereItLookedWithoutSecrets) {
  credentials_file("[default]\naws_access_key_id = AKIDHALF\n");
  const Error error = error_of([&] { resolve(); });
  EXPECT_EQ(error.code(), ErrorCode::kNotFound);
  EXPECT_NE(error.message().find("AWS_ACCESS_KEY_ID"), std::string::npos);
  EXPECT_NE(error.message().find(".aws/credentials"), std::string::npos);
  EXPECT_EQ(error.message().find("AKIDHALF"), std::string::npos);
}

TEST_F(S3ConfigTest, RefusesAnUnknownExplicitProfileAndBadEndpointsAndRegions) {
  variables_["AWS_ACCESS_KEY_ID"] = "A";
  variables_["AWS_SECRET_ACCESS_KEY"] = "S";
  EXPECT_EQ(error_of([&] { resolve({.profile = "nope"}); }).code(), ErrorCode::kInvalidArgument);
  for (const std::string endpoint :
       {"ftp://h", "http://", "http://h/path", "http://user:pw@h", "h:9000", "http://h?x=1"}) {
    SCOPED_TRACE(endpoint);
    const Error error = error_of([&] { resolve({.endpoint_url = endpoint}); });
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(error.message().find("pw"), std::string::npos);
  }
  EXPECT_EQ(error_of([&] { resolve({.region = "us-east-1.evil.com/"}); }).code(),
            ErrorCode::kInvalidArgument);
}

TEST(S3Target, AddressesAwsVirtualHostedAndOtherStoresPathStyle) {
  Config config{.credentials = {}, .region = "eu-west-3", .endpoint = ""};
  Target got = target(config, {"models", "dir/a b.onnxz"});
  EXPECT_EQ(got.url, "https://models.s3.eu-west-3.amazonaws.com/dir/a%20b.onnxz");
  EXPECT_EQ(got.host, "models.s3.eu-west-3.amazonaws.com");
  EXPECT_EQ(got.encoded_path, "/dir/a%20b.onnxz");

  got = target(config, {"my.models", "k"});
  EXPECT_EQ(got.url, "https://s3.eu-west-3.amazonaws.com/my.models/k");
  EXPECT_EQ(got.host, "s3.eu-west-3.amazonaws.com");

  config.endpoint = "http://127.0.0.1:9000";
  got = target(config, {"models", "k+1"});
  EXPECT_EQ(got.url, "http://127.0.0.1:9000/models/k%2B1");
  EXPECT_EQ(got.host, "127.0.0.1:9000");
  EXPECT_EQ(got.encoded_path, "/models/k%2B1");

  config.endpoint = "https://store.example:443";
  EXPECT_EQ(target(config, {"b", "k"}).host, "store.example");
}

}  // namespace
}  // namespace onnxzip::s3
