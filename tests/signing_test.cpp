// Signed archives (signing.h, spec §12): sign_archive, verify()'s digest and signature checks,
// edits that keep both true, the interoperability of the result with tools independent of the
// library (unzip, sha256sum, python3's json and cryptography over the DSSE PAE), and the lazy
// digest checking of an Archive opened with LoadOptions::check_digests.
#include "onnxzip/signing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "crc32.h"
#include "crc_worker_testing.h"
#include "onnxzip/archive.h"
#include "onnxzip/convert.h"
#include "onnxzip/edit.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/byte_source.h"
#include "onnxzip/internal/zip_reader.h"
#include "support/external_tool.h"
#include "support/model_builder.h"
#include "support/scratch_dir.h"
#include "support/test_keys.h"
#include "tail_edit.h"
#include "zip_writer.h"

namespace onnxzip {
namespace {

using test_support::KeyFiles;
using test_support::make_key_pair;
using test_support::read_file_bytes;
using test_support::run_tool;
using test_support::ScratchDir;
using test_support::shell_quote;
using Severity = VerifyFinding::Severity;

ByteSpan bytes_of(std::string_view text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

// Two payloads (one of them 100 KiB) and a model referring to them.
ModelProto two_tensor_model() {
  ModelProto model;
  model.ir_version = 8;
  model.graph.ensure().initializer.push_back(
      test_support::raw_tensor("weight", TensorProto::kFloat, {256, 100}, 1));
  model.graph->initializer.push_back(
      test_support::raw_tensor("Bias", TensorProto::kFloat, {300}, 2));
  return model;
}

std::string findings_text(const VerifyReport& report) {
  std::string text;
  for (const VerifyFinding& finding : report.findings) text += finding.message + "\n";
  return text;
}

VerifyReport verify_with(const std::filesystem::path& path, const KeyFiles* keys) {
  VerifyOptions options;
  if (keys != nullptr) options.public_key = PublicKey::load(keys->public_pem);
  return verify(path, options);
}

class SigningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test_support::find_tool("openssl")) GTEST_SKIP() << "no openssl tool";
    keys_ = make_key_pair(dir_.path(), "a");
    other_ = make_key_pair(dir_.path(), "b");
    save(two_tensor_model(), archive_);
  }
  SignResult sign_with_a() {
    SignOptions options;
    options.key = PrivateKey::load(keys_.private_pem);
    options.output.durable = false;
    return sign_archive(archive_, options);
  }

  ScratchDir dir_{"signing"};
  std::filesystem::path archive_ = dir_ / "model.onnxz";
  KeyFiles keys_;
  KeyFiles other_;
};

TEST_F(SigningTest, SignPlacesBothEntriesBeforeTheModelAndVerifies) {
  const std::vector<std::uint8_t> before = read_file_bytes(archive_);
  const SignResult result = sign_with_a();
  EXPECT_EQ(result.entries, 3u);
  EXPECT_EQ(result.key_id, PublicKey::load(keys_.public_pem).key_id());
  const ZipReader zip = ZipReader::open(archive_);
  ASSERT_EQ(zip.entries().size(), 5u);
  EXPECT_EQ(zip.entries()[2].name, "__DIGESTS");
  EXPECT_EQ(zip.entries()[3].name, "__SIGNATURE");
  EXPECT_EQ(zip.entries()[4].name, "__MODEL_PROTO");
  // No payload byte moved: the file up to the end of the last payload is as it was.
  const std::vector<std::uint8_t> after = read_file_bytes(archive_);
  const std::uint64_t payload_end = zip.entries()[1].local->end_offset;
  EXPECT_TRUE(std::equal(after.begin(), after.begin() + payload_end, before.begin()));

  const VerifyReport plain = verify(archive_);
  EXPECT_TRUE(plain.ok()) << findings_text(plain);
  // The statuses of spec/names.md, computed by verify(), and what was checked in words.
  EXPECT_EQ(plain.digests, IntegrityStatus::kVerified);
  EXPECT_EQ(plain.signature, IntegrityStatus::kUnchecked);
  EXPECT_EQ(plain.signature_key_id, result.key_id);
  EXPECT_EQ(plain.checked,
            "ZIP structure, layout, references, CRC-32s; digests verified; signature not "
            "checked: give VerifyOptions::public_key");
  const VerifyReport keyed = verify_with(archive_, &keys_);
  EXPECT_TRUE(keyed.ok()) << findings_text(keyed);
  EXPECT_EQ(keyed.signature, IntegrityStatus::kVerified);
  EXPECT_EQ(keyed.checked,
            "ZIP structure, layout, references, CRC-32s; digests verified; "
            "signature verified (key " +
                result.key_id + ")");
  VerifyOptions no_crc;
  no_crc.check_crc = false;
  EXPECT_EQ(verify(archive_, no_crc).digests, IntegrityStatus::kUnchecked);
  const IntegrityInfo info = read_integrity_info(zip);
  EXPECT_TRUE(info.has_digests && info.has_signature);
  EXPECT_EQ(info.digested_entries, 3u);
  EXPECT_EQ(info.key_id, result.key_id);
  EXPECT_EQ(info.problem, "");
  // Signing again replaces both: still five entries, still valid.
  sign_with_a();
  EXPECT_EQ(ZipReader::open(archive_).entries().size(), 5u);
  EXPECT_TRUE(verify_with(archive_, &keys_).ok());
}

