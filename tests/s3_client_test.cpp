// The store's write requests (src/io/s3_client.cpp) against a real S3 server: moto with signature
// checking on, behind the proxy that counts requests and injects what moto does not do (faults,
// and the conditions on CompleteMultipartUpload; tests/support/s3_server.py). What is written is
// read back and compared byte for byte. Skipped, with the reason, where no Python has moto or the
// build has no libcurl. moto checks signatures over the path and query it decoded, so a key with
// '&' or a query value with '/' fails there (not on S3: s3_sigv4_test holds the signer to
// botocore's); the tests use neither.
#include "s3_client.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <exception>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "crc32.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/http_source.h"
#include "s3_source.h"
#include "support/error_of.h"
#include "support/s3_server.h"
#include "support/scratch_dir.h"

namespace onnxzip::s3 {
namespace {

using test_support::error_of;
using test_support::S3Server;

constexpr const char* kBucket = test_support::kS3TestBucket;
constexpr std::size_t kMinPart = std::size_t{5} << 20;  // S3's least size of a part but the last.

std::vector<std::uint8_t> pattern(std::size_t size, std::uint8_t seed) {
  std::vector<std::uint8_t> bytes(size);
  for (std::size_t i = 0; i < size; ++i) {
    bytes[i] = static_cast<std::uint8_t>((i * 131 + seed) ^ (i >> 9));
  }
  return bytes;
}

TEST(S3Checksum, IsTheCrcsFourBytesBigEndianInBase64) {
  const std::string text = "hello world";
  const ByteSpan bytes(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  EXPECT_EQ(crc32(bytes), 0x0D4A1185U);
  EXPECT_EQ(crc32_base64(crc32(bytes)), "DUoRhQ==");
  EXPECT_EQ(crc32_base64(0), "AAAAAA==");
  EXPECT_EQ(crc32_base64(0xFFFFFFFFU), "/////w==");
}

// Each test writes keys of its own.
class S3ClientTest : public test_support::S3SuiteTest<S3ClientTest> {
 public:
  static Uploads prepare(const std::filesystem::path& files) {
    const std::vector<std::uint8_t> source = pattern(kMinPart + 4096, 7);
    std::ofstream((files / "source.bin").string(), std::ios::binary)
        .write(reinterpret_cast<const char*>(source.data()),
               static_cast<std::streamsize>(source.size()));
    return {{"source.bin", (files / "source.bin").string()}};
  }

 protected:
  static Client client(const std::string& secret = "") {
    return Client(server_->config(secret),
                  {.retries = 2, .retry_delay = std::chrono::milliseconds(1)});
  }

  // The object's bytes, read by the S3 reader.
  static std::vector<std::uint8_t> read_object(const std::string& key) {
    const auto source = open_source("s3://models/" + key, {.tail_size = 64 << 20}, {},
                                    server_->environment(files_->path()));
    std::vector<std::uint8_t> bytes(source->size());
    source->read_into(0, bytes);
    return bytes;
  }

  // Every request the proxy forwarded, "METHOD PATH" each.
  static std::vector<std::string> requests_seen() {
    std::vector<std::string> out;
    for (std::string line : server_->stats().requests_seen) {
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out.push_back(line);
    }
    return out;
  }
};

TEST_F(S3ClientTest, UploadsPartsAndCompletesTheObjectWithItsFullCrc) {
  Client store = client();
  const Location where{kBucket, "dir/new model.bin"};
  const std::vector<std::uint8_t> bytes = pattern(kMinPart + 1000, 1);
  const ByteSpan first = ByteSpan(bytes).first(kMinPart);
  const ByteSpan second = ByteSpan(bytes).subspan(kMinPart);

  const std::string upload = store.create_multipart_upload(where, true);
  const std::vector<UploadedPart> parts = {
      store.upload_part(where, upload, 1, first, crc32(first)),
      store.upload_part(where, upload, 2, second, crc32(second))};
  const std::string etag = store.complete_multipart_upload(
      where, upload, parts, {.full_object_crc32 = crc32(bytes), .if_none_match = true});

  EXPECT_EQ(requests_seen(), (std::vector<std::string>{
                                 "POST /models/dir/new%20model.bin?uploads=",
                                 "PUT /models/dir/new%20model.bin?partNumber=1&uploadId=" + upload,
                                 "PUT /models/dir/new%20model.bin?partNumber=2&uploadId=" + upload,
                                 "POST /models/dir/new%20model.bin?uploadId=" + upload}));
  EXPECT_EQ(store.requests(), 4U);
  const std::optional<ObjectHead> head = store.head_object(where);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->size, bytes.size());
  EXPECT_EQ(head->etag, etag);
  EXPECT_EQ(read_object("dir/new model.bin"), bytes);
  EXPECT_TRUE(store.list_multipart_uploads(kBucket, "dir").empty());
}

TEST_F(S3ClientTest, RetriesSlowDownAndAResetMidPartResendingTheSameBytes) {
  Client store = client();
  const Location where{kBucket, "retried.bin"};
  const std::vector<std::uint8_t> bytes = pattern(300'000, 2);
  const std::string upload = store.create_multipart_upload(where, true);
  server_->inject("slowdown");
  const UploadedPart one = store.upload_part(where, upload, 1, bytes, crc32(bytes));
  EXPECT_EQ(server_->stats().requests, 3U);  // Create, SlowDown, the part.
  server_->inject("cut");
  const UploadedPart again = store.upload_part(where, upload, 1, bytes, crc32(bytes));
  EXPECT_EQ(again.etag, one.etag);           // The same bytes, whole, the second time.
  EXPECT_EQ(server_->stats().requests, 5U);  // The cut one, then the part.
  store.complete_multipart_upload(where, upload, std::vector{again},
                                  {.full_object_crc32 = crc32(bytes)});
  EXPECT_EQ(read_object("retried.bin"), bytes);
}

TEST_F(S3ClientTest, ACompleteThatAnswers200WithAnErrorFailsAndTheAbortLeavesNothing) {
  Client store = client();
  const Location where{kBucket, "late error.bin"};
  const std::vector<std::uint8_t> bytes = pattern(1000, 3);
  const std::string upload = store.create_multipart_upload(where, false);
  const UploadedPart part = store.upload_part(where, upload, 1, bytes, crc32(bytes));
  server_->inject("error200", 3);  // The first attempt and both retries.
  const Error error =
      error_of([&] { store.complete_multipart_upload(where, upload, std::vector{part}); });
  EXPECT_EQ(error.code(), ErrorCode::kIo);
  EXPECT_EQ(error.message(),
            "s3://models/late error.bin: completing the upload of 1 parts failed: HTTP 200 "
            "InternalError (\"We encountered an internal error. Please try again.\") (after 3 "
            "attempts)");
  ASSERT_EQ(store.list_multipart_uploads(kBucket, "late").size(), 1U);
  store.abort_multipart_upload(where, upload);
  EXPECT_TRUE(store.list_multipart_uploads(kBucket, "late").empty());
  EXPECT_FALSE(store.head_object(where));
  store.abort_multipart_upload(where, upload);  // Gone already: not an error.
}

TEST_F(S3ClientTest, CompleteIfNoneMatchNeverReplacesAnObject) {
  Client store = client();
  const Location where{kBucket, "source.bin"};
  const std::optional<ObjectHead> before = store.head_object(where);
  ASSERT_TRUE(before);
  const std::vector<std::uint8_t> bytes = pattern(100, 4);
  const std::string upload = store.create_multipart_upload(where, false);
  const UploadedPart part = store.upload_part(where, upload, 1, bytes, crc32(bytes));
  const Error error = error_of([&] {
    store.complete_multipart_upload(where, upload, std::vector{part}, {.if_none_match = true});
  });
  EXPECT_EQ(error.code(), ErrorCode::kIo);
  EXPECT_NE(error.message().find("s3://models/source.bin: completing the upload of 1 "
                                 "parts failed: HTTP 412 PreconditionFailed"),
            std::string::npos)
      << error.what();
  store.abort_multipart_upload(where, upload);
  EXPECT_TRUE(store.list_multipart_uploads(kBucket, "source").empty());
  EXPECT_EQ(store.head_object(where)->etag, before->etag);
}

TEST_F(S3ClientTest, CompleteIfMatchReplacesOnlyTheObjectRead) {
  Client store = client();
  const Location where{kBucket, "swapped.bin"};
  const std::vector<std::uint8_t> old_bytes = pattern(100, 5);
  const std::vector<std::uint8_t> new_bytes = pattern(200, 6);
  const auto write = [&](const std::vector<std::uint8_t>& bytes, const std::string& if_match) {
    const std::string upload = store.create_multipart_upload(where, false);
    const UploadedPart part = store.upload_part(where, upload, 1, bytes, crc32(bytes));
    try {
      return store.complete_multipart_upload(where, upload, std::vector{part},
                                             {.if_match = if_match});
    } catch (...) {
      store.abort_multipart_upload(where, upload);
      throw;
    }
  };
  const std::string old_etag = write(old_bytes, "");
  const Error error = error_of([&] { write(new_bytes, "\"0123456789abcdef0123456789abcdef\""); });
  EXPECT_NE(error.message().find("HTTP 412 PreconditionFailed"), std::string::npos) << error.what();
  EXPECT_EQ(read_object("swapped.bin"), old_bytes);
  write(new_bytes, old_etag);
  EXPECT_EQ(read_object("swapped.bin"), new_bytes);
  EXPECT_TRUE(store.list_multipart_uploads(kBucket, "swapped").empty());
}

TEST_F(S3ClientTest, CopiesAnObjectsRangeIntoAPart) {
  Client store = client();
  const Location source{kBucket, "source.bin"};
  const Location where{kBucket, "copied.bin"};
  const std::optional<ObjectHead> head = store.head_object(source);
  ASSERT_TRUE(head);
  const std::vector<std::uint8_t> tail = pattern(777, 8);
  const std::string upload = store.create_multipart_upload(where, false);
  const std::vector<UploadedPart> parts = {
      store.upload_part_copy(
          where, upload, 1,
          {.source = source, .first = 0, .length = kMinPart, .if_match = head->etag}),
      store.upload_part(where, upload, 2, tail, crc32(tail))};
  EXPECT_EQ(requests_seen()[2], "PUT /models/copied.bin?partNumber=1&uploadId=" + upload);
  store.complete_multipart_upload(where, upload, parts);
  std::vector<std::uint8_t> expected = pattern(kMinPart + 4096, 7);
  expected.resize(kMinPart);
  expected.insert(expected.end(), tail.begin(), tail.end());
  EXPECT_EQ(read_object("copied.bin"), expected);
}

TEST_F(S3ClientTest, ListsUploadsInProgressAndAbortsThem) {
  Client store = client();
  const Location a{kBucket, "pending/a.bin"};
  const Location b{kBucket, "pending/b c.bin"};
  const std::string upload_a = store.create_multipart_upload(a, false);
  const std::string upload_b = store.create_multipart_upload(b, false);
  std::vector<PendingUpload> pending = store.list_multipart_uploads(kBucket, "pending");
  std::sort(pending.begin(), pending.end(),
            [](const PendingUpload& x, const PendingUpload& y) { return x.key < y.key; });
  ASSERT_EQ(pending.size(), 2U);
  EXPECT_EQ(pending[0].key, "pending/a.bin");
  EXPECT_EQ(pending[0].upload_id, upload_a);
  EXPECT_EQ(pending[1].key, "pending/b c.bin");
  EXPECT_EQ(pending[1].upload_id, upload_b);
  store.abort_multipart_upload(a, upload_a);
  store.abort_multipart_upload(b, upload_b);
  EXPECT_TRUE(store.list_multipart_uploads(kBucket, "pending").empty());
}

TEST_F(S3ClientTest, RefusalsNameTheObjectAndWhatToDoButNoSecret) {
  const std::string wrong_secret = "not-the-secret-key-0123456789";
  Client store = client(wrong_secret);
  const Error error = error_of([&] {
    store.create_multipart_upload({kBucket, "refused.bin"}, false);
  });
  const std::string message = error.message();
  EXPECT_EQ(error.code(), ErrorCode::kIo);
  EXPECT_TRUE(
      message.starts_with("s3://models/refused.bin: starting the upload "
                          "(CreateMultipartUpload) failed: HTTP 403 SignatureDoesNotMatch"))
      << message;
  EXPECT_NE(message.find("check the secret key"), std::string::npos) << message;
  EXPECT_EQ(message.find(wrong_secret), std::string::npos);
  EXPECT_EQ(message.find(server_->access_key_id()), std::string::npos);
  EXPECT_EQ(server_->stats().requests, 1U);  // Not retried.
}

TEST_F(S3ClientTest, RetriesEndWithTheLastRefusalAndTheAttemptCount) {
  Client store = client();
  server_->inject("slowdown", 3);
  const Error error = error_of([&] {
    store.create_multipart_upload({kBucket, "busy.bin"}, false);
  });
  EXPECT_EQ(error.message(),
            "s3://models/busy.bin: starting the upload (CreateMultipartUpload) failed: HTTP 503 "
            "SlowDown (\"Please reduce your request rate.\"); the store asks to slow down (after "
            "3 attempts)");
  EXPECT_TRUE(store.list_multipart_uploads(kBucket, "busy").empty());
}

}  // namespace
}  // namespace onnxzip::s3
