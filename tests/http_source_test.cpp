// Archives over HTTP (http_source.h, Archive::open_url): every request counted at a real server,
// nginx started by the fixture (tests/support/nginx_server.h), and every remote result compared
// with the local one. Skipped when this build has no libcurl or nginx is not installed.
#include "onnxzip/internal/http_source.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/byte_source.h"
#include "onnxzip/internal/zip_reader.h"
#include "support/error_of.h"
#include "support/model_builder.h"
#include "support/nginx_server.h"
#include "support/scratch_dir.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::error_of;
using test_support::NginxServer;
using test_support::ServedRequest;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

void write_bytes(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::uint8_t> slice(const std::vector<std::uint8_t>& bytes, std::uint64_t offset,
                                std::uint64_t length) {
  return {bytes.begin() + static_cast<std::ptrdiff_t>(offset),
          bytes.begin() + static_cast<std::ptrdiff_t>(offset + length)};
}

std::vector<std::uint8_t> to_vector(ByteSpan bytes) { return {bytes.begin(), bytes.end()}; }

// Fast retries, so the fault tests take milliseconds.
HttpOptions quick(HttpOptions options = {}) {
  options.retry_delay = std::chrono::milliseconds(1);
  return options;
}

class HttpSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!http_available()) GTEST_SKIP() << "built without libcurl";
    if (!NginxServer::available()) GTEST_SKIP() << "nginx is not installed";
    server_ = std::make_unique<NginxServer>();
  }

  // A file of `size` pattern bytes served as /files/NAME.
  std::vector<std::uint8_t> serve(const std::string& name, std::size_t size) {
    std::vector<std::uint8_t> bytes = test_support::pattern_bytes(size, 7);
    write_bytes(server_->root() / name, bytes);
    return bytes;
  }

  std::unique_ptr<NginxServer> server_;
};

TEST(HttpUrl, IsUrlAndDisplayUrl) {
  EXPECT_TRUE(is_url("http://example.com/a.onnxz"));
  EXPECT_TRUE(is_url("HTTPS://example.com/a.onnxz"));
  EXPECT_FALSE(is_url("ftp://example.com/a.onnxz"));
  EXPECT_FALSE(is_url("model.onnxz"));
  EXPECT_FALSE(is_url("http:/x"));
  // Credentials of presigned URLs (query) and of user:password@ never appear in messages.
  EXPECT_EQ(display_url("https://user:pw@host:8443/m/a.onnxz?X-Amz-Signature=abc#frag"),
            "https://host:8443/m/a.onnxz");
  EXPECT_EQ(display_url("http://host/a.onnxz"), "http://host/a.onnxz");
}

TEST_F(HttpSourceTest, OpenIsOneSuffixRequest) {
  const std::vector<std::uint8_t> bytes = serve("a.bin", 3 * kMiB + 5);
  const auto source = HttpSource::open(server_->file_url("a.bin"), {.tail_size = kMiB});
  EXPECT_EQ(source->size(), bytes.size());
  EXPECT_EQ(source->tail_offset(), bytes.size() - kMiB);
  EXPECT_EQ(to_vector(source->tail()), slice(bytes, bytes.size() - kMiB, kMiB));
  const std::vector<ServedRequest> served = server_->requests(1);
  ASSERT_EQ(served.size(), 1U);
  EXPECT_EQ(served[0].range, "bytes=-1048576");
  EXPECT_EQ(served[0].status, 206);
  EXPECT_EQ(source->stats().requests, 1U);
  EXPECT_EQ(source->name(), server_->file_url("a.bin"));
}

