// Many writers, one archive (parts.h): the plan against ZipWriter's layout, its bytes, the part
// writers (threads here; processes in tests/python/test_parts.py) against one ArchiveWriter,
// byte for byte, and the refusals that publish nothing.
#include "onnxzip/parts.h"

#include <gtest/gtest.h>

#include <thread>

#include "onnxzip/archive.h"
#include "onnxzip/internal/http_source.h"
#include "onnxzip/signing.h"
#include "onnxzip/tensor.h"
#include "parts_bucket.h"
#include "parts_codec.h"
#include "s3_client.h"
#include "s3_config.h"
#include "s3_source.h"
#include "support/error_of.h"
#include "support/external_tool.h"
#include "support/model_builder.h"
#include "support/s3_server.h"
#include "support/scratch_dir.h"
#include "support/test_keys.h"

namespace onnxzip {
namespace {

using test_support::error_of;
using test_support::pattern_bytes;
using test_support::read_file_bytes;
using test_support::ScratchDir;

// The names in `folder`, sorted: no temporary is left behind.
std::vector<std::string> names_in(const std::filesystem::path& folder) {
  std::vector<std::string> names;
  for (const auto& item : std::filesystem::directory_iterator(folder)) {
    names.push_back(item.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Two folders, so that both archives have one name: `__DIGESTS` names the model by it.
struct TwoFolders {
  explicit TwoFolders(const std::string& tag) : dir(tag) {
    std::filesystem::create_directory(dir / "one");
    std::filesystem::create_directory(dir / "many");
  }
  std::filesystem::path one() const { return dir / "one" / "m.onnxz"; }
  std::filesystem::path many() const { return dir / "many" / "m.onnxz"; }
  ScratchDir dir;
};

struct Tensor {
  PartTensor info;
  std::vector<std::uint8_t> bytes;
};

// Sizes 0, 1, 63, 64, 65 and past the writer's deferred-CRC threshold; names that sanitize alike
// and differ only in case, so that the entry names get suffixes.
std::vector<Tensor> sample_tensors() {
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> shapes = {
      {"layer.0/w", {0}},   {"layer_0_w", {1}},   {"W", {63}},           {"w", {64}},
      {"onnx::Mul", {65}},  {"emb", {3, 100003}}, {"layer.1/w", {7, 9}}, {"norm", {4096}},
      {"head", {1, 70000}}, {"layer.0.w", {2, 2}}};
  std::vector<Tensor> tensors;
  std::uint32_t seed = 1;
  for (const auto& [name, dims] : shapes) {
    const std::int32_t type = seed % 2 == 0 ? TensorProto::kFloat : TensorProto::kUint8;
    Tensor& t = tensors.emplace_back();
    t.info = {.name = name, .data_type = type, .dims = dims};
    t.bytes = pattern_bytes(static_cast<std::size_t>(tensor_byte_size(dims, type, "dims")), seed++);
  }
  return tensors;
}

// `tensors` as `parts` contiguous runs in order (the last ones may be empty).
std::vector<std::vector<PartTensor>> split(const std::vector<Tensor>& tensors, std::size_t parts) {
  std::vector<std::vector<PartTensor>> out(parts);
  const std::size_t per = (tensors.size() + parts - 1) / parts;
  for (std::size_t i = 0; i < tensors.size(); ++i) out[i / per].push_back(tensors[i].info);
  return out;
}

// A model whose initializers refer to every tensor (by `ref`), plus a small inline one and, with
// `big_inline`, one above the threshold that finish() externalizes.
template <typename Ref>
ModelProto model_of(const std::vector<Tensor>& tensors, Ref&& ref, bool big_inline) {
  ModelProto model;
  model.ir_version = 8;
  GraphProto& graph = model.graph.ensure();
  for (const Tensor& t : tensors) {
    TensorProto& tensor = graph.initializer.emplace_back();
    tensor.name = t.info.name;
    tensor.data_type = t.info.data_type;
    tensor.dims = t.info.dims;
    ref(t).apply_to(tensor);
  }
  graph.initializer.push_back(test_support::raw_tensor("bias", TensorProto::kFloat, {8}, 77));
  if (big_inline) {
    graph.initializer.push_back(
        test_support::raw_tensor("layer:0:w", TensorProto::kFloat, {600}, 78));
  }
  return model;
}

// What one ArchiveWriter writes for the same tensors, order and options.
void write_single(const std::filesystem::path& path, const std::vector<Tensor>& tensors,
                  const PartsOptions& options, bool big_inline) {
  ArchiveWriter writer(path, {.alignment = options.alignment, .digests = options.digests});
  std::map<std::string, TensorRef> refs;
  for (const Tensor& t : tensors) {
    refs[t.info.name] = writer.add_tensor(t.info.name, t.info.data_type, t.info.dims, t.bytes);
  }
  writer.finish(model_of(
      tensors, [&](const Tensor& t) { return refs.at(t.info.name); }, big_inline));
}

// Writes the archive in `parts` parts, one thread each; returns the token (already finished).
std::vector<std::uint8_t> write_parts(const std::string& target, const std::vector<Tensor>& tensors,
                                      std::size_t parts, const PartsOptions& options,
                                      bool big_inline,
                                      const std::optional<PrivateKey>& key = std::nullopt) {
  // Every writer computes the plan itself: the same lists give the same plan.
  const PartsPlan plan = PartsPlan::make(split(tensors, parts), options);
  const std::vector<std::uint8_t> token = begin_parts(target, plan);
  std::vector<std::vector<std::uint8_t>> receipts(parts);
  std::vector<std::thread> threads;
  for (std::size_t p = 0; p < parts; ++p) {
    threads.emplace_back([&, p] {
      PartWriter writer(token, static_cast<std::uint32_t>(p));
      // A file's writer in reverse order (positioned writes need none); a bucket's in order.
      const bool bucket = target.starts_with("s3://");
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[bucket ? i : tensors.size() - 1 - i];
        if (plan.find(t.info.name)->part == p) writer.add_tensor(t.info.name, t.bytes);
      }
      receipts[p] = writer.receipt();
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<ByteSpan> spans(receipts.begin(), receipts.end());
  finish_parts(token,
               model_of(
                   tensors, [&](const Tensor& t) { return plan.ref(t.info.name); }, big_inline),
               spans, key);
  return token;
}

TEST(PartsPlanTest, OffsetsAreThoseOneWriterGives) {
  const ScratchDir dir("parts_plan");
  const std::vector<Tensor> tensors = sample_tensors();
  for (const std::uint32_t alignment : {64u, 4096u, 65536u}) {
    ArchiveWriter writer(dir / "one.onnxz", {.alignment = alignment});
    const PartsPlan plan = PartsPlan::make(split(tensors, 3), {.alignment = alignment});
    ASSERT_EQ(plan.entries().size(), tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = tensors[i];
      const TensorRef ref = writer.add_tensor(t.info.name, t.info.data_type, t.info.dims, t.bytes);
      const PlannedEntry& planned = plan.entries()[i];
      EXPECT_EQ(planned.entry, ref.location);
      EXPECT_EQ(planned.size, t.bytes.size());
      EXPECT_EQ(planned.offset % alignment, 0u);
      EXPECT_EQ(plan.ref(t.info.name).location, ref.location);
    }
    // Parts are contiguous runs: each begins where the one before ends.
    EXPECT_EQ(plan.part_range(0).first, 0u);
    for (std::size_t p = 1; p < plan.part_count(); ++p) {
      EXPECT_EQ(plan.part_range(p).first, plan.part_range(p - 1).second);
    }
    EXPECT_EQ(plan.part_range(plan.part_count() - 1).second, plan.payload_end());
    writer.finish(model_of(
        tensors, [&](const Tensor& t) { return plan.ref(t.info.name); }, false));
    // The single writer's first entries sit exactly where the plan put them.
    const std::vector<std::uint8_t> bytes = read_file_bytes(dir / "one.onnxz");
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const PlannedEntry& planned = plan.entries()[i];
      ASSERT_LE(planned.offset + planned.size, bytes.size());
      EXPECT_TRUE(std::equal(tensors[i].bytes.begin(), tensors[i].bytes.end(),
                             bytes.begin() + static_cast<std::ptrdiff_t>(planned.offset)))
          << planned.name;
    }
  }
}

TEST(PartsPlanTest, BytesRoundTripAndAreDeterministic) {
  const std::vector<Tensor> tensors = sample_tensors();
  const PartsPlan plan = PartsPlan::make(split(tensors, 4), {.alignment = 128, .digests = true});
  const std::vector<std::uint8_t> bytes = plan.to_bytes();
  EXPECT_EQ(bytes,
            PartsPlan::make(split(tensors, 4), {.alignment = 128, .digests = true}).to_bytes());
  const PartsPlan decoded = PartsPlan::from_bytes(bytes);
  EXPECT_EQ(decoded, plan);
  EXPECT_EQ(decoded.to_bytes(), bytes);
  EXPECT_EQ(decoded.alignment(), 128u);
  EXPECT_TRUE(decoded.digests());
  EXPECT_EQ(decoded.part_count(), 4u);
}

TEST(PartsPlanTest, FromBytesRefusesEveryTruncationAndTrailingBytes) {
  const std::vector<std::uint8_t> bytes = PartsPlan::make(split(sample_tensors(), 2)).to_bytes();
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    const Error e = error_of([&] { PartsPlan::from_bytes(ByteSpan(bytes.data(), length)); });
    EXPECT_EQ(e.code(), ErrorCode::kCorrupt) << length << ": " << e.message();
  }
  std::vector<std::uint8_t> longer = bytes;
  longer.push_back(0);
  const Error e = error_of([&] { PartsPlan::from_bytes(longer); });
  EXPECT_EQ(e.code(), ErrorCode::kCorrupt);
  EXPECT_NE(e.message().find("1 bytes follow the end"), std::string::npos) << e.message();
}

TEST(PartsPlanTest, FromBytesRefusesForgedCountsAndFields) {
  std::vector<std::uint8_t> bytes = PartsPlan::make({{{"w", TensorProto::kFloat, {4}}}}).to_bytes();
  // magic 8, version 4, alignment 4, flags 1, part count at 17.
  std::vector<std::uint8_t> forged = bytes;
  forged[17] = 0xFF;
  forged[18] = 0xFF;
  forged[19] = 0xFF;
  Error e = error_of([&] { PartsPlan::from_bytes(forged); });
  EXPECT_EQ(e.code(), ErrorCode::kLimitExceeded) << e.message();
  forged = bytes;
  forged[16] = 2;  // Unknown flag bits.
  e = error_of([&] { PartsPlan::from_bytes(forged); });
  EXPECT_EQ(e.code(), ErrorCode::kCorrupt);
  EXPECT_NE(e.message().find("unknown bits"), std::string::npos) << e.message();
  forged = bytes;
  forged[8] = 2;  // Version 2.
  e = error_of([&] { PartsPlan::from_bytes(forged); });
  EXPECT_EQ(e.code(), ErrorCode::kCorrupt);
  EXPECT_NE(e.message().find("version 2"), std::string::npos) << e.message();
  forged = bytes;
  forged[12] = 65;  // Alignment 65: checked by make().
  e = error_of([&] { PartsPlan::from_bytes(forged); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message().find("alignment 65"), std::string::npos) << e.message();
  const Error limit = error_of([&] { PartsPlan::from_bytes(bytes, {.max_rank = 0}); });
  EXPECT_EQ(limit.code(), ErrorCode::kLimitExceeded) << limit.message();
}

TEST(PartsPlanTest, RefusesWhatOneWriterRefusesAndAmbiguousNames) {
  Error e = error_of([] { PartsPlan::make({{{"s", TensorProto::kString, {2}}}}); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message().find("no fixed element size"), std::string::npos) << e.message();
  e = error_of([] { PartsPlan::make({{{"n", TensorProto::kFloat, {-1}}}}); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.message();
  e = error_of([] {
    PartsPlan::make({{{"a", TensorProto::kFloat, {1}}}, {{"a", TensorProto::kFloat, {2}}}});
  });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message().find("'a' is given twice (parts 0 and 1)"), std::string::npos)
      << e.message();
  e = error_of([] { PartsPlan::make({{{"a", TensorProto::kFloat, {1}}}}, {.alignment = 32}); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  e = error_of([] { PartsPlan::make({}); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
}

class PartsWriteTest : public ::testing::TestWithParam<std::size_t> {};

TEST_P(PartsWriteTest, SameBytesAsOneWriter) {
  const TwoFolders dirs("parts_write");
  const std::vector<Tensor> tensors = sample_tensors();
  for (const PartsOptions options :
       {PartsOptions{}, PartsOptions{.alignment = 4096, .digests = true}}) {
    for (const bool big_inline : {false, true}) {
      write_single(dirs.one(), tensors, options, big_inline);
      write_parts(dirs.many().string(), tensors, GetParam(), options, big_inline);
      EXPECT_TRUE(read_file_bytes(dirs.many()) == read_file_bytes(dirs.one()))
          << "digests " << options.digests << " big_inline " << big_inline;
      const VerifyReport report = verify(dirs.many());
      EXPECT_TRUE(report.ok());
      EXPECT_EQ(report.digests,
                options.digests ? IntegrityStatus::kVerified : IntegrityStatus::kAbsent);
      EXPECT_EQ(names_in(dirs.many().parent_path()), std::vector<std::string>{"m.onnxz"});
    }
  }
}

TEST_P(PartsWriteTest, SignedLikeSignArchive) {
  if (!test_support::find_tool("openssl")) GTEST_SKIP() << "no openssl tool";
  const TwoFolders dirs("parts_sign");
  const test_support::KeyFiles keys = test_support::make_key_pair(dirs.dir.path(), "k");
  const PrivateKey key = PrivateKey::load(keys.private_pem);
  const std::vector<Tensor> tensors = sample_tensors();
  const PartsOptions options{.digests = true};
  write_single(dirs.one(), tensors, options, false);
  sign_archive(dirs.one(), {.key = key, .output = {}});
  write_parts(dirs.many().string(), tensors, GetParam(), options, false, key);
  const VerifyReport report = verify(dirs.many(), {.public_key = key.public_key()});
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.signature, IntegrityStatus::kVerified);
  EXPECT_EQ(report.digests, IntegrityStatus::kVerified);
  // ECDSA signatures are drawn at random: every byte before `__SIGNATURE` is the same (its name
  // first occurs in its local header), and so is the model.
  const std::vector<std::uint8_t> one = read_file_bytes(dirs.one());
  const std::vector<std::uint8_t> many = read_file_bytes(dirs.many());
  const auto signature_at =
      std::search(many.begin(), many.end(), kSignatureEntryName.begin(), kSignatureEntryName.end());
  ASSERT_NE(signature_at, many.end());
  const auto prefix = signature_at - many.begin();
  ASSERT_GE(one.size(), static_cast<std::size_t>(prefix));
  const auto [differ, _] = std::mismatch(many.begin(), signature_at, one.begin());
  EXPECT_EQ(differ, signature_at) << "first difference at " << differ - many.begin() << " of "
                                  << prefix;
  const Archive archive_one = Archive::open(dirs.one());
  const Archive archive_many = Archive::open(dirs.many());
  const ByteSpan model_one = archive_one.model_bytes();
  const ByteSpan model_many = archive_many.model_bytes();
  EXPECT_TRUE(std::equal(model_one.begin(), model_one.end(), model_many.begin(), model_many.end()));
}

INSTANTIATE_TEST_SUITE_P(Writers, PartsWriteTest, ::testing::Values(1, 2, 4));

// A plan, a begun archive and the receipts of all its parts, for the refusals.
struct Begun {
  std::vector<Tensor> tensors = sample_tensors();
  PartsPlan plan = PartsPlan::make(split(tensors, 3), {.digests = true});
  std::vector<std::uint8_t> token;
  std::vector<std::vector<std::uint8_t>> receipts;

  explicit Begun(const std::filesystem::path& path) : token(begin_parts(path.string(), plan)) {
    for (std::uint32_t p = 0; p < 3; ++p) {
      PartWriter writer(token, p);
      for (const PlannedEntry& planned : plan.part(p)) {
        const auto t = std::find_if(tensors.begin(), tensors.end(),
                                    [&](const Tensor& x) { return x.info.name == planned.name; });
        writer.add_tensor(planned.name, t->bytes);
      }
      receipts.push_back(writer.receipt());
    }
  }
  ModelProto model() const {
    return model_of(
        tensors, [&](const Tensor& t) { return plan.ref(t.info.name); }, false);
  }
  Error finish_error(std::vector<std::vector<std::uint8_t>> given) const {
    std::vector<ByteSpan> spans(given.begin(), given.end());
    return error_of([&] { finish_parts(token, model(), spans); });
  }
};

TEST(PartsFinishTest, BadReceiptsPublishNothingAndAbortCleansUp) {
  const ScratchDir dir("parts_refuse");
  const Begun begun(dir / "m.onnxz");
  const auto [r0, r1, r2] = std::tie(begun.receipts[0], begun.receipts[1], begun.receipts[2]);
  const auto expect = [&](const Error& e, const std::string& words) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.message();
    EXPECT_NE(e.message().find(words), std::string::npos) << e.message();
    EXPECT_FALSE(std::filesystem::exists(dir / "m.onnxz"));
  };
  expect(begun.finish_error({r0, r2}), "no receipt for part 1");
  expect(begun.finish_error({r0, r1, r1, r2}), "repeats the receipt of its part");
  // A receipt of another begin of the same plan.
  const Begun other(dir / "other.onnxz");
  expect(begun.finish_error({r0, other.receipts[1], r2}), "of another archive or plan");
  // A receipt whose entry disagrees with the plan (its size field changed).
  archive_detail::PartReceipt forged = archive_detail::decode_receipt(r1);
  forged.entries[0].size += 1;
  expect(begun.finish_error({r0, archive_detail::encode_receipt(forged), r2}),
         "disagrees with the plan");
  forged = archive_detail::decode_receipt(r1);
  forged.hashed = false;
  expect(begun.finish_error({r0, archive_detail::encode_receipt(forged), r2}), "has no SHA-256s");
  // A model that does not refer to every planned entry: ArchiveWriter's check.
  ModelProto partial = begun.model();
  partial.graph->initializer.erase(partial.graph->initializer.begin());
  const std::vector<ByteSpan> spans(begun.receipts.begin(), begun.receipts.end());
  const Error e = error_of([&] { finish_parts(begun.token, partial, spans); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message().find("no tensor of the model refers to it"), std::string::npos)
      << e.message();
  EXPECT_FALSE(std::filesystem::exists(dir / "m.onnxz"));
  // Nothing above consumed the temporary: finish still succeeds, then leaves only the archive.
  finish_parts(begun.token, begun.model(), spans);
  EXPECT_TRUE(verify(dir / "m.onnxz").ok());
  abort_parts(other.token);
  abort_parts(other.token);  // Gone already: no error.
  EXPECT_EQ(dir.file_names(), std::vector<std::string>{"m.onnxz"});
  const Error late = error_of([&] { PartWriter(other.token, 0); });
  EXPECT_EQ(late.code(), ErrorCode::kNotFound) << late.message();
}

TEST(PartsFinishTest, SigningNeedsDigests) {
  if (!test_support::find_tool("openssl")) GTEST_SKIP() << "no openssl tool";
  const ScratchDir dir("parts_nodigest");
  const test_support::KeyFiles keys = test_support::make_key_pair(dir.path(), "k");
  const PartsPlan plan = PartsPlan::make({{}});
  const std::vector<std::uint8_t> token = begin_parts((dir / "m.onnxz").string(), plan);
  const std::vector<std::uint8_t> receipt = PartWriter(token, 0).receipt();
  const std::vector<ByteSpan> receipts{receipt};
  const Error e = error_of(
      [&] { finish_parts(token, ModelProto{}, receipts, PrivateKey::load(keys.private_pem)); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message().find("plan the parts with digests"), std::string::npos) << e.message();
  abort_parts(token);
  EXPECT_TRUE(dir.file_names().size() == 2u);  // The key pair only.
}

TEST(PartWriterTest, RefusesOthersTensorsTwiceWrittenWrongSizesAndEarlyReceipts) {
  const ScratchDir dir("parts_writer");
  const PartsPlan plan =
      PartsPlan::make({{{"a", TensorProto::kFloat, {2}}, {"b", TensorProto::kFloat, {1}}},
                       {{"c", TensorProto::kFloat, {1}}}});
  const std::vector<std::uint8_t> token = begin_parts((dir / "m.onnxz").string(), plan);
  PartWriter writer(token, 0);
  const std::vector<std::uint8_t> eight(8, 1);
  Error e = error_of([&] { writer.add_tensor("c", ByteSpan(eight.data(), 4)); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message().find("is planned for part 1"), std::string::npos) << e.message();
  e = error_of([&] { writer.add_tensor("z", eight); });
  EXPECT_NE(e.message().find("the plan has no such tensor"), std::string::npos) << e.message();
  e = error_of([&] { writer.add_tensor("a", ByteSpan(eight.data(), 4)); });
  EXPECT_NE(e.message().find("4 bytes given, but the plan has 8"), std::string::npos)
      << e.message();
  writer.add_tensor("a", eight);
  e = error_of([&] { writer.add_tensor("a", eight); });
  EXPECT_NE(e.message().find("was written already"), std::string::npos) << e.message();
  e = error_of([&] { static_cast<void>(writer.receipt()); });
  EXPECT_EQ(e.code(), ErrorCode::kBadState);
  EXPECT_NE(e.message().find("has not written 'b'"), std::string::npos) << e.message();
  e = error_of([&] { PartWriter(token, 2); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.message();
  std::vector<std::uint8_t> bad_token = token;
  bad_token[0] = 'X';
  e = error_of([&] { PartWriter(bad_token, 0); });
  EXPECT_EQ(e.code(), ErrorCode::kCorrupt) << e.message();
  abort_parts(token);
  EXPECT_TRUE(dir.file_names().empty());
}

}  // namespace
}  // namespace onnxzip

namespace onnxzip {
namespace {

using archive_detail::bucket_pieces;
using archive_detail::BucketPiece;

TEST(PartsBucketPlanTest, PiecesCoverEachPartWithinTheStoresLimits) {
  const std::int64_t mib = 1 << 20;
  const PartsPlan plan = PartsPlan::make({{{"a", TensorProto::kUint8, {200 * mib}}},
                                          {{"b", TensorProto::kUint8, {6 * mib}}},
                                          {},
                                          {{"c", TensorProto::kUint8, {64 * mib}}}});
  const std::vector<BucketPiece> pieces = bucket_pieces(plan, "s3://b/k");
  ASSERT_EQ(pieces.size(), 5u);  // 200 MiB in 3, then one each.
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_EQ(pieces[i].number, i + 1);
    EXPECT_EQ(pieces[i].first, at);
    EXPECT_GE(pieces[i].length, archive_detail::kMinBucketPart);
    at += pieces[i].length;
  }
  EXPECT_EQ(at, plan.payload_end());
  EXPECT_EQ(pieces[3].part, 1u);
  EXPECT_EQ(pieces[4].part, 3u);
}

TEST(PartsBucketPlanTest, RefusesPartsTheStoreCannotTakeSayingHowToRegroup) {
  const PartsPlan small = PartsPlan::make(
      {{{"a", TensorProto::kUint8, {6 << 20}}}, {{"b", TensorProto::kUint8, {1 << 20}}}});
  Error e = error_of([&] { bucket_pieces(small, "s3://b/k"); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message().find("part 1 covers"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("give its tensors to a neighbouring part"), std::string::npos);
  // begin refuses it before any request: no store answers here.
  e = error_of([&] { begin_parts("s3://b/k", small); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.message();
  std::vector<std::vector<PartTensor>> many(10000);
  for (std::size_t p = 0; p < many.size(); ++p) {
    many[p].push_back({"t" + std::to_string(p), TensorProto::kUint8, {5 << 20}});
  }
  e = error_of([&] { bucket_pieces(PartsPlan::make(many), "s3://b/k"); });
  EXPECT_NE(e.message().find("10001 multipart parts, more than the store's 10,000"),
            std::string::npos)
      << e.message();
}

// The writers find the store through the environment, as a job's ranks would.
class S3PartsTest : public test_support::S3SuiteTest<S3PartsTest> {
 public:
  static constexpr bool kStoreInEnvironment = true;

 protected:
  static std::vector<std::uint8_t> read_object(const std::string& url) {
    const auto source = s3::open_source(url, {.tail_size = 64 << 20});
    std::vector<std::uint8_t> bytes(source->size());
    source->read_into(0, bytes);
    return bytes;
  }
  static s3::Client client() { return s3::Client(server_->config()); }
};

// Big tensors (6 MiB) between small ones, so that 1, 2 and 4 contiguous parts each hold 5 MiB.
std::vector<Tensor> bucket_tensors() {
  std::vector<Tensor> tensors;
  for (std::uint32_t i = 0; i < 7; ++i) {
    Tensor& t = tensors.emplace_back();
    const std::int64_t count = i % 2 == 0 ? (6 << 20) / 4 : 100 + i;
    t.info = {
        .name = "layer." + std::to_string(i), .data_type = TensorProto::kFloat, .dims = {count}};
    t.bytes = pattern_bytes(static_cast<std::size_t>(count) * 4, i + 5);
  }
  return tensors;
}

TEST_F(S3PartsTest, WritersInThreadsGiveOneWritersBytesInParts_Plus2Requests) {
  const std::vector<Tensor> tensors = bucket_tensors();
  for (const std::size_t parts : {1u, 2u, 4u}) {
    const TwoFolders dirs("parts_bucket");
    const PartsOptions options{.digests = true};
    write_single(dirs.one(), tensors, options, false);
    server_->reset_stats();
    const std::string url = "s3://models/n" + std::to_string(parts) + "/m.onnxz";
    const std::vector<std::uint8_t> token = write_parts(url, tensors, parts, options, false);
    const std::size_t pieces =
        bucket_pieces(PartsPlan::make(split(tensors, parts), options), url).size();
    // Create, one UploadPart per piece and the tail, Complete.
    const test_support::S3ProxyStats stats = server_->stats();
    EXPECT_EQ(stats.requests, pieces + 1 + 2) << parts;
    // What each writer sent is its own range: its payloads with their headers and gaps.
    const PartsPlan plan = PartsPlan::make(split(tensors, parts), options);
    std::vector<std::uint64_t> sent(parts + 1, 0);  // By writer part; the last: the tail.
    for (std::size_t i = 0; i < stats.requests_seen.size(); ++i) {
      const std::string& seen = stats.requests_seen[i];
      const std::size_t at = seen.find("partNumber=");
      if (!seen.starts_with("PUT ") || at == std::string::npos) continue;
      const unsigned number = static_cast<unsigned>(std::stoul(seen.substr(at + 11)));
      std::size_t writer = parts;
      for (const BucketPiece& piece : bucket_pieces(plan, url)) {
        if (piece.number == number) writer = piece.part;
      }
      sent[writer] += stats.bytes_received[i];
    }
    for (std::size_t p = 0; p < parts; ++p) {
      const auto [first, end] = plan.part_range(p);
      std::uint64_t payload = 0;
      for (const PlannedEntry& planned : plan.part(p)) payload += planned.size;
      EXPECT_EQ(sent[p], end - first) << "writer " << p << " of " << parts;
      EXPECT_LT(sent[p] - payload, 4096u) << "writer " << p << ": headers and gaps only";
    }
    EXPECT_TRUE(read_object(url) == read_file_bytes(dirs.one())) << parts;
    EXPECT_TRUE(client().list_multipart_uploads("models").empty());
  }
}

TEST_F(S3PartsTest, AbortLeavesNoUploadAndNoObject) {
  const std::vector<Tensor> tensors = bucket_tensors();
  const PartsPlan plan = PartsPlan::make(split(tensors, 2));
  const std::string url = "s3://models/aborted.onnxz";
  const std::vector<std::uint8_t> token = begin_parts(url, plan);
  PartWriter writer(token, 0);
  for (const PlannedEntry& planned : plan.part(0)) {
    const auto t = std::find_if(tensors.begin(), tensors.end(),
                                [&](const Tensor& x) { return x.info.name == planned.name; });
    writer.add_tensor(planned.name, t->bytes);
  }
  EXPECT_EQ(client().list_multipart_uploads("models", "aborted").size(), 1u);
  // Part 1's writer was killed: no receipt. finish refuses, abort ends the upload.
  const std::vector<std::uint8_t> receipt = writer.receipt();
  const std::vector<ByteSpan> receipts{receipt};
  const Error e = error_of([&] {
    finish_parts(token,
                 model_of(
                     tensors, [&](const Tensor& t) { return plan.ref(t.info.name); }, false),
                 receipts);
  });
  EXPECT_NE(e.message().find("no receipt for part 1"), std::string::npos) << e.message();
  abort_parts(token);
  EXPECT_TRUE(client().list_multipart_uploads("models", "aborted").empty());
  EXPECT_FALSE(client().head_object(s3::parse_s3_url(url)).has_value());
}

TEST_F(S3PartsTest, ABucketPartWritesInPlanOrder) {
  const std::vector<Tensor> tensors = bucket_tensors();
  const PartsPlan plan = PartsPlan::make(split(tensors, 1));
  const std::vector<std::uint8_t> token = begin_parts("s3://models/order.onnxz", plan);
  PartWriter writer(token, 0);
  const Error e = error_of([&] { writer.add_tensor(tensors[1].info.name, tensors[1].bytes); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message().find("in plan order; next is 'layer.0'"), std::string::npos) << e.message();
  abort_parts(token);
}

}  // namespace
}  // namespace onnxzip
