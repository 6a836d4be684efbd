// The fast paths behind src/base/fast_path.h against their plain twins: each switched off gives
// the same bytes, the same model and the same errors as switched on (bench/fast_path_bench.cpp
// times the two). The fast paths with seams of their own are checked where they live: the CRC-32
// worker in zip_writer_test and signing_test, splice in output_file_test, the local-header
// read-ahead in zip_reader_test.
#include "fast_path.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/edit.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/legacy.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/signing.h"
#include "page_advice.h"
#include "support/external_tool.h"
#include "support/model_builder.h"
#include "support/scratch_dir.h"
#include "support/test_keys.h"

namespace onnxzip {
namespace {

using detail::FastPath;
using test_support::read_file_bytes;
using test_support::ScratchDir;

// Switches a fast path off for the scope.
class PlainTwin final {
 public:
  explicit PlainTwin(FastPath path) : path_(path) { detail::set_fast_path_on(path_, false); }
  ~PlainTwin() { detail::set_fast_path_on(path_, true); }
  PlainTwin(const PlainTwin&) = delete;
  PlainTwin& operator=(const PlainTwin&) = delete;

 private:
  FastPath path_;
};

// Payloads together well over kHugePageAdviceBytes, so that buffers get the advice.
ModelProto large_model() {
  ModelProto model;
  model.ir_version = 8;
  GraphProto& graph = model.graph.ensure();
  graph.initializer.push_back(
      test_support::raw_tensor("big", TensorProto::kFloat, {3, 1 << 20}, 1));
  graph.initializer.push_back(test_support::raw_tensor("small", TensorProto::kFloat, {300}, 2));
  return model;
}

TEST(FastPathTest, EverySwitchIsOnUnlessTurnedOffAndEachTurnsOffAlone) {
  for (const FastPath path : {FastPath::kHugePageAdvice, FastPath::kDigestsAhead,
                              FastPath::kShareBlocks, FastPath::kAllocateAhead}) {
    EXPECT_TRUE(detail::fast_path_on(path));
  }
  {
    const PlainTwin plain(FastPath::kDigestsAhead);
    EXPECT_FALSE(detail::fast_path_on(FastPath::kDigestsAhead));
    EXPECT_TRUE(detail::fast_path_on(FastPath::kHugePageAdvice));
  }
  EXPECT_TRUE(detail::fast_path_on(FastPath::kDigestsAhead));
}

TEST(FastPathTest, HugePageAdviceChangesNoSerializedOrReadByte) {
  const ModelProto model = large_model();
  const OwnedBytes advised = serialize_model_to_owned_bytes(model);
  ASSERT_GT(advised.size(), detail::kHugePageAdviceBytes);
  ScratchDir dir("fast_path");
  const std::filesystem::path path = dir / "m.onnxz";
  save(model, path);
  LoadOptions read_whole;
  read_whole.access = FileAccess::kRead;
  const std::vector<std::uint8_t> advised_model = [&] {
    const Archive archive = Archive::open(path, read_whole);
    return std::vector<std::uint8_t>(archive.model_bytes().begin(), archive.model_bytes().end());
  }();

  const PlainTwin plain(FastPath::kHugePageAdvice);
  const OwnedBytes plain_bytes = serialize_model_to_owned_bytes(model);
  EXPECT_TRUE(std::equal(advised.span().begin(), advised.span().end(), plain_bytes.span().begin(),
                         plain_bytes.span().end()));
  const Archive archive = Archive::open(path, read_whole);
  EXPECT_TRUE(std::equal(advised_model.begin(), advised_model.end(), archive.model_bytes().begin(),
                         archive.model_bytes().end()));
}

// Shared blocks take effect on XFS with reflink and btrfs only (TMPDIR there makes this test
// share them); elsewhere both writes copy. Either way the archives are the same bytes.
TEST(FastPathTest, SharingBlocksWritesWhatCopyingThemWrites) {
  ScratchDir dir("fast_path");
  LegacyWriteOptions external;
  external.mode = LegacyWriteOptions::Mode::kExternal;
  external.alignment = 4096;
  write_legacy_model(large_model(), dir / "m.onnx", external);
  SaveOptions aligned;
  aligned.alignment = 4096;
  save(read_legacy_model(dir / "m.onnx"), dir / "shared.onnxz", aligned);
  {
    const PlainTwin plain(FastPath::kShareBlocks);
    save(read_legacy_model(dir / "m.onnx"), dir / "copied.onnxz", aligned);
  }
  EXPECT_EQ(read_file_bytes(dir / "shared.onnxz"), read_file_bytes(dir / "copied.onnxz"));
  EXPECT_TRUE(verify(dir / "shared.onnxz").ok());
}

// A model saved from memory and one converted from a mapped data file (large pieces both: the
// pieces allocated ahead), with the blocks allocated ahead and without: the same bytes, and a
// file no longer than what was written.
TEST(FastPathTest, AllocatingAheadWritesWhatAllocatingAsWrittenWrites) {
  ScratchDir dir("fast_path");
  const ModelProto model = large_model();
  LegacyWriteOptions external;
  external.mode = LegacyWriteOptions::Mode::kExternal;
  write_legacy_model(model, dir / "m.onnx", external);
  save(model, dir / "ahead.onnxz");
  save(read_legacy_model(dir / "m.onnx"), dir / "ahead_converted.onnxz");
  {
    const PlainTwin plain(FastPath::kAllocateAhead);
    save(model, dir / "plain.onnxz");
    save(read_legacy_model(dir / "m.onnx"), dir / "plain_converted.onnxz");
  }
  const std::vector<std::uint8_t> ahead = read_file_bytes(dir / "ahead.onnxz");
  EXPECT_EQ(ahead, read_file_bytes(dir / "plain.onnxz"));
  EXPECT_EQ(read_file_bytes(dir / "ahead_converted.onnxz"),
            read_file_bytes(dir / "plain_converted.onnxz"));
  EXPECT_EQ(read_file_bytes(dir / "ahead_converted.onnxz"), ahead);
  EXPECT_TRUE(verify(dir / "ahead.onnxz").ok());
}

class DigestsAheadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test_support::find_tool("openssl")) GTEST_SKIP() << "no openssl tool";
    keys_ = test_support::make_key_pair(dir_.path(), "k");
    save(large_model(), ahead_);
    SignOptions sign;
    sign.key = PrivateKey::load(keys_.private_pem);
    sign.output.durable = false;
    sign_archive(ahead_, sign);
    std::filesystem::copy_file(ahead_, plain_);
  }

  // Edits `path` as a user re-signing the archive does; the fast path as the switch says.
  void edit(const std::filesystem::path& path) const {
    EditOptions options;
    options.signing_key = PrivateKey::load(keys_.private_pem);
    options.output.durable = false;
    edit_model_properties(
        path, [](ModelProto& model) { model.doc_string = "edited"; }, options);
  }

  // The Error an edit of `path` throws, as code and message, the path written "<archive>".
  std::string edit_error(const std::filesystem::path& path) const {
    try {
      edit(path);
    } catch (const Error& e) {
      std::string text = std::string(to_string(e.code())) + ": " + e.message();
      for (std::size_t at; (at = text.find(path.string())) != std::string::npos;) {
        text.replace(at, path.string().size(), "<archive>");
      }
      return text;
    }
    return "no error";
  }

  ScratchDir dir_{"fast_path"};
  std::filesystem::path ahead_ = dir_ / "ahead.onnxz";
  std::filesystem::path plain_ = dir_ / "plain.onnxz";
  test_support::KeyFiles keys_;
};

