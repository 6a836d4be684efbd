// The store's refusals made into errors (src/io/s3_error.cpp): the code, what the store said and
// what to do, the object named, and nothing secret repeated.
#include "s3_error.h"

#include <gtest/gtest.h>

#include <string>

namespace onnxzip::s3 {
namespace {

const Location kObject{"models", "dir/net.onnxz"};

std::string error_body(const std::string& code, const std::string& message,
                       const std::string& more = "") {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code + "</Code><Message>" +
         message + "</Message>" + more + "<RequestId>R1</RequestId></Error>";
}

TEST(S3Error, SaysWhatTheStoreSaidAndWhatToDo) {
  struct Case {
    long status;
    std::string code;
    ErrorCode error_code;
    bool retryable;
    std::string advice;  // A piece of what to do.
  };
  const Case cases[] = {
      {403, "SignatureDoesNotMatch", ErrorCode::kIo, false, "AWS_SECRET_ACCESS_KEY"},
      {403, "InvalidAccessKeyId", ErrorCode::kIo, false, "AWS_ACCESS_KEY_ID"},
      {403, "AccessDenied", ErrorCode::kIo, false, "bucket 'models'"},
      {404, "NoSuchKey", ErrorCode::kNotFound, false, "has no object 'dir/net.onnxz'"},
      {404, "NoSuchBucket", ErrorCode::kNotFound, false, "there is no bucket 'models'"},
      {503, "SlowDown", ErrorCode::kIo, true, "slow down"},
      {500, "InternalError", ErrorCode::kIo, true, ""},
      {412, "PreconditionFailed", ErrorCode::kIo, false, "changed meanwhile"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.code);
    const StoreRefusal refusal =
        store_refusal(c.status, error_body(c.code, "Words of the store."), kObject, "", "reading");
    EXPECT_EQ(refusal.error.code(), c.error_code);
    EXPECT_EQ(refusal.retryable, c.retryable);
    EXPECT_EQ(refusal.error.context().file, "s3://models/dir/net.onnxz");
    const std::string& problem = refusal.error.problem();
    EXPECT_NE(problem.find("reading failed: HTTP " + std::to_string(c.status) + " " + c.code),
              std::string::npos)
        << problem;
    EXPECT_NE(problem.find("\"Words of the store.\""), std::string::npos) << problem;
    EXPECT_NE(problem.find(c.advice), std::string::npos) << problem;
  }
}

TEST(S3Error, NamesTheRegionOfAPermanentRedirect) {
  const StoreRefusal from_body = store_refusal(
      301, error_body("PermanentRedirect", "Use the endpoint.", "<Region>eu-west-3</Region>"),
      kObject, "", "reading");
  EXPECT_NE(from_body.error.problem().find("AWS_REGION=eu-west-3"), std::string::npos);
  const StoreRefusal from_header = store_refusal(301, "", kObject, "ap-south-1", "reading");
  EXPECT_NE(from_header.error.problem().find("PermanentRedirect"), std::string::npos);
  EXPECT_NE(from_header.error.problem().find("AWS_REGION=ap-south-1"), std::string::npos);
}

// A SignatureDoesNotMatch answer echoes the access key id and what was signed: none of it shows.
TEST(S3Error, RepeatsNoOtherFieldOfTheAnswer) {
  const std::string body =
      error_body("SignatureDoesNotMatch", "The request signature we calculated does not match.",
                 "<AWSAccessKeyId>AKIDSECRETISH</AWSAccessKeyId><StringToSign>AWS4-HMAC-SHA256 "
                 "x</StringToSign><SignatureProvided>abcdef0123</SignatureProvided>");
  const std::string message = store_refusal(403, body, kObject, "", "reading").error.message();
  for (const std::string hidden : {"AKIDSECRETISH", "AWS4-HMAC-SHA256", "abcdef0123", "R1"}) {
    EXPECT_EQ(message.find(hidden), std::string::npos) << hidden;
  }
}

TEST(S3Error, FallsBackToTheStatusForBodiesThatAreNotTheStoresXml) {
  const StoreRefusal head_404 = store_refusal(404, "", kObject, "", "reading");
  EXPECT_EQ(head_404.error.code(), ErrorCode::kNotFound);
  const StoreRefusal proxy = store_refusal(502, "<html>Bad gateway</html>", kObject, "", "writing");
  EXPECT_TRUE(proxy.retryable);
  EXPECT_EQ(proxy.error.problem(), "writing failed: HTTP 502");
  // The store's message is clipped and loses control characters.
  std::string long_text(500, 'w');
  long_text += "\x1b[31m";
  const StoreRefusal long_message =
      store_refusal(400, error_body("InvalidArgument", long_text), kObject, "", "reading");
  EXPECT_LT(long_message.error.problem().size(), 320U);
  EXPECT_EQ(long_message.error.problem().find('\x1b'), std::string::npos);
}

// Callers decide by the code (a Complete's NoSuchUpload, a 200 whose body is an error).
TEST(S3Error, GivesTheStoresCodeOrTheOneTheStatusImplies) {
  EXPECT_EQ(store_refusal(404, error_body("NoSuchUpload", "gone"), kObject, "", "completing").code,
            "NoSuchUpload");
  EXPECT_EQ(store_refusal(200, error_body("InternalError", "retry"), kObject, "", "copying").code,
            "InternalError");
  EXPECT_EQ(store_refusal(404, "", kObject, "", "reading").code, "NoSuchKey");
  EXPECT_EQ(store_refusal(412, "<html/>", kObject, "", "writing").code, "PreconditionFailed");
  EXPECT_EQ(store_refusal(502, "<html>Bad gateway</html>", kObject, "", "writing").code, "");
}

}  // namespace
}  // namespace onnxzip::s3