TEST_F(HttpSourceTest, ReadsAreOneRangeEachAndTheTailIsFree) {
  const std::vector<std::uint8_t> bytes = serve("a.bin", 3 * kMiB);
  const auto source = HttpSource::open(server_->file_url("a.bin"), {.tail_size = kMiB});
  server_->forget();
  const TensorBytes read = source->read(100, 5000);
  EXPECT_EQ(to_vector(read.view()), slice(bytes, 100, 5000));
  // Congruent to its offset modulo 64 (byte_source.h).
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(read.view().data()) % 64, 100U % 64);
  // Bytes in the tail cost nothing.
  const TensorBytes in_tail = source->read(3 * kMiB - 10, 10);
  EXPECT_EQ(to_vector(in_tail.view()), slice(bytes, 3 * kMiB - 10, 10));
  // A read straddling the tail asks only for the part before it.
  std::vector<std::uint8_t> straddle(200);
  source->read_into(2 * kMiB - 100, straddle);
  EXPECT_EQ(straddle, slice(bytes, 2 * kMiB - 100, 200));
  const std::vector<ServedRequest> served = server_->requests(2);
  ASSERT_EQ(served.size(), 2U);
  EXPECT_EQ(served[0].range, "bytes=100-5099");
  EXPECT_EQ(served[1].range, "bytes=2097052-2097151");
  EXPECT_EQ(served[1].status, 206);
  EXPECT_EQ(source->stats().requests, 3U);
}

TEST_F(HttpSourceTest, ReadRangesMakesOneRequestPerRange) {
  const std::vector<std::uint8_t> bytes = serve("a.bin", 4 * kMiB);
  const auto source = HttpSource::open(server_->file_url("a.bin"), {.tail_size = kMiB});
  server_->forget();
  const std::vector<ByteRange> ranges = {{0, 10}, {kMiB, 70000}, {3 * kMiB + 1, 5}, {77, 1}};
  const std::vector<TensorBytes> read = source->read_ranges(ranges);
  ASSERT_EQ(read.size(), ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_EQ(to_vector(read[i].view()), slice(bytes, ranges[i].offset, ranges[i].length)) << i;
  }
  EXPECT_EQ(server_->requests(3).size(), 3U);  // The one in the tail is free.
}

TEST_F(HttpSourceTest, FetchAsksForPiecesAndHandsOnEveryByteOnce) {
  const std::vector<std::uint8_t> bytes = serve("a.bin", 5 * kMiB + 3);
  const auto source =
      HttpSource::open(server_->file_url("a.bin"), {.tail_size = kMiB, .piece_size = kMiB});
  server_->forget();
  std::vector<std::uint8_t> got(bytes.size());
  std::vector<int> seen(bytes.size());
  std::uint64_t last_done = 0;
  source->fetch(
      0, bytes.size(),
      [&](std::uint64_t at, ByteSpan piece) {
        std::copy(piece.begin(), piece.end(), got.begin() + static_cast<std::ptrdiff_t>(at));
        for (std::size_t i = 0; i < piece.size(); ++i) ++seen[at + i];
      },
      [&](std::uint64_t done, std::uint64_t total) {
        EXPECT_EQ(total, bytes.size());
        EXPECT_GE(done, last_done);
        last_done = done;
      });
  EXPECT_EQ(got, bytes);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<std::ptrdiff_t>(bytes.size()));
  EXPECT_EQ(last_done, bytes.size());
  // 4 MiB + 3 bytes before the tail: 5 pieces of at most 1 MiB.
  EXPECT_EQ(server_->requests(5).size(), 5U);
}

TEST_F(HttpSourceTest, AFileSmallerThanTheTailIsReadWhole) {
  const std::vector<std::uint8_t> bytes = serve("small.bin", 1000);
  const auto source = HttpSource::open(server_->file_url("small.bin"), {.tail_size = kMiB});
  EXPECT_EQ(source->size(), 1000U);
  EXPECT_EQ(source->tail_offset(), 0U);
  EXPECT_EQ(to_vector(source->tail()), bytes);
  // Also from a server that ignores Range: the whole file is what was asked for.
  const auto whole = HttpSource::open(server_->url("/norange/small.bin"), {.tail_size = kMiB});
  EXPECT_EQ(to_vector(whole->tail()), bytes);
  EXPECT_EQ(server_->requests(2).size(), 2U);
}

TEST_F(HttpSourceTest, AServerThatIgnoresRangeIsRefused) {
  serve("a.bin", 2 * kMiB);
  const Error e = error_of(
      [&] { (void)HttpSource::open(server_->url("/norange/a.bin"), {.tail_size = kMiB}); });
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_NE(std::string(e.what()).find("does not answer range requests"), std::string::npos)
      << e.what();
  EXPECT_EQ(server_->requests(1).size(), 1U);  // Not retried, and the body not read whole.
}

