// Edits and signings of an archive in a bucket (src/archive/bucket_tail.cpp, edit.cpp):
// against moto with signature checking on, behind the proxy that counts requests and bytes and
// checks the conditions moto ignores (tests/support/s3_server.h). Every edit kind is made on the
// object and on a local copy of the same bytes, and the object boto3 downloads afterwards must
// equal the local result byte for byte; the requests are counted, and a concurrent writer, the
// store's 409 and a small archive are shown. Skipped, with the reason, where no Python has moto
// or the build has no libcurl.
#include "bucket_tail.h"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/edit.h"
#include "onnxzip/error.h"
#include "onnxzip/integrity.h"
#include "onnxzip/internal/s3.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/signing.h"
#include "support/cli_run.h"
#include "support/error_of.h"
#include "support/external_tool.h"
#include "support/model_builder.h"
#include "support/s3_server.h"
#include "support/scratch_dir.h"
#include "support/test_keys.h"

namespace onnxzip::archive_detail {
namespace {

namespace fs = std::filesystem;
using test_support::error_of;
using test_support::S3Server;

// Names of the operations the proxy logged, in order.
std::vector<std::string> operations(const test_support::S3ProxyStats& stats) {
  std::vector<std::string> out;
  for (const auto& request : stats.log) out.push_back(request.operation);
  return out;
}

std::size_t count_of(const std::vector<std::string>& names, const std::string& name) {
  return static_cast<std::size_t>(std::count(names.begin(), names.end(), name));
}

// The prefix's copied parts: every one within S3's limits, together the whole prefix, as few as
// the 5 GiB limit allows (no server needed).
TEST(BucketTail, CopyRangesCoverThePrefixWithinThePartLimits) {
  for (const std::uint64_t size : {kMinCopyPart, kMaxPart - 1, kMaxPart, kMaxPart + 1, 2 * kMaxPart,
                                   2 * kMaxPart + 7, std::uint64_t{5} << 40}) {
    SCOPED_TRACE(size);
    const std::vector<CopyRange> ranges = copy_ranges(size);
    ASSERT_EQ(ranges.size(), (size + kMaxPart - 1) / kMaxPart);
    std::uint64_t next = 0;
    for (const CopyRange& range : ranges) {
      EXPECT_EQ(range.first, next);
      EXPECT_GE(range.length, kMinCopyPart);
      EXPECT_LE(range.length, kMaxPart);
      next += range.length;
    }
    EXPECT_EQ(next, size);
  }
  EXPECT_EQ(copy_ranges(std::uint64_t{5} << 40).size(), 1024U);  // 5 TiB, S3's largest object.
}

// Each test uploads the archives it edits with boto3 first, so they stay independent of each
// other. The library finds the store in the environment.
class BucketEditTest : public test_support::S3SuiteTest<BucketEditTest> {
 public:
  static constexpr bool kStoreInEnvironment = true;
  static std::string missing() {
    return test_support::find_tool("openssl") ? "" : "no openssl tool for the signing keys";
  }
  // big: 12 entries of 512 KiB, a prefix of 6 MiB: copied in the store. long: 3 entries of
  // 2 MiB, each larger than an open's first read (1 MiB). small: 64 KiB.
  static Uploads prepare(const fs::path& files) {
    test_support::write_float_archive(files / "big.onnxz", 12, 131072);
    test_support::write_float_archive(files / "long.onnxz", 3, 524288);
    test_support::write_float_archive(files / "small.onnxz", 4, 4096);
    keys_ = test_support::make_key_pair(files, "key");
    return {};
  }

 protected:
  static fs::path model(const std::string& name) { return file(name); }

  // `from` uploaded by boto3 as `key`, and a local copy of it to edit the same way; the counts
  // start from there.
  fs::path stage(const fs::path& from, const std::string& key) const {
    const fs::path local = dir_ / fs::path(key).filename();
    fs::copy_file(from, local, fs::copy_options::overwrite_existing);
    server_->put(key, local.string());
    server_->reset_stats();
    return local;
  }