TEST_F(SigningTest, AnotherKeyAndAMissingSignatureFailSayingWhy) {
  sign_with_a();
  const VerifyReport other = verify_with(archive_, &other_);
  ASSERT_EQ(other.findings.size(), 1u) << findings_text(other);
  EXPECT_EQ(other.signature, IntegrityStatus::kOtherKey);
  EXPECT_EQ(other.digests, IntegrityStatus::kVerified);
  EXPECT_EQ(other.findings[0].kind, VerifyFinding::Kind::kSignature);
  EXPECT_EQ(other.findings[0].severity, Severity::kError);
  EXPECT_EQ(other.findings[0].entry, "__SIGNATURE");
  EXPECT_NE(to_string(other.findings[0])
                .find("entry '__SIGNATURE': signed by another key (key id " +
                      PublicKey::load(keys_.public_pem).key_id()),
            std::string::npos)
      << other.findings[0].message;

  SignOptions digests_only;
  digests_only.output.durable = false;
  const SignResult result = sign_archive(archive_, digests_only);
  EXPECT_TRUE(result.signature_removed);
  EXPECT_TRUE(verify(archive_).ok());
  EXPECT_EQ(verify(archive_).signature, IntegrityStatus::kAbsent);
  const VerifyReport unsigned_report = verify_with(archive_, &keys_);
  ASSERT_EQ(unsigned_report.findings.size(), 1u) << findings_text(unsigned_report);
  EXPECT_EQ(unsigned_report.findings[0].kind, VerifyFinding::Kind::kSignature);
  EXPECT_NE(to_string(unsigned_report.findings[0])
                .find("no __SIGNATURE entry (a signature by key " +
                      PublicKey::load(keys_.public_pem).key_id() + " was asked for)"),
            std::string::npos)
      << unsigned_report.findings[0].message;
}

TEST_F(SigningTest, APayloadByteChangedWithItsCrcFixedFailsNamingTheEntry) {
  sign_with_a();
  std::vector<std::uint8_t> bytes = read_file_bytes(archive_);
  const ZipReader zip = ZipReader::from_bytes(bytes, kNoOwner);
  const ZipEntry& weight = *zip.find("weight");
  const std::uint64_t at = weight.local->data_offset + 1000;
  bytes[at] ^= 0x40;
  // Fix the CRC-32 in both headers, so that only the digest can tell.
  const std::uint32_t crc = crc32(ByteSpan(bytes).subspan(weight.local->data_offset, weight.size));
  for (const std::uint64_t field :
       {weight.local_header_offset + 14, weight.central_header_offset + 16}) {
    for (int i = 0; i < 4; ++i) bytes[field + i] = static_cast<std::uint8_t>(crc >> (8 * i));
  }
  test_support::write_file_bytes(archive_, std::string(bytes.begin(), bytes.end()));
  const ZipReader changed = ZipReader::open(archive_);
  EXPECT_NO_THROW(changed.verify(*changed.find("weight")));  // The CRC-32 agrees.
  const VerifyReport report = verify_with(archive_, &keys_);
  ASSERT_EQ(report.findings.size(), 1u) << findings_text(report);
  EXPECT_EQ(report.findings[0].kind, VerifyFinding::Kind::kDigest);
  EXPECT_EQ(report.digests, IntegrityStatus::kFailed);
  EXPECT_EQ(report.signature, IntegrityStatus::kVerified);
  EXPECT_EQ(report.findings[0].severity, Severity::kError);
  EXPECT_EQ(report.findings[0].entry, "weight");
  EXPECT_NE(to_string(report.findings[0]).find("entry 'weight': its SHA-256 is "),
            std::string::npos)
      << report.findings[0].message;
  EXPECT_FALSE(report.loadable());
}

// Flips a byte of `entry`'s data in `bytes`; with `fix_crc` its CRC-32 is fixed in both headers,
// so that only the digest can tell.
void change_payload_byte(std::vector<std::uint8_t>& bytes, const ZipEntry& entry, bool fix_crc) {
  bytes[entry.local->data_offset + entry.size / 2] ^= 0x40;
  if (!fix_crc) return;
  const std::uint32_t crc = crc32(ByteSpan(bytes).subspan(entry.local->data_offset, entry.size));
  for (const std::uint64_t field :
       {entry.local_header_offset + 14, entry.central_header_offset + 16}) {
    for (int i = 0; i < 4; ++i) bytes[field + i] = static_cast<std::uint8_t>(crc >> (8 * i));
  }
}