TEST_F(HttpSourceTest, StatusesFailAtOnceOrAfterTheRetries) {
  const Error missing = error_of([&] { (void)HttpSource::open(server_->file_url("none.bin")); });
  EXPECT_EQ(missing.code(), ErrorCode::kNotFound);
  EXPECT_NE(std::string(missing.what()).find("HTTP 404"), std::string::npos) << missing.what();
  EXPECT_EQ(server_->requests(1).size(), 1U);
  server_->forget();

  const Error failing =
      error_of([&] { (void)HttpSource::open(server_->url("/fail/a.bin"), quick({.retries = 2})); });
  EXPECT_EQ(failing.code(), ErrorCode::kIo);
  EXPECT_NE(std::string(failing.what()).find("HTTP 503"), std::string::npos) << failing.what();
  EXPECT_NE(std::string(failing.what()).find("after 3 attempts"), std::string::npos)
      << failing.what();
  EXPECT_EQ(server_->requests(3).size(), 3U);
}

TEST_F(HttpSourceTest, HeadersReachTheServerAndAreNeverShown) {
  const std::vector<std::uint8_t> bytes = serve("a.bin", 1000);
  const Error refused = error_of([&] {
    (void)HttpSource::open(server_->url("/private/a.bin"),
                           {.headers = {"Authorization: Bearer wrong-token-123"}});
  });
  EXPECT_EQ(refused.code(), ErrorCode::kIo);
  EXPECT_NE(std::string(refused.what()).find("HTTP 401"), std::string::npos) << refused.what();
  EXPECT_EQ(std::string(refused.what()).find("wrong-token-123"), std::string::npos);
  const auto source = HttpSource::open(server_->url("/private/a.bin"),
                                       {.headers = {"Authorization: Bearer secret"}});
  EXPECT_EQ(to_vector(source->tail()), bytes);
  const Error bad_header = error_of(
      [&] { (void)HttpSource::open(server_->file_url("a.bin"), {.headers = {"no-colon-tok"}}); });
  EXPECT_EQ(bad_header.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(std::string(bad_header.what()).find("no-colon-tok"), std::string::npos);
}

// The hooks object storage reads through (s3.h): headers made for each attempt, the caller's
// name for the source, and a refused request's body made into the error.
TEST_F(HttpSourceTest, SignRequestDisplayNameAndDescribeRefusal) {
  const std::vector<std::uint8_t> bytes = serve("a.bin", 1000);
  int signatures = 0;
  HttpOptions options = quick();
  options.sign_request = [&] {
    ++signatures;
    return std::vector<std::string>{"Authorization: Bearer secret"};
  };
  options.display_name = "store://bucket/a.bin";
  const auto source = HttpSource::open(server_->url("/private/a.bin"), options);
  EXPECT_EQ(to_vector(source->tail()), bytes);
  EXPECT_EQ(source->name(), "store://bucket/a.bin");
  EXPECT_EQ(signatures, 1);

  long seen_status = 0;
  std::string seen_body;
  options.sign_request = [] { return std::vector<std::string>{"Authorization: Bearer wrong"}; };
  options.describe_refusal = [&](long status, std::string_view body) -> std::optional<Error> {
    seen_status = status;
    seen_body = std::string(body);
    return Error(ErrorCode::kNotFound, "refused, as the store says");
  };
  const Error refused =
      error_of([&] { (void)HttpSource::open(server_->url("/private/a.bin"), options); });
  EXPECT_EQ(refused.code(), ErrorCode::kNotFound);
  EXPECT_EQ(refused.message(), "store://bucket/a.bin: refused, as the store says");
  EXPECT_EQ(seen_status, 401);
  EXPECT_NE(seen_body.find("401"), std::string::npos) << seen_body;  // nginx's error page.

  // A new signature for every attempt: a retried request is signed again.
  signatures = 0;
  HttpOptions failing = quick({.retries = 2});
  failing.sign_request = [&] {
    ++signatures;
    return std::vector<std::string>{};
  };
  (void)error_of([&] { (void)HttpSource::open(server_->url("/fail/a.bin"), failing); });
  EXPECT_EQ(signatures, 3);
}

TEST_F(HttpSourceTest, AFileChangedBetweenRequestsIsAnError) {
  const fs::path path = server_->root() / "a.bin";
  serve("a.bin", 2 * kMiB);
  const auto source = HttpSource::open(server_->file_url("a.bin"), {.tail_size = kMiB});
  // Replaced by another file of the same size (nginx's ETag is its time and size).
  write_bytes(path, test_support::pattern_bytes(2 * kMiB, 8));
  fs::last_write_time(path, fs::last_write_time(path) + std::chrono::hours(1));
  const Error e = error_of([&] { (void)source->read(0, 100); });
  EXPECT_EQ(e.code(), ErrorCode::kIo);
  EXPECT_NE(std::string(e.what()).find("the remote file changed while it was read"),
            std::string::npos)
      << e.what();
  EXPECT_NE(std::string(e.what()).find(server_->file_url("a.bin")), std::string::npos);
}

TEST_F(HttpSourceTest, ReadsBeyondTheLimitAreRefusedBeforeAnyRequest) {
  serve("a.bin", 3 * kMiB);
  const auto source =
      HttpSource::open(server_->file_url("a.bin"), {.tail_size = kMiB, .max_read_size = kMiB});
  server_->forget();
  const Error e = error_of([&] { (void)source->read(0, kMiB + 1); });
  EXPECT_EQ(e.code(), ErrorCode::kLimitExceeded);
  const Error outside = error_of([&] { (void)source->read(3 * kMiB - 1, 2); });
  EXPECT_EQ(outside.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(server_->requests().size(), 0U);
}

// --- Archives over HTTP: the request budget (issue 23) ---

TEST_F(HttpSourceTest, ArchiveOpenIsOneRequestAndEachTensorOne) {
  test_support::write_float_archive(server_->root() / "m.onnxz", 20, 4096);
  const Archive local = Archive::open(server_->root() / "m.onnxz");
  const Archive remote = Archive::open_url(server_->file_url("m.onnxz"));
  EXPECT_EQ(server_->requests(1).size(), 1U);
  EXPECT_EQ(remote.model_bytes().size(), local.model_bytes().size());
  EXPECT_TRUE(std::equal(remote.model_bytes().begin(), remote.model_bytes().end(),
                         local.model_bytes().begin()));
  ASSERT_EQ(remote.tensors().size(), local.tensors().size());
  server_->forget();
  // The whole archive is in the first request's MiB: no tensor costs a request.
  for (std::size_t i = 0; i < local.tensors().size(); ++i) {
    const Archive::TensorInfo& r = remote.tensors()[i];
    const Archive::TensorInfo& l = local.tensors()[i];
    EXPECT_EQ(r.name, l.name);
    EXPECT_EQ(r.dims, l.dims);
    EXPECT_EQ(r.offset, l.offset);
    EXPECT_TRUE(r.data.empty());
    EXPECT_EQ(to_vector(remote.payload(r).view()), to_vector(l.data));
  }
  EXPECT_EQ(server_->requests().size(), 0U);
}

TEST_F(HttpSourceTest, TensorsBeyondTheTailAreOneRequestEachAndAdjacentOnesMerge) {
  // 40 tensors of 64 KiB: 2.5 MiB, of which the first request brings the last 1 MiB.
  test_support::write_float_archive(server_->root() / "m.onnxz", 40, 16384);
  const Archive local = Archive::open(server_->root() / "m.onnxz");
  const Archive remote = Archive::open_url(server_->file_url("m.onnxz"));
  EXPECT_EQ(server_->requests(1).size(), 1U);
  server_->forget();
  const Archive::TensorInfo& first = *remote.find_tensor("w0");
  EXPECT_EQ(to_vector(remote.payload(first).view()), to_vector(local.find_tensor("w0")->data));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(remote.payload(first).view().data()) % 64, 0U);
  EXPECT_EQ(server_->requests(2).size(), 2U);  // One per payload() call.
  server_->forget();
  // w1..w5 are adjacent: one range; w20 is not: one more, made at the same time.
  std::vector<const Archive::TensorInfo*> asked;
  for (const char* name : {"w3", "w1", "w2", "w5", "w4", "w20"})
    asked.push_back(remote.find_tensor(name));
  const std::vector<TensorBytes> got = remote.payloads(asked);
  for (std::size_t i = 0; i < asked.size(); ++i) {
    EXPECT_EQ(to_vector(got[i].view()), to_vector(local.find_tensor(asked[i]->name)->data))
        << asked[i]->name;
  }
  EXPECT_EQ(server_->requests(2).size(), 2U);
}

TEST_F(HttpSourceTest, AModelLargerThanTheTailCostsOneMoreRequest) {
  // 3,000 initializers: a model of well over 64 KiB, a tail asked for of 64 KiB + 22.
  test_support::write_float_archive(server_->root() / "m.onnxz", 3000, 256);
  const Archive local = Archive::open(server_->root() / "m.onnxz");
  ASSERT_GT(local.model_bytes().size(), 70000U);
  const Archive remote = Archive::open_url(server_->file_url("m.onnxz"), {}, {.tail_size = 65557});
  EXPECT_EQ(server_->requests(2).size(), 2U);
  EXPECT_EQ(remote.tensors().size(), 3000U);
  EXPECT_EQ(to_vector(remote.payload(*remote.find_tensor("w17")).view()),
            to_vector(local.find_tensor("w17")->data));
}

TEST_F(HttpSourceTest, AZip64ArchiveOpensWithinTheSameBudget) {
  // 70,000 entries: more than the end record counts, so a zip64 end record and locator.
  constexpr std::size_t kCount = 70'000;
  test_support::write_float_archive(server_->root() / "m.onnxz", kCount, 1);
  const ZipReader zip = ZipReader::open(server_->root() / "m.onnxz");
  ASSERT_TRUE(zip.has_zip64_end_record());
  const std::uint64_t tail =
      fs::file_size(server_->root() / "m.onnxz") - zip.entries().back().local_header_offset;
  // The model, the central directory and the end records in the first request: one request.
  server_->forget();
  const Archive whole = Archive::open_url(server_->file_url("m.onnxz"), {}, {.tail_size = tail});
  EXPECT_EQ(whole.tensors().size(), kCount);
  EXPECT_EQ(whole.model().graph->initializer.size(), kCount);
  EXPECT_EQ(server_->requests(1).size(), 1U);
  // A first request of 64 KiB + 22 holds the end records only: one more brings the rest.
  server_->forget();
  const Archive split = Archive::open_url(server_->file_url("m.onnxz"), {}, {.tail_size = 65557});
  EXPECT_EQ(split.tensors().size(), kCount);
  EXPECT_EQ(split.model_bytes().size(), whole.model_bytes().size());
  EXPECT_EQ(server_->requests(2).size(), 2U);
}

// Little-endian fields appended to `out`.
void put(std::vector<std::uint8_t>& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

TEST_F(HttpSourceTest, ATailThatClaimsATerabyteModelAllocatesNothingForIt) {
  // A sparse file of 1 TiB and a few bytes: __MODEL_PROTO, stored, of 2^40 bytes (zip64 sizes),
  // then its central record and the end records. The server serves what it claims.
  constexpr std::uint64_t kModel = std::uint64_t{1} << 40;
  const std::string name = "__MODEL_PROTO";
  std::vector<std::uint8_t> zip64;
  put(zip64, 1, 2);
  put(zip64, 16, 2);
  put(zip64, kModel, 8);
  put(zip64, kModel, 8);
  std::vector<std::uint8_t> head;
  put(head, 0x04034b50, 4);
  for (const auto& [value, bytes] : {std::pair{45, 2}, {0, 2}, {0, 2}, {0, 2}, {0x21, 2}, {0, 4}})
    put(head, static_cast<std::uint64_t>(value), bytes);
  put(head, 0xFFFFFFFF, 4);
  put(head, 0xFFFFFFFF, 4);
  put(head, name.size(), 2);
  put(head, zip64.size(), 2);
  head.insert(head.end(), name.begin(), name.end());
  head.insert(head.end(), zip64.begin(), zip64.end());
  const std::uint64_t directory = head.size() + kModel;
  std::vector<std::uint8_t> tail;
  put(tail, 0x02014b50, 4);
  for (const auto& [value, bytes] :
       {std::pair{45, 2}, {45, 2}, {0, 2}, {0, 2}, {0, 2}, {0x21, 2}, {0, 4}})
    put(tail, static_cast<std::uint64_t>(value), bytes);
  put(tail, 0xFFFFFFFF, 4);
  put(tail, 0xFFFFFFFF, 4);
  put(tail, name.size(), 2);
  put(tail, zip64.size(), 2);
  for (const auto& [value, bytes] : {std::pair{0, 2}, {0, 2}, {0, 2}, {0, 4}, {0, 4}})
    put(tail, static_cast<std::uint64_t>(value), bytes);
  tail.insert(tail.end(), name.begin(), name.end());
  tail.insert(tail.end(), zip64.begin(), zip64.end());
  const std::uint64_t directory_size = tail.size();
  const std::uint64_t end64 = directory + directory_size;
  put(tail, 0x06064b50, 4);
  put(tail, 44, 8);
  put(tail, 45, 2);
  put(tail, 45, 2);
  put(tail, 0, 4);
  put(tail, 0, 4);
  put(tail, 1, 8);
  put(tail, 1, 8);
  put(tail, directory_size, 8);
  put(tail, directory, 8);
  put(tail, 0x07064b50, 4);
  put(tail, 0, 4);
  put(tail, end64, 8);
  put(tail, 1, 4);
  put(tail, 0x06054b50, 4);
  put(tail, 0, 2);
  put(tail, 0, 2);
  put(tail, 1, 2);
  put(tail, 1, 2);
  put(tail, directory_size, 4);
  put(tail, 0xFFFFFFFF, 4);
  put(tail, 0, 2);
  {
    std::ofstream out(server_->root() / "huge.onnxz", std::ios::binary);
    out.write(reinterpret_cast<const char*>(head.data()),
              static_cast<std::streamsize>(head.size()));
    out.seekp(static_cast<std::streamoff>(directory));
    out.write(reinterpret_cast<const char*>(tail.data()),
              static_cast<std::streamsize>(tail.size()));
    if (!out) GTEST_SKIP() << "this file system has no room for a sparse file of 1 TiB";
  }
  server_->forget();
  const Error e = error_of([&] { (void)Archive::open_url(server_->file_url("huge.onnxz")); });
  EXPECT_EQ(e.code(), ErrorCode::kLimitExceeded) << e.what();
  EXPECT_NE(e.message().find(server_->file_url("huge.onnxz")), std::string::npos) << e.what();
  // The tail, then the model's local header at most: nothing of its bytes was asked for.
  const std::vector<ServedRequest> served = server_->requests(1);
  EXPECT_LE(served.size(), 2U);
  for (const ServedRequest& request : served) {
    EXPECT_LE(request.body_bytes, 2 * kMiB) << request.range;
  }
}

// --- The fault table: a fault-injecting proxy in front of nginx (tests/support/fault_proxy.py) ---

TEST_F(HttpSourceTest, FaultsAreRetriedResumedOrRefused) {
  const test_support::FaultProxy proxy(*server_);
  const std::vector<std::uint8_t> bytes = serve("a.bin", 3 * kMiB);
  const HttpOptions options = quick({.tail_size = kMiB, .stall_timeout = std::chrono::seconds(1)});
  const auto read_front = [&](const std::string& fault) {
    const auto source = HttpSource::open(proxy.url(fault, "a.bin"), options);
    return to_vector(source->read(10, 2 * kMiB).view());
  };
  // Transient faults: retried, the read resumed at the byte reached, the bytes right.
  EXPECT_EQ(read_front("ok"), slice(bytes, 10, 2 * kMiB));
  EXPECT_EQ(read_front("503once"), slice(bytes, 10, 2 * kMiB));
  EXPECT_EQ(read_front("reset"), slice(bytes, 10, 2 * kMiB));
  EXPECT_EQ(read_front("stall"), slice(bytes, 10, 2 * kMiB));
  // Faults that another attempt would not mend: refused at once, with what was wrong.
  const auto refused = [&](const std::string& fault, ErrorCode code, const std::string& words) {
    const Error e = error_of([&] { (void)read_front(fault); });
    EXPECT_EQ(e.code(), code) << fault << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << fault << ": " << e.what();
  };
  refused("badrange", ErrorCode::kCorrupt, "Content-Range");
  refused("long", ErrorCode::kCorrupt, "Content-Length");
  refused("etag", ErrorCode::kIo, "the remote file changed while it was read");
}

}  // namespace
}  // namespace onnxzip
