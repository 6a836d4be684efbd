// Writes into a bucket (src/io/s3_upload.cpp, and the writers through it: save, ArchiveWriter,
// convert, repack) against a real S3 server: moto with signature checking on, behind the proxy
// that counts requests, enforces If-None-Match on Complete and injects faults
// (tests/support/s3_server.py). Each object is compared byte for byte with the local file the
// same call writes, and read back by boto3, an independent client; after every failure the
// bucket holds no upload and no object. Skipped, with the reason, where no Python has moto or
// the build has no libcurl.
#include "s3_upload.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "check.h"
#include "onnxzip/archive.h"
#include "onnxzip/convert.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/http_source.h"
#include "s3_client.h"
#include "s3_source.h"
#include "support/cli_run.h"
#include "support/error_of.h"
#include "support/external_tool.h"
#include "support/model_builder.h"
#include "support/s3_server.h"
#include "support/scratch_dir.h"

namespace onnxzip::s3 {
namespace {

namespace fs = std::filesystem;
using test_support::error_of;
using test_support::S3Server;

constexpr const char* kBucket = test_support::kS3TestBucket;
constexpr std::uint64_t kPart = kS3MinPartSize;

std::vector<std::uint8_t> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A model of `count` FLOAT initializers of `floats` values each, their payloads inline (save()
// externalizes them).
ModelProto float_model(std::size_t count, std::int64_t floats) {
  ModelProto model;
  model.ir_version = 8;
  GraphProto& graph = model.graph.ensure();
  for (std::size_t i = 0; i < count; ++i) {
    graph.initializer.push_back(test_support::raw_tensor(
        "w" + std::to_string(i), TensorProto::kFloat, {floats}, static_cast<std::uint32_t>(i)));
  }
  return model;
}

TEST(S3PartSize, GrowsEveryThousandPartsUnlessFixed) {
  const S3Options options{.part_size = kPart};
  EXPECT_EQ(S3Upload::part_size_of(options, 1), kPart);
  EXPECT_EQ(S3Upload::part_size_of(options, 1000), kPart);
  EXPECT_EQ(S3Upload::part_size_of(options, 1001), 2 * kPart);
  EXPECT_EQ(S3Upload::part_size_of(options, 10'000), 512 * kPart);
  const S3Options big{.part_size = std::uint64_t{1} << 30};
  EXPECT_EQ(S3Upload::part_size_of(big, 9000), kS3MaxPartSize);
  const S3Options fixed{.part_size = kPart, .fixed_part_size = true};
  EXPECT_EQ(S3Upload::part_size_of(fixed, 10'000), kPart);
}

class S3UploadTest : public test_support::S3SuiteTest<S3UploadTest> {
 public:
  static Uploads prepare(const fs::path& files) {
    std::ofstream(files / "taken.bin") << "an object that is there already";
    return {{"taken.onnxz", (files / "taken.bin").string()}};
  }

 protected:
  static S3Options options() {
    S3Options options = server_->options();
    options.part_size = kPart;
    return options;
  }
  static Client client() { return Client(server_->config()); }

  // The object's bytes as boto3 reads them; throws when there is no such object.
  static std::vector<std::uint8_t> boto3_read(const std::string& key) {
    static const std::string python = S3Server::python().value_or("");  // Slow to find.
    const fs::path out = file("boto3.out");
    fs::remove(out);
    const std::string script =
        "import boto3,sys\n"
        "s3=boto3.client('s3',endpoint_url=sys.argv[1],region_name='us-east-1',"
        "aws_access_key_id=sys.argv[2],aws_secret_access_key=sys.argv[3])\n"
        "open(sys.argv[5],'wb').write(s3.get_object(Bucket='models',Key=sys.argv[4])['Body']"
        ".read())\n";
    const test_support::ToolResult result = test_support::run_tool(
        test_support::shell_quote(python) + " -c " + test_support::shell_quote(script) + " " +
        test_support::shell_quote(server_->endpoint()) + " " +
        test_support::shell_quote(server_->access_key_id()) + " " +
        test_support::shell_quote(server_->secret_access_key()) + " " +
        test_support::shell_quote(key) + " " + test_support::shell_quote(out.string()) + " 2>&1");
    if (result.exit_code != 0) throw std::runtime_error("boto3: " + result.output);
    return read_file(out);
  }

  // Nothing of a failed write is left: no upload in progress, no object.
  static void expect_nothing_left(const std::string& key) {
    Client store = client();
    for (const PendingUpload& pending : store.list_multipart_uploads(kBucket)) {
      ADD_FAILURE() << "left: " << pending.key << " " << pending.upload_id << " (after " << key
                    << ")";
    }
    EXPECT_FALSE(store.head_object({kBucket, key})) << key;
  }

  // How many forwarded requests start with `prefix` ("PUT ", "POST ").
  static std::size_t count_requests(const std::string& prefix) {
    const auto seen = server_->stats().requests_seen;
    return static_cast<std::size_t>(
        std::count_if(seen.begin(), seen.end(),
                      [&](const std::string& line) { return line.starts_with(prefix); }));
  }

  test_support::ScratchDir dir_{"s3_upload_case"};
};

TEST_F(S3UploadTest, SaveWritesTheLocalFilesBytesInOneCreateEachPartAndOneComplete) {
  const ModelProto model = float_model(6, 600'000);  // 14.4 MB of payloads: 3 parts of 5 MiB.
  SaveOptions local;
  save(model, dir_ / "model.onnxz", local);
  const std::vector<std::uint8_t> expected = read_file(dir_ / "model.onnxz");
  ASSERT_GT(expected.size(), 2 * kPart);

  SaveOptions remote;
  remote.s3 = options();
  server_->reset_stats();
  save(model, "s3://models/saved/model.onnxz", remote);
  const std::size_t parts = (expected.size() + kPart - 1) / kPart;
  EXPECT_EQ(server_->stats().requests, parts + 2);
  EXPECT_EQ(count_requests("POST /models/saved/model.onnxz?uploads="), 1U);
  EXPECT_EQ(count_requests("PUT /models/saved/model.onnxz?partNumber="), parts);
  EXPECT_EQ(count_requests("POST /models/saved/model.onnxz?uploadId="), 1U);
  EXPECT_EQ(boto3_read("saved/model.onnxz"), expected);
  EXPECT_TRUE(client().list_multipart_uploads(kBucket).empty());
}

TEST_F(S3UploadTest, ArchiveWriterStreamsAHeaderPartHeldUntilItsCrcWhileLaterPartsGoAhead) {
  // One streamed tensor of 4 parts: the part holding its local header waits for the CRC-32.
  const std::int64_t floats = static_cast<std::int64_t>(4 * kPart / 4);
  const auto write = [&](const fs::path& path, const SaveOptions& save_options) {
    ArchiveWriter writer(path, save_options);
    ModelProto model;
    model.ir_version = 8;
    TensorProto& tensor = model.graph.ensure().initializer.emplace_back();
    tensor.name = "big";
    tensor.data_type = TensorProto::kFloat;
    tensor.dims = {floats};
    writer
        .add_tensor("big", TensorProto::kFloat, tensor.dims,
                    [&](EntrySink& sink) {
                      for (std::uint32_t i = 0; i < 64; ++i) {
                        sink.write(test_support::pattern_bytes(floats * 4 / 64, i));
                      }
                    })
        .apply_to(tensor);
    writer.finish(model);
  };
  write(dir_ / "streamed.onnxz", {});
  SaveOptions remote;
  remote.s3 = options();
  remote.s3.parts_in_flight = 1;
  write("s3://models/streamed.onnxz", remote);
  EXPECT_EQ(boto3_read("streamed.onnxz"), read_file(dir_ / "streamed.onnxz"));
  // Part 1 (the header) went after the data's parts 2, 3, 4.
  std::vector<std::string> parts;
  for (const std::string& line : server_->stats().requests_seen) {
    if (line.starts_with("PUT ")) parts.push_back(line.substr(line.find("partNumber=") + 11, 1));
  }
  ASSERT_EQ(parts.size(), 5U);
  EXPECT_EQ(parts[0], "2");
  EXPECT_EQ(parts[3], "1");
}

TEST_F(S3UploadTest, HoldsOnlyTheReservedPartAndTheOneBeingFilled) {
  S3Options one_at_a_time = options();
  one_at_a_time.parts_in_flight = 1;  // Parts go in the order they are released.
  S3Upload upload("s3://models/held.bin", one_at_a_time);
  const std::vector<std::uint8_t> chunk(1 << 20, 0x5A);
  upload.reserve(100);
  for (int i = 0; i < 20; ++i) upload.write(chunk);  // 4 parts, 100 bytes in the last.
  const std::vector<std::uint8_t> header(100, 0xAB);
  upload.write_at(0, header);
  upload.commit();
  EXPECT_EQ(upload.most_parts_held(), 2U);  // Part 1, and the one being filled.
  std::vector<std::string> order;
  for (const std::string& line : server_->stats().requests_seen) {
    if (line.starts_with("PUT ")) order.push_back(line.substr(line.find("partNumber=") + 11, 1));
  }
  EXPECT_EQ(order, (std::vector<std::string>{"2", "3", "4", "1", "5"}));
  std::vector<std::uint8_t> expected(100, 0xAB);
  for (int i = 0; i < 20; ++i) expected.insert(expected.end(), chunk.begin(), chunk.end());
  EXPECT_EQ(boto3_read("held.bin"), expected);
}

TEST_F(S3UploadTest, WriteAtIntoAPartAlreadySentIsRefused) {
  S3Upload upload("s3://models/late patch.bin", options());
  const std::vector<std::uint8_t> chunk(kPart + 10, 1);
  upload.write(chunk);
  if (detail::kDchecksOn) GTEST_SKIP() << "a writer's mistake: a DCHECK in this build";
  const std::uint8_t byte = 2;
  const Error error = error_of([&] { upload.write_at(0, ByteSpan(&byte, 1)); });
  EXPECT_EQ(error.code(), ErrorCode::kBadState);
}

TEST_F(S3UploadTest, RetriedFaultsStillWriteTheSameBytes) {
  const ModelProto model = float_model(3, 600'000);
  save(model, dir_ / "m.onnxz");
  SaveOptions remote;
  remote.s3 = options();
  for (const std::string fault : {"slowdown", "cut"}) {
    SCOPED_TRACE(fault);
    server_->reset_stats();
    server_->inject(fault);
    const std::string key = "retried-" + fault + ".onnxz";
    save(model, "s3://models/" + key, remote);
    EXPECT_EQ(boto3_read(key), read_file(dir_ / "m.onnxz"));
    EXPECT_TRUE(client().list_multipart_uploads(kBucket).empty());
  }
}

TEST_F(S3UploadTest, AFailedCompleteAbortsAndLeavesNothing) {
  {
    S3Upload upload("s3://models/late error.onnxz", options(), process_environment,
                    {.retries = 1, .retry_delay = std::chrono::milliseconds(1)});
    upload.write(std::vector<std::uint8_t>(1000, 7));
    server_->inject("error200", 2, "complete");  // The Complete and its retry.
    const Error error = error_of([&] { upload.commit(); });
    EXPECT_EQ(error.message(),
              "s3://models/late error.onnxz: completing the upload of 1 parts failed: HTTP 200 "
              "InternalError (\"We encountered an internal error. Please try again.\") (after 2 "
              "attempts)");
  }  // Destroyed without a commit: aborted.
  expect_nothing_left("late error.onnxz");
}

// A Complete whose answer is lost after the store completed the upload is sent again and refused
// (NoSuchUpload, or 412 for its If-None-Match: the object now exists): the object's full-object
// CRC-32 is the upload's, so the upload succeeded and the commit says so. Before, the commit
// failed with the refusal.
TEST_F(S3UploadTest, ACompleteWhoseAnswerWasLostIsFoundDoneByItsCrc) {
  const std::vector<std::uint8_t> bytes(1000, 9);
  for (const bool overwrite : {false, true}) {
    SCOPED_TRACE(overwrite);
    const std::string key = overwrite ? "lost-answer-overwrite.onnxz" : "lost-answer.onnxz";
    S3Options settings = options();
    settings.overwrite = overwrite;
    S3Upload upload("s3://models/" + key, settings, process_environment,
                    {.retries = 2, .retry_delay = std::chrono::milliseconds(1)});
    upload.write(bytes);
    server_->reset_stats();
    server_->inject("lost", 1, "complete");
    upload.commit();
    std::vector<std::string> ops;
    for (const auto& request : server_->stats().log) {
      if (request.operation != "part") ops.push_back(request.operation);
    }
    EXPECT_EQ(boto3_read(key), bytes);
    // The Complete sent again (by libcurl or the retries). moto answers a completed upload's
    // Complete 200 again; If-None-Match is refused with 412 (the proxy checks it), and an Abort
    // then finds the upload gone, so the object is the upload's when its CRC-32 says so.
    const std::vector<std::string> expected =
        overwrite ? std::vector<std::string>{"complete", "complete"}
                  : std::vector<std::string>{"complete", "complete", "abort", "head"};
    EXPECT_EQ(ops, expected);
    EXPECT_TRUE(client().list_multipart_uploads(kBucket).empty());
  }
}

TEST_F(S3UploadTest, AnExistingObjectIsNeverReplacedUnlessOverwriteIsSet) {
  const ModelProto model = float_model(2, 1000);
  SaveOptions remote;
  remote.s3 = options();
  const std::vector<std::uint8_t> before = boto3_read("taken.onnxz");
  const Error error = error_of([&] { save(model, "s3://models/taken.onnxz", remote); });
  EXPECT_EQ(error.code(), ErrorCode::kIo);
  EXPECT_NE(error.message().find("s3://models/taken.onnxz: completing the upload of 1 parts "
                                 "failed: HTTP 412 PreconditionFailed"),
            std::string::npos)
      << error.message();
  EXPECT_EQ(boto3_read("taken.onnxz"), before);
  EXPECT_TRUE(client().list_multipart_uploads(kBucket).empty());

  remote.s3.overwrite = true;
  save(model, "s3://models/taken.onnxz", remote);
  save(model, dir_ / "taken.onnxz");
  EXPECT_EQ(boto3_read("taken.onnxz"), read_file(dir_ / "taken.onnxz"));
}

TEST_F(S3UploadTest, AnExceptionInsideTheWriterAbortsTheUpload) {
  SaveOptions remote;
  remote.s3 = options();
  EXPECT_THROW(
      {
        ArchiveWriter writer("s3://models/thrown.onnxz", remote);
        const std::vector<std::int64_t> dims = {3 * static_cast<std::int64_t>(kPart)};
        writer.add_tensor("t", TensorProto::kUint8, dims, [&](EntrySink& sink) {
          // Part 2 is sent; part 1, with the entry's header, is held.
          sink.write(std::vector<std::uint8_t>(2 * kPart + 1, 3));
          throw std::runtime_error("the producer gave up");
        });
      },
      std::runtime_error);
  expect_nothing_left("thrown.onnxz");
  EXPECT_EQ(count_requests("DELETE /models/thrown.onnxz?uploadId="), 1U);
}

TEST_F(S3UploadTest, AbortingUploadsInProgressLeavesNothing) {
  S3Upload upload("s3://models/interrupted.bin", options());
  upload.write(std::vector<std::uint8_t>(kPart + 1, 4));
  abort_s3_uploads_in_progress();  // What the CLI does on Ctrl-C.
  expect_nothing_left("interrupted.bin");
}

TEST_F(S3UploadTest, ConvertAndRepackWriteIntoTheBucket) {
  const ModelProto model = float_model(2, 1000);
  const std::string legacy = (dir_ / "m.onnx").string();
  std::vector<std::uint8_t> bytes;
  {
    save(model, dir_ / "m.onnxz");
    ConvertOptions to_legacy;
    convert(dir_ / "m.onnxz", legacy, to_legacy);
  }
  ConvertOptions options_remote;
  options_remote.archive.s3 = options();
  convert(legacy, "s3://models/converted.onnxz", options_remote);
  convert(legacy, dir_ / "converted.onnxz");
  EXPECT_EQ(boto3_read("converted.onnxz"), read_file(dir_ / "converted.onnxz"));

  RepackOptions repack_remote;
  repack_remote.save.s3 = options();
  repack(dir_ / "m.onnxz", "s3://models/repacked.onnxz", repack_remote);
  repack(dir_ / "m.onnxz", dir_ / "repacked.onnxz");
  EXPECT_EQ(boto3_read("repacked.onnxz"), read_file(dir_ / "repacked.onnxz"));

  const Error error =
      error_of([&] { convert(dir_ / "m.onnxz", "s3://models/legacy.onnx", ConvertOptions{}); });
  EXPECT_EQ(error.code(), ErrorCode::kUnsupported);
  EXPECT_EQ(error.message(),
            "s3://models/legacy.onnx: a legacy .onnx model (and its data files) cannot be "
            "written to object storage; write an .onnxz archive there");
}

// Starts the tool with `args` and the store's variables; its pid.
pid_t start_tool(const std::vector<std::string>& args,
                 const std::vector<std::pair<std::string, std::string>>& variables) {
  std::vector<std::string> argv_text = {ONNXZIP_CLI_PATH};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (const auto& [name, value] : variables) ::setenv(name.c_str(), value.c_str(), 1);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    std::vector<char*> argv;
    for (std::string& text : argv_text) argv.push_back(text.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

int wait_status(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST_F(S3UploadTest, TheToolConvertsAndRepacksIntoABucket) {
  const ModelProto model = float_model(3, 600'000);
  save(model, dir_ / "m.onnxz");
  ASSERT_EQ(test_support::run_cli(
                dir_.path(), {"convert", (dir_ / "m.onnxz").string(), (dir_ / "m.onnx").string()})
                .exit_code,
            0);
  ASSERT_EQ(test_support::run_cli(dir_.path(), {"convert", (dir_ / "m.onnx").string(),
                                                (dir_ / "local.onnxz").string()})
                .exit_code,
            0);
  const auto variables = server_->variables(dir_.path());
  const auto run = [&](const std::vector<std::string>& args) {
    const int status = wait_status(start_tool(args, variables));
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  };
  server_->reset_stats();
  EXPECT_EQ(run({"convert", (dir_ / "m.onnx").string(), "s3://models/tool.onnxz", "--part-size",
                 "5M", "--parts-in-flight", "2"}),
            0);
  EXPECT_EQ(boto3_read("tool.onnxz"), read_file(dir_ / "local.onnxz"));
  EXPECT_EQ(count_requests("PUT /models/tool.onnxz?partNumber="),
            (read_file(dir_ / "local.onnxz").size() + kPart - 1) / kPart);
  // An existing object: refused without --overwrite, replaced with it.
  EXPECT_EQ(run({"repack", (dir_ / "m.onnxz").string(), "s3://models/tool.onnxz"}), 1);
  EXPECT_EQ(run({"repack", (dir_ / "m.onnxz").string(), "s3://models/tool.onnxz", "--overwrite"}),
            0);
  ASSERT_EQ(test_support::run_cli(dir_.path(), {"repack", (dir_ / "m.onnxz").string(),
                                                (dir_ / "repacked.onnxz").string()})
                .exit_code,
            0);
  EXPECT_EQ(boto3_read("tool.onnxz"), read_file(dir_ / "repacked.onnxz"));
  EXPECT_TRUE(client().list_multipart_uploads(kBucket).empty());
  EXPECT_EQ(
      run({"repack", (dir_ / "m.onnxz").string(), (dir_ / "x.onnxz").string(), "--overwrite"}),
      2);  // A usage error: the S3 flags are for an s3:// OUT.
}

// Ctrl-C while parts are being uploaded: the tool aborts the upload, then dies of the signal.
TEST_F(S3UploadTest, CtrlCAbortsTheToolsUpload) {
  const ModelProto model = float_model(3, 600'000);
  save(model, dir_ / "m.onnxz");
  // Every part is refused with SlowDown for longer than the test needs (4 retries, from 200 ms
  // doubling: 3 s), so the upload is surely under way when the signal comes.
  server_->inject("slowdown", 100, "part");
  const pid_t pid = start_tool(
      {"repack", (dir_ / "m.onnxz").string(), "s3://models/interrupted.onnxz", "--part-size", "5M"},
      server_->variables(dir_.path()));
  bool uploading = false;
  for (int i = 0; i < 3000 && !uploading; ++i) {
    uploading = count_requests("PUT /models/interrupted.onnxz") > 0;
    if (!uploading) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGINT);
  const int status = wait_status(pid);
  ASSERT_TRUE(uploading);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << status;
  EXPECT_EQ(count_requests("DELETE /models/interrupted.onnxz?uploadId="), 1U);
  expect_nothing_left("interrupted.onnxz");
}

}  // namespace
}  // namespace onnxzip::s3