TEST_F(SigningTest, EveryMismatchIsFoundAndTheReportIsTheSameOnAnyNumberOfThreads) {
  ModelProto model;
  model.ir_version = 8;
  constexpr int kTensors = 24;
  for (int i = 0; i < kTensors; ++i) {
    model.graph.ensure().initializer.push_back(
        test_support::raw_tensor("t" + std::to_string(i), TensorProto::kFloat, {1000 + 37 * i},
                                 static_cast<std::uint8_t>(i)));
  }
  save(model, archive_);
  sign_with_a();
  std::vector<std::uint8_t> bytes = read_file_bytes(archive_);
  const ZipReader zip = ZipReader::from_bytes(bytes, kNoOwner);
  // Every payload changed: whichever thread reads an entry must find it. Every third one keeps
  // its old CRC-32, so the CRC check finds it and the digest check stays silent about it.
  for (int i = 0; i < kTensors; ++i) {
    change_payload_byte(bytes, *zip.find("t" + std::to_string(i)), i % 3 != 0);
  }
  test_support::write_file_bytes(archive_, std::string(bytes.begin(), bytes.end()));

  VerifyOptions options;
  options.public_key = PublicKey::load(keys_.public_pem);
  options.threads = 1;
  const VerifyReport one = verify(archive_, options);
  ASSERT_EQ(one.findings.size(), static_cast<std::size_t>(kTensors)) << findings_text(one);
  std::set<std::string> named;
  for (const VerifyFinding& finding : one.findings) {
    EXPECT_EQ(finding.severity, Severity::kError);
    ASSERT_EQ(finding.entry.front(), 't') << finding.message;
    const int i = std::stoi(finding.entry.substr(1));
    const std::string expected = i % 3 != 0 ? "its SHA-256 is " : "CRC-32 mismatch";
    EXPECT_NE(finding.message.find(expected), std::string::npos) << finding.message;
    named.insert(finding.entry);
  }
  EXPECT_EQ(named.size(), static_cast<std::size_t>(kTensors));
  for (const std::size_t threads : {2u, 3u, 0u}) {
    options.threads = threads;
    const VerifyReport many = verify(archive_, options);
    EXPECT_EQ(findings_text(many), findings_text(one)) << threads << " threads";
    ASSERT_EQ(many.findings.size(), one.findings.size());
    for (std::size_t k = 0; k < one.findings.size(); ++k) {
      EXPECT_EQ(many.findings[k].entry, one.findings[k].entry);
      EXPECT_EQ(many.findings[k].offset, one.findings[k].offset);
    }
  }
}

// An archive whose __DIGESTS says what `entries` says, written by hand.
void write_with_digests(const std::filesystem::path& path, const std::string& digests) {
  const ModelProto model = two_tensor_model();
  save(model, path);
  ZipReader source = ZipReader::open(path);
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> entries;
  for (const ZipEntry& entry : source.entries()) {
    const TensorBytes data = source.data(entry);
    entries.emplace_back(entry.name,
                         std::vector<std::uint8_t>(data.view().begin(), data.view().end()));
  }
  ZipWriter zip(path.string() + ".tmp");
  for (std::size_t i = 0; i + 1 < entries.size(); ++i) zip.add(entries[i].first, entries[i].second);
  zip.add(kDigestsEntryName, bytes_of(digests));
  zip.add(kModelEntryName, entries.back().second);
  zip.finish();
  std::filesystem::rename(path.string() + ".tmp", path);
}

std::vector<EntryDigest> true_digests(const std::filesystem::path& path) {
  const ZipReader zip = ZipReader::open(path);
  std::vector<EntryDigest> digests;
  for (const ZipEntry& entry : zip.entries()) {
    if (entry.name == kDigestsEntryName || entry.name == kSignatureEntryName) continue;
    digests.push_back({entry.name, Sha256::of(zip.data(entry).view()), entry.size, entry.crc32});
  }
  return digests;
}

TEST_F(SigningTest, DigestsThatOmitNameAMissingOrListTwiceFail) {
  const std::filesystem::path path = dir_ / "hand.onnxz";
  save(two_tensor_model(), path);
  std::vector<EntryDigest> digests = true_digests(path);
  ASSERT_EQ(digests.size(), 3u);

  // Omitted: `Bias` not listed.
  std::vector<EntryDigest> omitted = digests;
  std::erase_if(omitted, [](const EntryDigest& d) { return d.name == "Bias"; });
  write_with_digests(path, encode_digests("m", omitted));
  VerifyReport report = verify(path);
  ASSERT_EQ(report.findings.size(), 1u) << findings_text(report);
  EXPECT_EQ(report.findings[0].entry, "Bias");
  EXPECT_NE(to_string(report.findings[0]).find("entry 'Bias': not listed in __DIGESTS"),
            std::string::npos);

  // Missing: a resource naming no entry.
  std::vector<EntryDigest> extra = digests;
  extra.push_back({"ghost", Sha256::of(bytes_of("x")), 1, 0});
  write_with_digests(path, encode_digests("m", extra));
  report = verify(path);
  ASSERT_EQ(report.findings.size(), 1u) << findings_text(report);
  EXPECT_NE(to_string(report.findings[0])
                .find("entry '__DIGESTS': lists entry 'ghost', which the archive does not hold"),
            std::string::npos)
      << report.findings[0].message;

  // Twice: the first resource repeated (the subject digest does not matter: the duplicate is
  // refused first).
  std::string twice = encode_digests("m", digests);
  const std::size_t resources = twice.find("\"resources\": [") + 14;
  const std::size_t end = twice.find('}', resources) + 1;
  twice.insert(resources, twice.substr(resources, end - resources) + ",");
  write_with_digests(path, twice);
  report = verify(path);
  ASSERT_EQ(report.findings.size(), 1u) << findings_text(report);
  EXPECT_EQ(report.findings[0].entry, "__DIGESTS");
  EXPECT_NE(to_string(report.findings[0]).find("entry 'Bias' is listed twice"), std::string::npos)
      << report.findings[0].message;

  // Bad JSON and a size beyond the limit: errors, in bounded memory (nothing is parsed).
  write_with_digests(path, "{\"_type\": [");
  report = verify(path);
  ASSERT_EQ(report.findings.size(), 1u) << findings_text(report);
  EXPECT_NE(to_string(report.findings[0]).find("entry '__DIGESTS': not valid JSON at byte"),
            std::string::npos);
  write_with_digests(path, encode_digests("m", digests));
  VerifyOptions small;
  small.integrity.max_digests_size = 100;
  report = verify(path, small);
  ASSERT_EQ(report.findings.size(), 1u) << findings_text(report);
  EXPECT_NE(to_string(report.findings[0])
                .find("more than the limit of 100 (IntegrityLimits::max_digests_size)"),
            std::string::npos)
      << report.findings[0].message;
  EXPECT_TRUE(verify(path).ok()) << findings_text(verify(path));
}

