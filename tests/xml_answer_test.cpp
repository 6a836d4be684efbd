// The store's XML answers (src/io/xml_answer.cpp): fields read, hostile documents refused.
#include "xml_answer.h"

#include <gtest/gtest.h>

#include <string>

#include "support/error_of.h"

namespace onnxzip::s3 {
namespace {

using test_support::error_of;

TEST(XmlAnswer, ReadsTheRootAndItsTextChildren) {
  const XmlAnswer answer = parse_xml_answer(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Bucket>b</Bucket><Key>a &amp; b</Key><UploadId>VXBs&#x62;oYWQ</UploadId>"
      "<Nested><Inner>x</Inner></Nested></InitiateMultipartUploadResult>");
  EXPECT_EQ(answer.root, "InitiateMultipartUploadResult");
  EXPECT_EQ(answer.field("Bucket"), "b");
  EXPECT_EQ(answer.field("Key"), "a & b");
  EXPECT_EQ(answer.field("UploadId"), "VXBsboYWQ");
  EXPECT_EQ(answer.field("Nested"), "");  // Its text is its children's, not its own.
  EXPECT_EQ(answer.field("Inner"), "");
  EXPECT_EQ(answer.field("Absent"), "");
}

TEST(XmlAnswer, KeepsChildrenThatHoldElementsAsRecordsInOrder) {
  const XmlAnswer answer = parse_xml_answer(
      "<ListMultipartUploadsResult><Bucket>b</Bucket>"
      "<Upload><Key>a</Key><UploadId>1</UploadId><Owner><ID>x</ID></Owner></Upload>"
      "<Upload><Key>b &amp; c</Key><UploadId>2</UploadId></Upload>"
      "<IsTruncated>false</IsTruncated></ListMultipartUploadsResult>");
  EXPECT_EQ(answer.field("Bucket"), "b");
  EXPECT_EQ(answer.field("IsTruncated"), "false");
  ASSERT_EQ(answer.records.size(), 2U);
  EXPECT_EQ(answer.records[0].name, "Upload");
  EXPECT_EQ(answer.records[0].fields.at("Key"), "a");
  EXPECT_EQ(answer.records[0].fields.at("UploadId"), "1");
  EXPECT_EQ(answer.records[0].fields.count("ID"), 0U);  // Deeper than a record's children.
  EXPECT_EQ(answer.records[1].fields.at("Key"), "b & c");
  EXPECT_EQ(answer.records[1].fields.at("UploadId"), "2");
}

TEST(XmlAnswer, RefusesWhatIsNotWellFormed) {
  for (const std::string body :
       {"", "<Error><Code>x</Error>", "<Error>", "not xml", "<a></a><b/>"}) {
    SCOPED_TRACE(body);
    const Error error = error_of([&] { parse_xml_answer(body); });
    EXPECT_EQ(error.code(), ErrorCode::kCorrupt);
    EXPECT_NE(error.message().find("not well-formed"), std::string::npos);
  }
}

TEST(XmlAnswer, RefusesDocumentTypesAndTheirEntities) {
  const Error error = error_of([] {
    parse_xml_answer(
        "<?xml version=\"1.0\"?><!DOCTYPE l [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b "
        "\"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">]><Error><Code>&b;</Code></Error>");
  });
  EXPECT_EQ(error.code(), ErrorCode::kCorrupt);
  EXPECT_NE(error.message().find("document type"), std::string::npos);
}

TEST(XmlAnswer, BoundsSizeAndDepth) {
  const XmlLimits limits{.max_size = 64, .max_depth = 3};
  EXPECT_EQ(parse_xml_answer("<a><b><c/></b></a>", limits).root, "a");
  EXPECT_EQ(error_of([&] { parse_xml_answer("<a><b><c><d/></c></b></a>", limits); }).code(),
            ErrorCode::kLimitExceeded);
  EXPECT_EQ(
      error_of([&] { parse_xml_answer("<a>" + std::string(64, 'x') + "</a>", limits); }).code(),
      ErrorCode::kLimitExceeded);
}

}  // namespace
}  // namespace onnxzip::s3
