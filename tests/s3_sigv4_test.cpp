// The SigV4 signer (src/io/s3_sigv4.cpp) against botocore's S3SigV4Auth: tests/data/s3/
// sigv4_golden.json holds inputs and what botocore computed for them (tests/s3_sigv4_golden.py).
#include "s3_sigv4.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/error_of.h"
#include "support/external_tool.h"

namespace onnxzip::s3 {
namespace {

using test_support::error_of;
using Json = nlohmann::json;

const std::string kGoldenPath = std::string(ONNXZIP_TEST_DATA_DIR) + "/s3/sigv4_golden.json";
const std::string kGeneratorPath = std::string(ONNXZIP_TEST_DATA_DIR) + "/../s3_sigv4_golden.py";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::chrono::system_clock::time_point parse_time(const std::string& text) {
  std::tm parts{};
  std::istringstream in(text);
  in >> std::get_time(&parts, "%Y-%m-%dT%H:%M:%S");
  return std::chrono::system_clock::from_time_t(timegm(&parts));
}

std::vector<NameValue> pairs(const Json& list) {
  std::vector<NameValue> out;
  for (const Json& pair : list)
    out.push_back({pair[0].get<std::string>(), pair[1].get<std::string>()});
  return out;
}

TEST(S3SigV4, SignsAsBotocoreDoes) {
  const Json golden = Json::parse(read_text(kGoldenPath));
  const Credentials base{golden["access_key_id"], golden["secret_access_key"], ""};
  ASSERT_GE(golden["cases"].size(), 9U);
  for (const Json& test_case : golden["cases"]) {
    const Json& input = test_case["input"];
    const Json& expected = test_case["botocore"];
    SCOPED_TRACE(input["name"].get<std::string>());

    const std::string path = encode_path("", input["path"].get<std::string>().substr(1));
    EXPECT_EQ(path, expected["encoded_path"].get<std::string>());
    const std::string body = input["body"];
    const std::string payload_hash =
        sha256_hex(ByteSpan(reinterpret_cast<const std::uint8_t*>(body.data()), body.size()));
    EXPECT_EQ(payload_hash, expected["payload_sha256"].get<std::string>());

    const std::vector<NameValue> query = pairs(input["query"]);
    const std::vector<NameValue> headers = pairs(input["headers"]);
    const std::string host = input["host"];
    const std::string method = input["method"];
    const SigV4Request request{.method = method,
                               .host = host,
                               .encoded_path = path,
                               .query = query,
                               .headers = headers,
                               .payload_sha256 = input["unsigned_payload"].get<bool>()
                                                     ? kUnsignedPayload
                                                     : std::string_view(payload_hash)};
    Credentials credentials = base;
    credentials.session_token = input["token"];
    const SignedHeaders got =
        sign(request, credentials, input["region"].get<std::string>(), parse_time(input["time"]));

    EXPECT_EQ(got.canonical_request, expected["canonical_request"].get<std::string>());
    EXPECT_EQ(got.string_to_sign, expected["string_to_sign"].get<std::string>());
    EXPECT_EQ(got.signature, expected["signature"].get<std::string>());
    // The headers botocore added, name for name (case aside) and value for value.
    std::map<std::string, std::string> added;
    for (const NameValue& header : got.headers) {
      std::string name = header.name;
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      EXPECT_TRUE(added.emplace(name, header.value).second) << "twice: " << name;
    }
    std::map<std::string, std::string> wanted;
    for (const auto& [name, value] : expected["added_headers"].items()) {
      std::string lower_name = name;
      for (char& c : lower_name) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      wanted[lower_name] = value.get<std::string>();
    }
    EXPECT_EQ(added, wanted);
  }
}

// The golden file is what botocore says today: re-run its generator where botocore is installed.
TEST(S3SigV4, GoldenFileIsBotocoresOutput) {
  const test_support::ToolResult probe =
      test_support::run_tool("/usr/bin/python3 -c 'import botocore' 2>&1");
  if (probe.exit_code != 0) {
    GTEST_SKIP() << "/usr/bin/python3 has no botocore (Debian: python3-botocore)";
  }
  const test_support::ToolResult run =
      test_support::run_tool("/usr/bin/python3 " + test_support::shell_quote(kGeneratorPath));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(Json::parse(run.output), Json::parse(read_text(kGoldenPath)));
}

TEST(S3SigV4, EncodesAllButUnreservedBytes) {
  EXPECT_EQ(uri_encode("AZaz09-_.~", false), "AZaz09-_.~");
  EXPECT_EQ(uri_encode("a/b c+d", false), "a%2Fb%20c%2Bd");
  EXPECT_EQ(uri_encode("a/b c+d", true), "a/b%20c%2Bd");
  EXPECT_EQ(uri_encode("\xc3\xa8\xff", false), "%C3%A8%FF");
  EXPECT_EQ(encode_path("my-bucket", "dir/a b.onnxz"), "/my-bucket/dir/a%20b.onnxz");
  EXPECT_EQ(encode_path("", "k"), "/k");
}

TEST(S3SigV4, SortsQueryByEncodedNameThenValue) {
  const std::vector<NameValue> query = {{"uploads", ""}, {"b", "2"}, {"a", "z"}, {"a", "y"}};
  EXPECT_EQ(canonical_query(query), "a=y&a=z&b=2&uploads=");
}

TEST(S3SigV4, FormatsTheDateInUtc) {
  EXPECT_EQ(amz_date(std::chrono::system_clock::from_time_t(0)), "19700101T000000Z");
  EXPECT_EQ(amz_date(std::chrono::system_clock::from_time_t(1'795'000'000)), "20261118T110640Z");
}

TEST(S3SigV4, RefusesMissingKeysAndLineBreaksWithoutShowingValues) {
  const SigV4Request request{.method = "GET", .host = "h", .encoded_path = "/k"};
  const auto now = std::chrono::system_clock::from_time_t(0);
  const Error no_secret = error_of([&] {
    sign(request, Credentials{"AKID", "", ""}, "us-east-1", now);
  });
  EXPECT_EQ(no_secret.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(no_secret.message().find("secret key"), std::string::npos);

  const std::vector<NameValue> headers = {{"x-amz-meta-a", "SECRETVALUE\r\nInjected: 1"}};
  SigV4Request broken = request;
  broken.headers = headers;
  const Error split = error_of([&] {
    sign(broken, Credentials{"AKID", "SECRET", ""}, "us-east-1", now);
  });
  EXPECT_EQ(split.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(split.message().find("x-amz-meta-a"), std::string::npos);
  EXPECT_EQ(split.message().find("SECRETVALUE"), std::string::npos);
}

}  // namespace
}  // namespace onnxzip::s3