TEST_F(SigningTest, EditsRewriteTheDigestsAndResignOrDropTheSignature) {
  sign_with_a();
  // Without a key: the digests follow the new model, the signature goes.
  const EditResult dropped =
      edit_model(archive_, [](ModelProto& model) { model.producer_name = "edited"; });
  EXPECT_TRUE(dropped.digests_updated);
  EXPECT_TRUE(dropped.signature_removed);
  EXPECT_FALSE(dropped.signed_again);
  EXPECT_TRUE(verify(archive_).ok()) << findings_text(verify(archive_));
  EXPECT_EQ(ZipReader::open(archive_).find(kSignatureEntryName), nullptr);
  EXPECT_EQ(load(archive_).producer_name, "edited");

  // With a key: signed again, and the signature verifies.
  EditOptions options;
  options.signing_key = PrivateKey::load(keys_.private_pem);
  const EditResult resigned = edit_model_properties(
      archive_, [](ModelProto& model) { model.doc_string = "again"; }, options);
  EXPECT_TRUE(resigned.signed_again);
  EXPECT_FALSE(resigned.signature_removed);
  const VerifyReport report = verify_with(archive_, &keys_);
  EXPECT_TRUE(report.ok()) << findings_text(report);
  // The digest of the model is that of its new bytes.
  const ZipReader zip = ZipReader::open(archive_);
  const DigestStatement statement =
      decode_digests(zip.data(*zip.find(kDigestsEntryName)).view(), {}, "x");
  for (const EntryDigest& entry : statement.entries) {
    EXPECT_EQ(entry.sha256, Sha256::of(zip.data(*zip.find(entry.name)).view())) << entry.name;
  }
}

// The edit of a signed archive reads the central directory and the tail's local headers
// (`__DIGESTS`, `__SIGNATURE`, the model and the payload before them), not one per payload: a
// broken local header of an earlier payload goes unread (a full open refuses the file).
TEST_F(SigningTest, ASignedEditReadsOnlyTheTailsLocalHeaders) {
  sign_with_a();
  std::vector<std::uint8_t> bytes = read_file_bytes(archive_);
  const std::uint64_t first_header = ZipReader::open(archive_).entries()[0].local_header_offset;
  bytes[first_header] ^= 0xFF;
  test_support::write_file_bytes(archive_, std::string(bytes.begin(), bytes.end()));
  EXPECT_THROW((void)ZipReader::open(archive_), Error);

  EditOptions options;
  options.signing_key = PrivateKey::load(keys_.private_pem);
  options.output.durable = false;
  const EditResult result = edit_model_properties(
      archive_, [](ModelProto& model) { model.doc_string = "tail only"; }, options);
  EXPECT_TRUE(result.signed_again);

  bytes = read_file_bytes(archive_);
  bytes[first_header] ^= 0xFF;
  test_support::write_file_bytes(archive_, std::string(bytes.begin(), bytes.end()));
  const VerifyReport report = verify_with(archive_, &keys_);
  EXPECT_TRUE(report.ok()) << findings_text(report);
  EXPECT_EQ(load(archive_).doc_string, "tail only");
}

TEST_F(SigningTest, AnEditInterruptedAtEachStepLeavesAnArchiveThatVerifies) {
  sign_with_a();
  for (const archive_detail::TailStep step :
       {archive_detail::TailStep::kMark, archive_detail::TailStep::kAppend,
        archive_detail::TailStep::kMove}) {
    archive_detail::set_tail_step_hook([step](archive_detail::TailStep done, bool) {
      if (done == step) throw Error(ErrorCode::kIo, "test: interrupted");
    });
    EditOptions options;
    options.signing_key = PrivateKey::load(keys_.private_pem);
    options.output.durable = false;
    EXPECT_THROW(edit_model(
                     archive_, [](ModelProto& m) { m.doc_string = "x"; }, options),
                 Error);
    archive_detail::set_tail_step_hook(nullptr);
    // Old or new archive: either way every digest and the signature hold.
    const VerifyReport report = verify_with(archive_, &keys_);
    for (const VerifyFinding& finding : report.findings) {
      EXPECT_EQ(finding.severity, Severity::kWarning) << finding.message;  // The gap, at most.
    }
  }
}