  // The object as boto3 downloads it.
  std::vector<std::uint8_t> object(const std::string& key) const {
    const fs::path file = dir_ / "downloaded";
    server_->get(key, file.string());
    return test_support::read_file_bytes(file);
  }

  test_support::ScratchDir dir_{"bucket_edit"};
  static inline test_support::KeyFiles keys_;
};

// What an archive is, entry by entry: its names and bytes in file order, a signature's bytes left
// out (ECDSA signs with a random nonce: two signings of the same statement differ).
std::vector<std::pair<std::string, std::vector<std::uint8_t>>> entries_of(const fs::path& path) {
  const ZipReader zip = ZipReader::open(path);
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> out;
  for (const ZipEntry& entry : zip.entries()) {
    const TensorBytes data = zip.data(entry);
    out.emplace_back(entry.name,
                     entry.name == kSignatureEntryName
                         ? std::vector<std::uint8_t>{}
                         : std::vector<std::uint8_t>(data.view().begin(), data.view().end()));
  }
  return out;
}

// The object holds what the local edit wrote: the same bytes, or for a signed archive the same
// entries with a signature of its own, which verifies.
void expect_same_archive(const std::vector<std::uint8_t>& object, const fs::path& local,
                         const test_support::KeyFiles& keys) {
  if (object == test_support::read_file_bytes(local)) return;
  const fs::path copy = local.parent_path() / "object.onnxz";
  {
    std::ofstream out(copy, std::ios::binary);
    out.write(reinterpret_cast<const char*>(object.data()),
              static_cast<std::streamsize>(object.size()));
  }
  EXPECT_EQ(entries_of(copy), entries_of(local)) << "the entries differ";
  VerifyOptions options;
  options.public_key = PublicKey::load(keys.public_pem);
  const VerifyReport report = verify(copy, options);
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.signature, IntegrityStatus::kVerified);
}

void set_license(ModelProto& model) {
  StringStringEntryProto& entry = model.metadata_props.emplace_back();
  entry.key = "license";
  entry.value = "MIT";
  model.producer_name = "bucket";
}

// An edit, made on a path or on s3://models/KEY.
struct EditKind {
  const char* name;
  std::function<void(const std::string& archive)> run;
};

std::vector<EditKind> edit_kinds(const test_support::KeyFiles& keys) {
  const auto signing = [&keys] {
    EditOptions options;
    options.signing_key = PrivateKey::load(keys.private_pem);
    return options;
  };
  const auto sign_with_key = [&keys] {
    SignOptions options;
    options.key = PrivateKey::load(keys.private_pem);
    return options;
  };
  return {
      {"edit_model_properties",
       [](const std::string& a) { edit_model_properties(a, set_license); }},
      {"edit_model",
       [](const std::string& a) {
         edit_model(a, [](ModelProto& model) { model.graph->name = "renamed in place"; });
       }},
      {"replace_model",
       [](const std::string& a) {
         ModelProto model =
             (is_s3_url(a) ? Archive::open_url(a) : Archive::open(fs::path(a))).model();
         model.doc_string = std::string(3000, 'r');
         replace_model(a, model);
       }},
      {"sign then edit with a key",
       [=](const std::string& a) {
         sign_archive(a, sign_with_key());
         edit_model_properties(a, set_license, signing());
       }},
      {"sign then edit without a key",
       [=](const std::string& a) {
         sign_archive(a, sign_with_key());
         edit_model_properties(a, set_license);
       }},
      {"digests only, then sign",
       [=](const std::string& a) {
         sign_archive(a);
         sign_archive(a, sign_with_key());
       }},
  };
}

TEST_F(BucketEditTest, EveryEditKindGivesTheBytesOfTheLocalEdit) {
  for (const EditKind& kind : edit_kinds(keys_)) {
    SCOPED_TRACE(kind.name);
    const std::string key = "kinds/model.onnxz";
    const fs::path local = stage(model("big.onnxz"), key);
    kind.run(local.string());
    kind.run("s3://models/" + key);
    expect_same_archive(object(key), local, keys_);
    EXPECT_EQ(server_->pending_uploads(), std::vector<std::string>{});
  }
}

TEST_F(BucketEditTest, AnEditCopiesThePrefixInTheStoreAndSendsTheTail) {
  const std::string key = "count/model.onnxz";
  const fs::path local = stage(model("big.onnxz"), key);
  const std::uint64_t size = fs::file_size(local);
  const EditResult result = edit_model_properties("s3://models/" + key, set_license);
  EXPECT_FALSE(result.object_rewritten);
  const test_support::S3ProxyStats stats = server_->stats();
  const std::vector<std::string> ops = operations(stats);
  EXPECT_EQ(count_of(ops, "create"), 1U) << ::testing::PrintToString(ops);
  EXPECT_EQ(count_of(ops, "copy"), 1U);
  EXPECT_EQ(count_of(ops, "part"), 1U);
  EXPECT_EQ(count_of(ops, "complete"), 1U);
  EXPECT_EQ(count_of(ops, "put") + count_of(ops, "abort"), 0U);
  EXPECT_EQ(count_of(ops, "get"), 1U) << ::testing::PrintToString(stats.requests_seen);
  // The prefix ends where the model starts (the tail of an unsigned archive), and the copy and
  // the Complete are conditional on the ETag the read saw.
  std::string etag;
  for (const auto& request : stats.log) {
    if (request.operation != "copy") continue;
    EXPECT_EQ(request.copy_source_range, "bytes=0-" + std::to_string(result.model_offset - 1));
    etag = request.copy_source_if_match;
  }
  EXPECT_FALSE(etag.empty());
  for (const auto& request : stats.log) {
    if (request.operation == "complete") {
      EXPECT_EQ(request.if_match, etag);
    }
  }
  // The client moves the tail it read, the new tail and little else, whatever the archive's size.
  EXPECT_LT(stats.bytes + stats.received, (2 << 20) + (64 << 10));
  EXPECT_LT(stats.received, size / 4);
  edit_model_properties(local, set_license);
  EXPECT_EQ(object(key), test_support::read_file_bytes(local));
}

// An edit reads the object's end once (spec §9.9 step 1): one GET when the open's first read
// holds the directory, the model and the local header of the entry before them, as in a
// small-model archive; one more when that entry is larger than the first read, for its local
// header -- once, though planning the new tail and checking the archive both need it -- and one
// more for a model larger than the first read. Signing a statement in place reads the same.
TEST_F(BucketEditTest, AnEditReadsTheEndOnceAndTheHeaderBeforeItOnce) {
  const std::string key = "gets/model.onnxz";
  const std::string url = "s3://models/" + key;
  const fs::path local = stage(model("long.onnxz"), key);
  const auto gets = [] {
    const test_support::S3ProxyStats stats = server_->stats();
    server_->reset_stats();
    return std::make_pair(count_of(operations(stats), "get"), stats.requests_seen);
  };
  edit_model_properties(url, set_license);
  const auto [edit_gets, edit_seen] = gets();
  EXPECT_EQ(edit_gets, 2U) << ::testing::PrintToString(edit_seen);

  SignOptions sign;
  sign.key = PrivateKey::load(keys_.private_pem);
  EditOptions with_key;
  with_key.signing_key = sign.key;
  EXPECT_TRUE(sign_archive(url, sign).entries_read);
  gets();
  EXPECT_FALSE(sign_archive(url, sign).entries_read);
  const auto [sign_gets, sign_seen] = gets();
  EXPECT_EQ(sign_gets, 2U) << ::testing::PrintToString(sign_seen);

  // A model of 1.5 MiB: the first read holds the directory and the model's end.
  const auto grow = [](ModelProto& model) { model.doc_string = std::string(3 << 19, 'd'); };
  edit_model(url, grow);
  gets();
  edit_model_properties(url, set_license, with_key);
  const auto [wide_gets, wide_seen] = gets();
  EXPECT_EQ(wide_gets, 3U) << ::testing::PrintToString(wide_seen);

  edit_model_properties(local, set_license);
  sign_archive(local, sign);
  sign_archive(local, sign);
  edit_model(local, grow);
  edit_model_properties(local, set_license, with_key);
  expect_same_archive(object(key), local, keys_);
}

TEST_F(BucketEditTest, ASmallArchiveIsRewrittenWholeAndTheToolSaysSo) {
  const std::string key = "small/model.onnxz";
  const fs::path local = stage(model("small.onnxz"), key);
  const EditResult result = edit_model_properties("s3://models/" + key, set_license);
  EXPECT_TRUE(result.object_rewritten);
  const std::vector<std::string> ops = operations(server_->stats());
  EXPECT_EQ(count_of(ops, "copy"), 0U);
  EXPECT_EQ(count_of(ops, "part"), 1U);
  edit_model_properties(local, set_license);
  EXPECT_EQ(object(key), test_support::read_file_bytes(local));

  stage(model("small.onnxz"), key);
  const test_support::CliRun run = test_support::run_cli(
      dir_.path(), {"edit", "s3://models/" + key, "--set-metadata", "license=MIT"});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_NE(run.err.find("uploaded whole"), std::string::npos) << run;
}

TEST_F(BucketEditTest, SigningWithoutDigestsReadsEveryEntryAndUploadsTheTail) {
  const std::string key = "sign/model.onnxz";
  const fs::path local = stage(model("big.onnxz"), key);
  SignOptions options;
  options.key = PrivateKey::load(keys_.private_pem);
  const SignResult result = sign_archive("s3://models/" + key, options);
  EXPECT_TRUE(result.entries_read);
  const test_support::S3ProxyStats stats = server_->stats();
  EXPECT_LT(stats.received, fs::file_size(local) / 4);
  EXPECT_EQ(count_of(operations(stats), "copy"), 1U);
  const SignResult local_result = sign_archive(local, options);
  EXPECT_EQ(result.entries, local_result.entries);
  expect_same_archive(object(key), local, keys_);
  // With __DIGESTS in place, signing again reads the tail only.
  server_->reset_stats();
  const SignResult again = sign_archive("s3://models/" + key, options);
  EXPECT_FALSE(again.entries_read);
  EXPECT_EQ(again.entries, local_result.entries);
  EXPECT_LT(server_->stats().bytes, std::uint64_t{2} << 20);
  sign_archive(local, options);
  expect_same_archive(object(key), local, keys_);

  // The tool says which way it went.
  stage(model("big.onnxz"), key);
  const std::vector<std::string> args = {"sign", "s3://models/" + key, "--key",
                                         keys_.private_pem.string()};
  const test_support::CliRun first = test_support::run_cli(dir_.path(), args);
  EXPECT_EQ(first.exit_code, 0) << first;
  EXPECT_NE(first.err.find("every entry was read from the bucket"), std::string::npos) << first;
  const test_support::CliRun second = test_support::run_cli(dir_.path(), args);
  EXPECT_EQ(second.exit_code, 0) << second;
  EXPECT_NE(second.err.find("kept as they stand"), std::string::npos) << second;
}

// The store's settings given as S3Options reach every request of a read, an edit and a signing
// (the source's reads and the upload's), overriding an environment whose keys are wrong and
// which names no endpoint (nor does ~/.aws: AWS_CONFIG_FILE names no file).
TEST_F(BucketEditTest, ExplicitOptionsOverrideTheEnvironment) {
  const std::string key = "explicit/model.onnxz";
  const std::string url = "s3://models/" + key;
  const fs::path local = stage(model("big.onnxz"), key);
  ::setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret", 1);
  const Error refused = error_of([&] { Archive::open_url(url); });
  EXPECT_EQ(refused.code(), ErrorCode::kIo) << refused.what();
  ::unsetenv("AWS_ENDPOINT_URL_S3");
  const S3Options s3 = server_->options();
  struct Restore {
    ~Restore() {
      ::setenv("AWS_SECRET_ACCESS_KEY", server_->secret_access_key().c_str(), 1);
      ::setenv("AWS_ENDPOINT_URL_S3", server_->endpoint().c_str(), 1);
    }
  } restore;

  LoadOptions load;
  load.s3 = s3;
  EXPECT_EQ(Archive::open_url(url, load).tensors().size(), Archive::open(local).tensors().size());
  EditOptions edit;
  edit.s3 = s3;
  edit_model_properties(url, set_license, edit);
  edit_model_properties(local, set_license);
  EXPECT_EQ(object(key), test_support::read_file_bytes(local));
  SignOptions sign;
  sign.key = PrivateKey::load(keys_.private_pem);
  sign.s3 = s3;
  EXPECT_TRUE(sign_archive(url, sign).entries_read);  // Hashes every entry, a GET each.
  sign_archive(local, sign);
  expect_same_archive(object(key), local, keys_);
  EXPECT_FALSE(sign_archive(url, sign).entries_read);  // The statement as it stands.
  EXPECT_EQ(server_->pending_uploads(), std::vector<std::string>{});
}

TEST_F(BucketEditTest, AConcurrentWriterFailsTheEditAndLeavesNoUpload) {
  for (const char* operation : {"copy", "complete"}) {
    SCOPED_TRACE(operation);
    const std::string key = "race/model.onnxz";
    stage(model("big.onnxz"), key);
    server_->inject("overwrite", 1, operation);
    const Error error = error_of([&] { edit_model_properties("s3://models/" + key, set_license); });
    EXPECT_EQ(error.code(), ErrorCode::kChanged) << error.what();
    EXPECT_EQ(error.context().file, "s3://models/" + key);
    EXPECT_NE(std::string(error.what()).find("another client"), std::string::npos);
    // The other writer's bytes stay: the edit wrote nothing.
    const std::vector<std::uint8_t> now = object(key);
    EXPECT_EQ(std::string(now.begin(), now.end()), "written by another client meanwhile");
    EXPECT_EQ(server_->pending_uploads(), std::vector<std::string>{});
    EXPECT_EQ(count_of(operations(server_->stats()), "abort"), 1U);
  }
}

TEST_F(BucketEditTest, TheStoresConflictIsReportedAndTheObjectUnchanged) {
  const std::string key = "conflict/model.onnxz";
  const fs::path local = stage(model("big.onnxz"), key);
  server_->inject("conflict", 1, "complete");
  const Error error = error_of([&] { edit_model_properties("s3://models/" + key, set_license); });
  EXPECT_NE(std::string(error.what()).find("ConditionalRequestConflict"), std::string::npos)
      << error.what();
  EXPECT_NE(std::string(error.what()).find("s3://models/" + key), std::string::npos);
  EXPECT_EQ(object(key), test_support::read_file_bytes(local));
  EXPECT_EQ(server_->pending_uploads(), std::vector<std::string>{});
}

// What the store may answer on the way -- 503 SlowDown to a copy, a connection cut mid-part -- is
// retried by the client; a Complete that keeps answering 200 with an <Error> fails the edit, the
// object unchanged and the upload aborted.
TEST_F(BucketEditTest, RetriedFaultsPassAndAFailedCompleteLeavesTheObject) {
  const std::string key = "faults/model.onnxz";
  fs::path local = stage(model("big.onnxz"), key);
  server_->inject("slowdown", 1, "copy");
  server_->inject("cut", 1, "part");
  edit_model_properties("s3://models/" + key, set_license);
  edit_model_properties(local, set_license);
  EXPECT_EQ(object(key), test_support::read_file_bytes(local));
  const std::vector<std::string> ops = operations(server_->stats());
  EXPECT_EQ(count_of(ops, "copy"), 2U) << ::testing::PrintToString(ops);
  EXPECT_EQ(count_of(ops, "part"), 2U);

  local = stage(model("big.onnxz"), key);
  server_->inject("error200", 5, "complete");  // The first attempt and every retry.
  const Error error = error_of([&] { edit_model_properties("s3://models/" + key, set_license); });
  EXPECT_NE(std::string(error.what()).find("InternalError"), std::string::npos) << error.what();
  EXPECT_EQ(object(key), test_support::read_file_bytes(local));
  EXPECT_EQ(server_->pending_uploads(), std::vector<std::string>{});
}

}  // namespace
}  // namespace onnxzip::archive_detail