// The signature's bytes differ from one signing to the next (ECDSA); everything else is the same.
TEST_F(DigestsAheadTest, AnEditReadingTheDigestsAheadWritesWhatOneReadingThemInTurnWrites) {
  edit(ahead_);
  {
    const PlainTwin plain(FastPath::kDigestsAhead);
    edit(plain_);
  }
  const ZipReader a = ZipReader::open(ahead_);
  const ZipReader b = ZipReader::open(plain_);
  ASSERT_EQ(a.entries().size(), b.entries().size());
  for (std::size_t i = 0; i < a.entries().size(); ++i) {
    const ZipEntry& x = a.entries()[i];
    EXPECT_EQ(x.name, b.entries()[i].name);
    if (x.name == kSignatureEntryName) continue;
    const ByteSpan one = a.data(x).view();
    const ByteSpan two = b.data(b.entries()[i]).view();
    EXPECT_TRUE(std::equal(one.begin(), one.end(), two.begin(), two.end())) << x.name;
  }
  VerifyOptions check;
  check.public_key = PublicKey::load(keys_.public_pem);
  EXPECT_TRUE(verify(ahead_, check).ok());
  EXPECT_TRUE(verify(plain_, check).ok());
}

TEST_F(DigestsAheadTest, ABrokenStatementFailsTheEditWithTheSameErrorEitherWay) {
  for (const std::filesystem::path& path : {ahead_, plain_}) {
    const ZipReader zip = ZipReader::open(path);
    const std::uint64_t at = zip.find(kDigestsEntryName)->local->data_offset;
    std::vector<std::uint8_t> bytes = read_file_bytes(path);
    bytes[at] = '!';  // Not JSON.
    test_support::write_file_bytes(path, std::string(bytes.begin(), bytes.end()));
  }
  const std::string ahead = edit_error(ahead_);
  std::string plain;
  {
    const PlainTwin twin(FastPath::kDigestsAhead);
    plain = edit_error(plain_);
  }
  EXPECT_EQ(ahead, plain);
  EXPECT_NE(ahead.find("<archive>"), std::string::npos) << ahead;
  EXPECT_NE(ahead.find("__DIGESTS"), std::string::npos) << ahead;
}

}  // namespace
}  // namespace onnxzip