TEST_F(SigningTest, WritingWithDigestsHashesEveryEntryAsItIsWritten) {
  const std::filesystem::path path = dir_ / "written.onnxz";
  SaveOptions options;
  options.digests = true;
  {
    // One tensor added by a producer, in pieces; the rest externalized by finish().
    ArchiveWriter writer(path, options);
    const std::vector<std::uint8_t> bytes = test_support::pattern_bytes(4096, 9);
    const std::int64_t dims[] = {1024};
    const TensorRef ref =
        writer.add_tensor("streamed", TensorProto::kFloat, dims, [&](EntrySink& sink) {
          sink.write(ByteSpan(bytes).first(1000));
          sink.write(ByteSpan(bytes).subspan(1000));
        });
    ModelProto model = two_tensor_model();
    TensorProto& streamed = model.graph->initializer.emplace_back();
    streamed.name = "streamed";
    streamed.data_type = TensorProto::kFloat;
    streamed.dims = {1024};
    ref.apply_to(streamed);
    writer.finish(model);
  }
  const ZipReader zip = ZipReader::open(path);
  ASSERT_EQ(zip.entries().size(), 5u);
  EXPECT_EQ(zip.entries()[3].name, "__DIGESTS");
  const DigestStatement statement =
      decode_digests(zip.data(*zip.find(kDigestsEntryName)).view(), {}, "x");
  EXPECT_EQ(statement.model_name, "written");
  EXPECT_EQ(statement.entries, [&] {
    std::vector<EntryDigest> expected = true_digests(path);
    std::sort(expected.begin(), expected.end(),
              [](const EntryDigest& a, const EntryDigest& b) { return a.name < b.name; });
    return expected;
  }());
  const VerifyReport report = verify(path);
  EXPECT_TRUE(report.ok()) << findings_text(report);
}

// Entries large enough for the writer's second thread (spans, a producer's pieces, and a legacy
// model's external data, which the kernel copies from the mapped file while the thread reads it
// with pread) are hashed there: the digests are those of the bytes in the archive.
TEST_F(SigningTest, LargeEntriesAreHashedAsTheyAreCopied) {
  ModelProto model;
  model.ir_version = 8;
  model.graph.ensure().initializer.push_back(
      test_support::raw_tensor("big", TensorProto::kFloat, {300, 1000}, 4));
  model.graph->initializer.push_back(
      test_support::raw_tensor("small", TensorProto::kFloat, {10}, 5));
  const std::filesystem::path legacy = dir_ / "legacy.onnx";
  LegacyWriteOptions external;
  external.mode = LegacyWriteOptions::Mode::kExternal;
  write_legacy_model(model, legacy, external);
  const std::filesystem::path converted = dir_ / "converted.onnxz";
  ConvertOptions convert_options;
  convert_options.archive.digests = true;
  convert(legacy, converted, convert_options);

  const std::filesystem::path written = dir_ / "written.onnxz";
  SaveOptions options;
  options.digests = true;
  {
    ArchiveWriter writer(written, options);
    const std::vector<std::uint8_t> bytes = test_support::pattern_bytes(700 << 10, 9);
    const std::int64_t dims[] = {static_cast<std::int64_t>(bytes.size())};
    const TensorRef ref =
        writer.add_tensor("streamed", TensorProto::kUint8, dims, [&](EntrySink& sink) {
          for (ByteSpan rest(bytes); !rest.empty();) {
            const ByteSpan piece = rest.first(std::min<std::size_t>(rest.size(), 300 << 10));
            sink.write(piece);
            rest = rest.subspan(piece.size());
          }
        });
    ModelProto with_streamed = model;
    TensorProto& streamed = with_streamed.graph->initializer.emplace_back();
    streamed.name = "streamed";
    streamed.data_type = TensorProto::kUint8;
    streamed.dims = {dims[0]};
    ref.apply_to(streamed);
    writer.finish(with_streamed);
  }
  for (const std::filesystem::path& path : {converted, written}) {
    SCOPED_TRACE(path.string());
    const ZipReader zip = ZipReader::open(path);
    const DigestStatement statement =
        decode_digests(zip.data(*zip.find(kDigestsEntryName)).view(), {}, "x");
    std::vector<EntryDigest> expected = true_digests(path);
    std::sort(expected.begin(), expected.end(),
              [](const EntryDigest& a, const EntryDigest& b) { return a.name < b.name; });
    EXPECT_EQ(statement.entries, expected);
    EXPECT_GE(zip.find("big")->size, std::uint64_t{1} << 20);
    const VerifyReport report = verify(path);
    EXPECT_TRUE(report.ok()) << findings_text(report);
  }
}

TEST_F(SigningTest, UnzipSha256sumAndPythonCryptographyAgreeWithTheEntries) {
  if (!test_support::find_tool("unzip") || !test_support::find_tool("sha256sum")) {
    GTEST_SKIP() << "no unzip or sha256sum";
  }
  sign_with_a();
  const std::filesystem::path out = dir_ / "out";
  const auto unzipped =
      run_tool("unzip -q " + shell_quote(archive_.string()) + " -d " + shell_quote(out.string()));
  ASSERT_EQ(unzipped.exit_code, 0) << unzipped.output;
  // Every extracted file's sha256sum equals its resource digest, compared by python's json.
  const std::string script = R"(
import hashlib, json, os, subprocess, sys, base64
d = sys.argv[1]
statement = json.load(open(os.path.join(d, "__DIGESTS"), "rb"))
resources = statement["predicate"]["resources"]
names = sorted(n for n in os.listdir(d) if n not in ("__DIGESTS", "__SIGNATURE"))
assert [r["name"] for r in resources] == names, (resources, names)
for r in resources:
    out = subprocess.run(["sha256sum", os.path.join(d, r["name"])], capture_output=True, text=True)
    assert out.stdout.split()[0] == r["digest"], r["name"]
root = hashlib.sha256(b"".join(bytes.fromhex(r["digest"]) for r in resources)).hexdigest()
assert statement["subject"][0]["digest"]["sha256"] == root
bundle = json.load(open(os.path.join(d, "__SIGNATURE"), "rb"))
payload = base64.b64decode(bundle["dsseEnvelope"]["payload"])
assert payload == open(os.path.join(d, "__DIGESTS"), "rb").read()
ptype = bundle["dsseEnvelope"]["payloadType"].encode()
pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(payload), payload)
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
pem = open(sys.argv[2], "rb").read()
key = serialization.load_pem_public_key(pem)
key.verify(base64.b64decode(bundle["dsseEnvelope"]["signatures"][0]["sig"]), pae, ec.ECDSA(hashes.SHA256()))
assert bundle["verificationMaterial"]["publicKey"]["hint"] == hashlib.sha256(pem).hexdigest()
print("interop ok", len(resources))
)";
  test_support::write_file_bytes(dir_ / "check.py", script);
  const auto checked =
      run_tool("/usr/bin/python3 " + shell_quote((dir_ / "check.py").string()) + " " +
               shell_quote(out.string()) + " " + shell_quote(keys_.public_pem.string()) + " 2>&1");
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_NE(checked.output.find("interop ok 3"), std::string::npos) << checked.output;
}

// The message of the Error `action` throws, after checking its code.
template <typename Action>
std::string error_of(ErrorCode code, Action&& action) {
  try {
    action();
  } catch (const Error& e) {
    EXPECT_EQ(to_string(e.code()), to_string(code)) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

// XORs `mask` into byte `at` of entry `name`'s data and writes the entry's new CRC-32 into both
// of its headers, so that only a digest can tell.
void change_byte_fixing_crc(const std::filesystem::path& path, const std::string& name,
                            std::uint64_t at, std::uint8_t mask = 0x40) {
  std::vector<std::uint8_t> bytes = read_file_bytes(path);
  const ZipReader zip = ZipReader::from_bytes(bytes, kNoOwner);
  const ZipEntry& entry = *zip.find(name);
  bytes[entry.local->data_offset + at] ^= mask;
  const std::uint32_t crc = crc32(ByteSpan(bytes).subspan(entry.local->data_offset, entry.size));
  for (const std::uint64_t field :
       {entry.local_header_offset + 14, entry.central_header_offset + 16}) {
    for (int i = 0; i < 4; ++i) bytes[field + i] = static_cast<std::uint8_t>(crc >> (8 * i));
  }
  test_support::write_file_bytes(path, std::string(bytes.begin(), bytes.end()));
}

LoadOptions checking_digests() {
  LoadOptions options;
  options.check_digests = true;
  return options;
}

TEST_F(SigningTest, LazyDigestsCatchAChangedPayloadAtItsFirstGetNamingIt) {
  sign_with_a();
  change_byte_fixing_crc(archive_, "weight", 1000);
  // Mapped, read whole, and read in ranges (the remote archive's path): each opens, hands out
  // the intact tensor, and refuses the changed one whenever it is asked for.
  const std::vector<std::pair<std::string, std::function<Archive()>>> opens = {
      {"mapped", [&] { return Archive::open(archive_, checking_digests()); }},
      {"read",
       [&] {
         LoadOptions options = checking_digests();
         options.access = FileAccess::kRead;
         return Archive::open(archive_, options);
       }},
      {"ranges",
       [&] { return Archive::open(ByteSource::open_ranges(archive_), checking_digests()); }},
  };
  for (const auto& [how, open] : opens) {
    SCOPED_TRACE(how);
    const Archive archive = open();
    const Archive::TensorInfo& weight = *archive.find_tensor("weight");
    const Archive::TensorInfo& bias = *archive.find_tensor("Bias");
    EXPECT_TRUE(weight.data.empty());  // No unchecked byte is handed out.
    EXPECT_TRUE(bias.data.empty());
    const TensorBytes bias_bytes = archive.payload(bias);
    EXPECT_EQ(bias_bytes.size(), 300u * 4);
    const ZipReader zip = ZipReader::open(archive_);
    EXPECT_EQ(bias_bytes, zip.data(*zip.find("Bias")));
    for (int attempt = 0; attempt < 2; ++attempt) {
      const std::string message = error_of(ErrorCode::kCorrupt, [&] { archive.payload(weight); });
      EXPECT_NE(message.find("model.onnxz: entry 'weight': its SHA-256 is "), std::string::npos)
          << message;
    }
    const Archive::TensorInfo* both[] = {&bias, &weight};
    EXPECT_NE(error_of(ErrorCode::kCorrupt, [&] { archive.payloads(both); }).find("'weight'"),
              std::string::npos);
    EXPECT_EQ(archive.payload(bias), bias_bytes);  // Still fine after the failures.
  }
  // verify() reports it as a finding of the integrity checks (VerifyFinding::integrity).
  const VerifyReport report = verify(archive_);
  ASSERT_EQ(report.findings.size(), 1u) << findings_text(report);
  EXPECT_TRUE(report.findings[0].integrity);
  // Without the option the archive opens and hands the changed bytes out (the CRC-32 agrees).
  const Archive unchecked = Archive::open(archive_);
  EXPECT_EQ(unchecked.payload(*unchecked.find_tensor("weight")).size(), 256u * 100 * 4);
  // load() checks every payload.
  EXPECT_NE(error_of(ErrorCode::kCorrupt, [&] { load(archive_, checking_digests()); })
                .find("entry 'weight': its SHA-256 is "),
            std::string::npos);
}

TEST_F(SigningTest, LazyDigestsCheckTheModelAtOpen) {
  ModelProto model = two_tensor_model();
  model.doc_string = "a model whose bytes change";
  save(model, archive_);
  sign_with_a();
  const std::vector<std::uint8_t> bytes = read_file_bytes(archive_);
  const ZipReader zip = ZipReader::from_bytes(bytes, kNoOwner);
  const ZipEntry& entry = *zip.find("__MODEL_PROTO");
  const std::string text(
      bytes.begin() + static_cast<std::ptrdiff_t>(entry.local->data_offset),
      bytes.begin() + static_cast<std::ptrdiff_t>(entry.local->data_offset + entry.size));
  const std::size_t at = text.find("whose");
  ASSERT_NE(at, std::string::npos);
  change_byte_fixing_crc(archive_, "__MODEL_PROTO", at, 0x20);  // "whose" -> "Whose".
  EXPECT_EQ(Archive::open(archive_).model().doc_string, "a model Whose bytes change");
  const std::string message =
      error_of(ErrorCode::kCorrupt, [&] { Archive::open(archive_, checking_digests()); });
  EXPECT_NE(message.find("entry '__MODEL_PROTO': its SHA-256 is "), std::string::npos) << message;
}

TEST_F(SigningTest, LazyDigestsRefuseAnArchiveWithoutThemAndCheckAKeyAtOpen) {
  const std::string message =
      error_of(ErrorCode::kCorrupt, [&] { Archive::open(archive_, checking_digests()); });
  EXPECT_NE(message.find("model.onnxz: has no __DIGESTS entry"), std::string::npos) << message;

  sign_with_a();
  LoadOptions keyed;  // A key implies check_digests.
  keyed.public_key = PublicKey::load(keys_.public_pem);
  const Archive archive = Archive::open(archive_, keyed);
  EXPECT_TRUE(archive.find_tensor("weight")->data.empty());
  EXPECT_EQ(archive.payload(*archive.find_tensor("weight")).size(), 256u * 100 * 4);
  keyed.public_key = PublicKey::load(other_.public_pem);
  const std::string other = error_of(ErrorCode::kCorrupt, [&] { Archive::open(archive_, keyed); });
  EXPECT_NE(other.find("entry '__SIGNATURE': signed by another key"), std::string::npos) << other;

  SignOptions digests_only;
  digests_only.output.durable = false;
  sign_archive(archive_, digests_only);
  EXPECT_NE(error_of(ErrorCode::kCorrupt, [&] { Archive::open(archive_, keyed); })
                .find("has no __SIGNATURE entry, and a signature by key"),
            std::string::npos);
  EXPECT_NO_THROW(Archive::open(archive_, checking_digests()));
}

TEST_F(SigningTest, LazyDigestsHoldWhenThreadsGetTheSameTensorAtOnce) {
  sign_with_a();
  for (const bool changed : {false, true}) {
    SCOPED_TRACE(changed ? "changed" : "intact");
    if (changed) change_byte_fixing_crc(archive_, "weight", 5);
    const Archive archive = Archive::open(archive_, checking_digests());
    const Archive::TensorInfo& weight = *archive.find_tensor("weight");
    std::atomic<int> failures{0};
    std::atomic<int> successes{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 8; ++i) {
          try {
            if (archive.payload(weight).size() == 256u * 100 * 4) ++successes;
          } catch (const Error& e) {
            if (e.code() == ErrorCode::kCorrupt) ++failures;
          }
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(successes.load(), changed ? 0 : 32);
    EXPECT_EQ(failures.load(), changed ? 32 : 0);
  }
}

// The writers hash large entries by jobs that read the written bytes back, on a second thread and
// on the writer's own: convert, repack, save and ArchiveWriter (spans and producers), with and
// without progress (which makes save and repack write through producers), give the same bytes
// with the second thread as without it, and archives that verify.
TEST(WritingWithDigests, TheSameBytesWithOrWithoutTheSecondThread) {
  const ScratchDir dir("digests_threads");
  ModelProto model;
  model.ir_version = 8;
  GraphProto& graph = model.graph.ensure();
  const std::int64_t floats[] = {3, 65536, 70000, 262144, 100, 300000, 1, 524289, 65535, 40};
  for (std::size_t i = 0; i < std::size(floats); ++i) {
    graph.initializer.push_back(test_support::raw_tensor(
        "t" + std::to_string(i), TensorProto::kFloat, {floats[i]}, static_cast<int>(i + 1)));
  }
  const std::filesystem::path legacy = dir / "legacy.onnx";
  LegacyWriteOptions external;
  external.mode = LegacyWriteOptions::Mode::kExternal;
  write_legacy_model(model, legacy, external);
  save(model, dir / "plain.onnxz");

  const auto write_all = [&](const std::filesystem::path& folder, bool progress) {
    std::filesystem::create_directories(folder);
    SaveOptions options;
    options.digests = true;
    if (progress) options.progress = [](std::uint64_t, std::uint64_t) {};
    ConvertOptions convert_options;
    convert_options.archive = options;
    convert(legacy, folder / "converted.onnxz", convert_options);
    repack(dir / "plain.onnxz", folder / "repacked.onnxz", {.save = options});
    save(model, folder / "saved.onnxz", options);
    ArchiveWriter writer(folder / "written.onnxz", options);
    ModelProto referring = model;
    for (TensorProto& tensor : referring.graph->initializer) {
      const ByteSpan bytes = tensor.raw_data->view();
      // A copy, gone when add_tensor returns: the writer may not read it later.
      std::vector<std::uint8_t> copy(bytes.begin(), bytes.end());
      const TensorRef ref =
          tensor.dims[0] % 2 == 0
              ? writer.add_tensor(*tensor.name, TensorProto::kFloat, tensor.dims, copy)
              : writer.add_tensor(*tensor.name, TensorProto::kFloat, tensor.dims,
                                  [&](EntrySink& sink) {
                                    sink.write(ByteSpan(copy).first(copy.size() / 3));
                                    sink.write(ByteSpan(copy).subspan(copy.size() / 3));
                                  });
      std::fill(copy.begin(), copy.end(), 0xAB);
      ref.apply_to(tensor);
    }
    writer.finish(referring);
  };
  for (const bool progress : {false, true}) {
    SCOPED_TRACE(progress ? "with progress" : "without progress");
    const std::filesystem::path threaded = dir / (progress ? "p1" : "t1");
    const std::filesystem::path alone = dir / (progress ? "p0" : "t0");
    write_all(threaded, progress);
    detail::set_crc_job_threads(0);
    write_all(alone, progress);
    detail::set_crc_job_threads(1);
    for (const char* name : {"converted.onnxz", "repacked.onnxz", "saved.onnxz", "written.onnxz"}) {
      SCOPED_TRACE(name);
      EXPECT_TRUE(read_file_bytes(threaded / name) == read_file_bytes(alone / name));
      const VerifyReport report = verify(threaded / name);
      EXPECT_TRUE(report.ok()) << findings_text(report);
      const ZipReader zip = ZipReader::open(threaded / name);
      EXPECT_NE(zip.find(kDigestsEntryName), nullptr);
    }
  }
}

// A damaged entry among large ones, repacked with digests: the input's corruption, naming the
// entry, from whichever call learns of it; no output.
TEST(WritingWithDigests, RepackNamesADamagedInputEntryAndLeavesNoOutput) {
  const ScratchDir dir("digests_repack_damaged");
  ModelProto model;
  model.ir_version = 8;
  for (int i = 0; i < 6; ++i) {
    model.graph.ensure().initializer.push_back(
        test_support::raw_tensor("w" + std::to_string(i), TensorProto::kFloat, {300000}, i + 1));
  }
  save(model, dir / "in.onnxz");
  {
    // Flip a byte in the middle of w2's data.
    const ZipReader zip = ZipReader::open(dir / "in.onnxz");
    const ZipEntry& entry = *zip.find("w2");
    std::vector<std::uint8_t> bytes = read_file_bytes(dir / "in.onnxz");
    bytes[entry.local->data_offset + 1000] ^= 0xFF;
    test_support::write_file_bytes(dir / "in.onnxz", std::string(bytes.begin(), bytes.end()));
  }
  for (const std::size_t threads : {1u, 0u}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    detail::set_crc_job_threads(threads);
    SaveOptions options;
    options.digests = true;
    try {
      repack(dir / "in.onnxz", dir / "out.onnxz", {.save = options});
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCorrupt);
      EXPECT_NE(std::string(e.what()).find("in.onnxz: entry 'w2' at offset"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("CRC-32 mismatch"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "out.onnxz"));
  }
  detail::set_crc_job_threads(1);
}

}  // namespace
}  // namespace onnxzip
