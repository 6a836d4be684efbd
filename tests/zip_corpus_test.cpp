// The ZIP reader against archives other projects wrote, valid and deliberately broken:
// ../shared/corpora/zip (libzip's regress/data and minizip-ng's fuzz seeds; README.md there
// gives each file's provenance and what libzip / minizip-ng, Python's zipfile and Info-ZIP unzip
// make of it). Every file present must be in the table below, none may crash, every broken one
// must be refused with the specific code and reason.
//
// Verdicts follow the .onnxz format decisions. Where the reference tools disagree with each other
// or with this reader, the row says why we decided as we did.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "onnxzip/error.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/zip_reader.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;

enum class Verdict {
  kAccept,       // Opens; every entry's data reads and verifies.
  kVerifyFails,  // Opens; every entry verifies except `detail`, which is kCorrupt on verify.
  kBomb,         // Opens; entry `detail` is a bomb by the default ratio limit (`code` on read).
  kReject,       // Refused on open with `code`; the message holds `detail`.
};

struct CorpusCase {
  const char* file;  // Relative to the corpus folder.
  Verdict verdict;
  ErrorCode code = ErrorCode::kCorrupt;
  const char* detail = "";
};

constexpr Verdict A = Verdict::kAccept;
constexpr Verdict V = Verdict::kVerifyFails;
constexpr Verdict R = Verdict::kReject;
constexpr Verdict B = Verdict::kBomb;
constexpr ErrorCode kCorrupt = ErrorCode::kCorrupt;
constexpr ErrorCode kUnsupported = ErrorCode::kUnsupported;

// Reasons, as the reader words them.
constexpr const char* kEncrypted = "encrypted entry";
constexpr const char* kNoEnd = "not a ZIP archive";
constexpr const char* kNotAtEnd = "comment ends at offset";
constexpr const char* kNotContiguous = "does not end where the end records start";
constexpr const char* kLocalSays = "the local header says";
constexpr const char* kStoredSizes = "stored entry with compressed size";
constexpr const char* kExtraTruncated = "truncated extra field record";

const CorpusCase kCases[] = {
    {"libzip/aaaaaaaa-stored.zip", A},
    // A ZIP holding bigzero.zip (zip64, 4 GiB of zeros) deflated from 4.2 MB to 10 KB, 403:1:
    // the tools inflate it; the default limit of 100:1 refuses it as a bomb.
    {"libzip/bigzero-zip.zip", B, ErrorCode::kLimitExceeded, "bigzero.zip"},
    {"libzip/bogus.zip", R, kCorrupt, kNoEnd},
    // libzip opens it and fails only the bad entries on read; one entry ("cryptok") is
    // encrypted, and encrypted entries are refused on open, so the whole archive is.
    {"libzip/broken.zip", R, kUnsupported, kEncrypted},
    {"libzip/changing-size-muchl.zip", A},
    {"libzip/changing-size-muchlo.zip", A},
    {"libzip/changing-size-muchlonger.zip", A},
    {"libzip/changing-size.zip", A},
    {"libzip/cm-default.zip", A},
    // Encrypted archives: the tools open them and decrypt with a password; refused here.
    {"libzip/empty-pkware.zip", R, kUnsupported, kEncrypted},
    {"libzip/encrypt-1234.zip", R, kUnsupported, kEncrypted},
    {"libzip/encrypt-aes128-noentropy.zip", R, kUnsupported, kEncrypted},
    {"libzip/encrypt-aes128.zip", R, kUnsupported, kEncrypted},
    {"libzip/encrypt-aes192-noentropy.zip", R, kUnsupported, kEncrypted},
    {"libzip/encrypt-aes192.zip", R, kUnsupported, kEncrypted},
    {"libzip/encrypt-aes256-noentropy.zip", R, kUnsupported, kEncrypted},
    {"libzip/encrypt-aes256.zip", R, kUnsupported, kEncrypted},
    {"libzip/encrypt-none.zip", A},
    {"libzip/encrypt-pkware-noentropy-2.zip", R, kUnsupported, kEncrypted},
    {"libzip/encrypt-pkware-noentropy.zip", R, kUnsupported, kEncrypted},
    {"libzip/encrypt.zip", R, kUnsupported, kEncrypted},
    {"libzip/encrypt_plus_extra.zip", R, kUnsupported, kEncrypted},
    {"libzip/encrypt_plus_extra_modified_c.zip", R, kUnsupported, kEncrypted},
    {"libzip/encrypt_plus_extra_modified_l.zip", R, kUnsupported, kEncrypted},
    // Extra fields ending in 1-3 stray bytes: zeros are tolerated as padding (libzip agrees);
    // anything else is a truncated record. libzip's consistency check refuses those too;
    // Python and unzip ignore them.
    {"libzip/extra_field_align_1-0.zip", A},
    {"libzip/extra_field_align_1-ef_00.zip", A},
    {"libzip/extra_field_align_1-ef_ff.zip", R, kCorrupt, kExtraTruncated},
    {"libzip/extra_field_align_1-ff.zip", R, kCorrupt, kExtraTruncated},
    {"libzip/extra_field_align_2-0.zip", A},
    {"libzip/extra_field_align_2-ef_00.zip", A},
    {"libzip/extra_field_align_2-ef_ff.zip", R, kCorrupt, kExtraTruncated},
    {"libzip/extra_field_align_2-ff.zip", R, kCorrupt, kExtraTruncated},
    {"libzip/extra_field_align_3-0.zip", A},
    {"libzip/extra_field_align_3-ef_00.zip", A},
    {"libzip/extra_field_align_3-ef_ff.zip", R, kCorrupt, kExtraTruncated},
    {"libzip/extra_field_align_3-ff.zip", R, kCorrupt, kExtraTruncated},
    {"libzip/extra_field_align_4-ff.zip", A},  // "ff ff 00 00": a complete empty record.
    // Byte-identical names: libzip opens them without its consistency check, Python reads both;
    // the format refuses them (which one would find() return?).
    {"libzip/filename_duplicate.zip", R, kCorrupt, "duplicate name"},
    // Empty names: every tool accepts them, but an empty name can be neither extracted nor
    // looked up as a file, so this reader refuses it.
    {"libzip/filename_duplicate_empty.zip", R, kCorrupt, "empty entry name"},
    {"libzip/filename_empty.zip", R, kCorrupt, "empty entry name"},
    {"libzip/fileorder.zip", A},
    {"libzip/firstsecond-split-deflated.zip", A},
    {"libzip/firstsecond-split-stored.zip", A},
    {"libzip/firstsecond.zip", A},
    {"libzip/foo-stored.zip", A},
    // libzip wrote these as expected output (its tests never read the data); the entry "gap"
    // has a wrong CRC, as Python and unzip report.
    {"libzip/gap-add.zip", V, kCorrupt, "gap"},
    {"libzip/gap-delete.zip", V, kCorrupt, "gap"},
    {"libzip/gap-replace.zip", V, kCorrupt, "gap"},
    {"libzip/gap.zip", V, kCorrupt, "gap"},
    {"libzip/hmac-error.zip", R, kUnsupported, kEncrypted},
    // Comment length not reaching exactly to the end: libzip opens these without its
    // consistency check, Python too; refused here (no trailing bytes, no truncated comment).
    {"libzip/incons-archive-comment-longer.zip", R, kCorrupt, kNotAtEnd},
    {"libzip/incons-archive-comment-shorter.zip", R, kCorrupt, kNotAtEnd},
    {"libzip/incons-cdoffset.zip", R, kCorrupt, kNotContiguous},
    {"libzip/incons-cdsize-large.zip", R, kCorrupt, kNotContiguous},
    // No libzip verdict (its test names this file but opens the -large one); Python refuses.
    {"libzip/incons-cdsize-small.zip", R, kCorrupt, kNotContiguous},
    {"libzip/incons-central-compression-method.zip", R, kCorrupt, "compression method 0"},
    // Python and unzip read these by trusting one of the two sizes; a stored entry whose sizes
    // differ is a contradiction.
    {"libzip/incons-central-compsize-larger-toolarge.zip", R, kCorrupt, kStoredSizes},
    {"libzip/incons-central-compsize-larger.zip", R, kCorrupt, kStoredSizes},
    {"libzip/incons-central-compsize-smaller.zip", R, kCorrupt, kLocalSays},
    {"libzip/incons-central-crc.zip", R, kCorrupt, kLocalSays},
    // libzip's consistency check refuses a local/central date mismatch; Python and unzip do not
    // look. The date does not change the data, so it is accepted with a kHeaderMismatch finding.
    {"libzip/incons-central-date.zip", A},
    {"libzip/incons-central-file-comment-longer.zip", R, kCorrupt,
     "run past the end of the central directory"},
    {"libzip/incons-central-file-comment-shorter.zip", R, kCorrupt, "follow the last of them"},
    {"libzip/incons-central-file-comment-utf8-ascii.zip", A},
    {"libzip/incons-central-magic-bad.zip", R, kCorrupt, "bad signature"},
    {"libzip/incons-central-magic-bad2.zip", R, kCorrupt, "bad signature"},
    {"libzip/incons-central-size-larger.zip", R, kCorrupt, kStoredSizes},
    // Structure fine, data CRC wrong (libzip's open does not read data).
    {"libzip/incons-data.zip", V, kCorrupt, "a"},
    {"libzip/incons-ef-central-size-wrong.zip", R, kCorrupt, "extra field record 0x3aff"},
    {"libzip/incons-ef-local-dupe-utf8comment.zip", A},
    // libzip interprets the Info-ZIP Unicode Path field (0x7075) and refuses a local one that
    // disagrees; this reader takes names from the name field only, and reports 0x7075 as an
    // extra field it ignores. Python and unzip read both files.
    {"libzip/incons-ef-local-dupe-utf8name.zip", A},
    // Two zip64 fields in one local header: libzip uses the first (so refuses v1, where it
    // disagrees with the central sizes, and opens v2); which one is meant is a guess, so both
    // are refused.
    {"libzip/incons-ef-local-dupe-zip64-v1.zip", R, kCorrupt, "two zip64 extra fields"},
    {"libzip/incons-ef-local-dupe-zip64-v2.zip", R, kCorrupt, "two zip64 extra fields"},
    {"libzip/incons-ef-local-id-size.zip", R, kCorrupt, "extra field record 0x5455"},
    {"libzip/incons-ef-local-id.zip", A},
    {"libzip/incons-ef-local-size.zip", R, kCorrupt, "extra field record 0x7875"},
    {"libzip/incons-ef-local-utf8name-ascii.zip", A},  // See the utf8name row above.
    {"libzip/incons-eocd-magic-bad.zip", R, kCorrupt, kNoEnd},
    // Python and unzip accept; libzip refuses (zip64 record and end record do not meet).
    {"libzip/incons-eocd64-gap.zip", R, kCorrupt, "below the minimum 44"},
    {"libzip/incons-eocd64.zip", R, kCorrupt, "zip64 end record at offset 100 says 1"},
    // Python ignores the counts; libzip and the format do not.
    {"libzip/incons-file-count-high.zip", R, kCorrupt, "holds at most 1"},
    {"libzip/incons-file-count-low.zip", R, kCorrupt, "follow the last of them"},
    {"libzip/incons-file-count-overflow.zip", R, kCorrupt, "zip64 end record at offset 100 says"},
    {"libzip/incons-filename-nul-byte.zip", R, kCorrupt, "NUL byte"},
    {"libzip/incons-gap-before-cd.zip", A},  // A gap after the last entry is a finding.
    // libzip accepts a byte between the central directory and the end record; Python refuses
    // (it locates the directory from the end record's position) and unzip warns. Refused: the
    // central directory must end where the end records start.
    {"libzip/incons-gap-before-eocd.zip", R, kCorrupt, kNotContiguous},
    {"libzip/incons-gap-before-local.zip", A},
    {"libzip/incons-local-compression-method.zip", R, kCorrupt, "compression method 8"},
    {"libzip/incons-local-compsize-larger.zip", R, kCorrupt, kLocalSays},
    {"libzip/incons-local-compsize-smaller.zip", R, kCorrupt, kLocalSays},
    {"libzip/incons-local-crc.zip", R, kCorrupt, kLocalSays},
    {"libzip/incons-local-filename-long.zip", R, kCorrupt, "run into the central directory"},
    {"libzip/incons-local-filename-missing.zip", R, kCorrupt, "names the entry ''"},
    {"libzip/incons-local-filename-short.zip", R, kCorrupt, "names the entry ''"},
    {"libzip/incons-local-filename.zip", R, kCorrupt, "names the entry 'b'"},
    {"libzip/incons-local-magic-bad.zip", R, kCorrupt, "bad signature"},
    {"libzip/incons-local-size-larger.zip", R, kCorrupt, kLocalSays},
    {"libzip/incons-stored-size.zip", R, kCorrupt, kStoredSizes},
    {"libzip/incons-streamed-2.zip", R, kCorrupt, "no data descriptor"},
    {"libzip/incons-streamed.zip", R, kCorrupt, "no data descriptor"},
    // libzip opens it and fails the read ("garbage at end of compressed data"); Python reads
    // it. The local header lacks flag bit 3 that the central header has, which the format
    // refuses outright.
    {"libzip/incons-trailing-garbage.zip", R, kCorrupt, "disagree on bits"},
    {"libzip/incons-zip64-checkcons-overflow.zip", R, kCorrupt, "overlaps the central directory"},
    // Bytes after the end record's comment / before the archive: libzip reads these only as
    // a sub-range (ziptool -l 412 / -o 4), Python and unzip compensate. Refused.
    {"libzip/junk-at-end.zip", R, kCorrupt, kNotAtEnd},
    {"libzip/junk-at-start.zip", R, kCorrupt, kNotContiguous},
    {"libzip/lzma-no-eos.zip", R, kUnsupported, "compression method 14"},
    {"libzip/mtime-default.zip", A},
    {"libzip/mtime-dstpoint-deflated.zip", A},
    {"libzip/mtime-dstpoint.zip", A},
    {"libzip/mtime-post-dstpoint-deflated.zip", A},
    {"libzip/mtime-post-dstpoint.zip", A},
    {"libzip/mtime-pre-dstpoint-deflated.zip", A},
    {"libzip/mtime-pre-dstpoint.zip", A},
    // Python reads it and unzip warns; libzip refuses, as does this reader.
    {"libzip/multidisk.zip", R, kUnsupported, "multi-disk"},
    {"libzip/rename_ok.zip", A},
    {"libzip/stored-no-eos.zip", A},
    {"libzip/streamed-zip64.zip", A},
    {"libzip/streamed.zip", A},
    // Names holding every byte 0x20-0xFF, one of them a backslash: every tool accepts, the
    // format refuses backslashes (a path separator on Windows).
    {"libzip/test-cp437-comment-utf-8.zip", R, kCorrupt, "backslash"},
    {"libzip/test-cp437-fc-utf-8-filename.zip", A},
    {"libzip/test-cp437-fc.zip", A},
    {"libzip/test-cp437.zip", R, kCorrupt, "backslash"},
    {"libzip/test-utf8-unmarked.zip", A},
    {"libzip/test-utf8.zip", A},
    {"libzip/test.zip", A},
    {"libzip/test2.zip", A},
    {"libzip/test_open_multiple.zip", A},
    {"libzip/testbuffer.zip", A},
    {"libzip/testbuffer_reopen.zip", A},
    {"libzip/testbzip2.zip", R, kUnsupported, "compression method 12"},
    {"libzip/testbzip2broken.zip", R, kUnsupported, "compression method 12"},
    {"libzip/testchanged.zip", A},
    {"libzip/testchangedlocal.zip", A},
    {"libzip/testcomment.zip", A},
    {"libzip/testcomment13.zip", A},
    {"libzip/testcommentremoved.zip", A},
    {"libzip/testdeflated.zip", A},
    {"libzip/testdeflated2.zip", A},
    {"libzip/testdir.zip", A},
    {"libzip/testempty.zip", A},
    // Four bytes after the end record: libzip refuses under its consistency check (and opens
    // without it), Python and unzip accept. Refused, as junk-at-end.
    {"libzip/testextrabytes.zip", R, kCorrupt, kNotAtEnd},
    {"libzip/testfile-UTF8.zip", A},
    {"libzip/testfile-cp437.zip", A},
    {"libzip/testfile-ef.zip", A},
    {"libzip/testfile-long-comment.zip", A},
    {"libzip/testfile-lzma.zip", R, kUnsupported, "compression method 14"},
    {"libzip/testfile-plus-extra.zip", A},
    {"libzip/testfile-stored-dos.zip", A},
    {"libzip/testfile-torrentzip-modified.zip", A},
    {"libzip/testfile-torrentzip.zip", A},
    {"libzip/testfile-truncated.zip", R, kCorrupt, kNoEnd},
    {"libzip/testfile-xz.zip", R, kUnsupported, "compression method 95"},
    {"libzip/testfile-zstd.zip", R, kUnsupported, "compression method 93"},
    {"libzip/testfile.zip", A},
    {"libzip/testfile0.zip", A},
    {"libzip/testfile2014.zip", A},
    {"libzip/teststdin.zip", A},
    {"libzip/teststored.zip", A},
    {"libzip/utf-8-standardization-input.zip", A},
    {"libzip/utf-8-standardization-output.zip", A},
    {"libzip/zip-in-archive-comment.zip", A},
    {"libzip/zip64-3mf.zip", A},
    {"libzip/zip64-in-archive-comment.zip", A},
    {"libzip/zip64.zip", A},
    {"libzip/zipcmp_zip_dir.zip", A},
    {"minizip-ng/as.zip", A},
    {"minizip-ng/bzip2.zip", R, kUnsupported, "compression method 12"},
    {"minizip-ng/comments.zip", A},
    {"minizip-ng/corpus.zip", A},
    // `..\/hello`: a traversal attempt in Windows spelling; refused for the backslash.
    {"minizip-ng/dot_dot_backslash_name.zip", R, kCorrupt, "backslash"},
    {"minizip-ng/encrypted_pkcrypt.zip", R, kUnsupported, kEncrypted},
    {"minizip-ng/encrypted_wzaes.zip", R, kUnsupported, kEncrypted},
    {"minizip-ng/gh.zip", A},
    {"minizip-ng/gh_739.zip", R, kCorrupt, kNoEnd},  // Fuzzer PoC: no end record.
    {"minizip-ng/gh_740.zip", R, kCorrupt, kNoEnd},
    // minizip-ng recovers by ignoring the count; Python ignores it; unzip and the format do not.
    {"minizip-ng/incorrect_number_entries.zip", R, kCorrupt, "counts 1 entries on this disk"},
    {"minizip-ng/infozip_symlinks.zip", A},
    {"minizip-ng/large_cd_comment.zip", A},
    {"minizip-ng/license_zstd.zip", R, kUnsupported, "compression method 20"},
    {"minizip-ng/lzma.zip", R, kUnsupported, "compression method 14"},
    {"minizip-ng/permissions.zip", A},
    {"minizip-ng/signed.zip", A},
    {"minizip-ng/storeonly.zip", A},
    {"minizip-ng/tiny.zip", A},
    {"minizip-ng/unsupported_permissions.zip", A},
    {"minizip-ng/xz.zip", R, kUnsupported, "compression method 95"},
    {"minizip-ng/zip64.zip", A},
};

void PrintTo(const CorpusCase& c, std::ostream* os) { *os << c.file; }

fs::path corpus_dir() { return fs::path(ONNXZIP_SHARED_DIR) / "corpora" / "zip"; }

bool contains(std::string_view text, std::string_view fragment) {
  return text.find(fragment) != std::string_view::npos;
}

TEST(ZipCorpus, TheTableCoversExactlyTheFilesPresent) {
  if (!fs::is_directory(corpus_dir())) GTEST_SKIP() << "no corpus at " << corpus_dir();
  std::set<std::string> present;
  for (const auto& item : fs::recursive_directory_iterator(corpus_dir())) {
    if (!item.is_regular_file() || item.path().filename() == "README.md") continue;
    present.insert(fs::relative(item.path(), corpus_dir()).generic_string());
  }
  std::set<std::string> listed;
  for (const CorpusCase& c : kCases) {
    EXPECT_TRUE(listed.insert(c.file).second) << "listed twice: " << c.file;
  }
  for (const std::string& file : present) {
    EXPECT_TRUE(listed.count(file)) << "no verdict for " << file << ": add it to kCases";
  }
  for (const std::string& file : listed) {
    EXPECT_TRUE(present.count(file)) << "listed but absent: " << file;
  }
}

class ZipCorpusFile : public ::testing::TestWithParam<CorpusCase> {};

TEST_P(ZipCorpusFile, GetsItsVerdict) {
  const CorpusCase& c = GetParam();
  if (!fs::is_directory(corpus_dir())) GTEST_SKIP() << "no corpus at " << corpus_dir();
  const fs::path path = corpus_dir() / c.file;
  if (c.verdict == Verdict::kReject) {
    try {
      const ZipReader r = ZipReader::open(path);
      ADD_FAILURE() << c.file << " was accepted with " << r.entries().size() << " entries";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), c.code) << e.what();
      EXPECT_TRUE(contains(e.what(), c.detail)) << "'" << c.detail << "' not in: " << e.what();
      EXPECT_TRUE(contains(e.what(), path.string())) << e.what();
    }
    return;
  }
  if (c.verdict == Verdict::kBomb) {
    const ZipReader r = ZipReader::open(path);
    try {
      (void)r.verified_data(r.at(c.detail));
      ADD_FAILURE() << c.detail << " was inflated";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), c.code) << e.what();
      EXPECT_TRUE(contains(e.what(), "compression ratio")) << e.what();
    }
    ZipReaderOptions trusting;
    trusting.max_compression_ratio = 0;
    const ZipReader lifted = ZipReader::open(path, trusting);
    for (const ZipEntry& e : lifted.entries()) {
      EXPECT_EQ(lifted.verified_data(e).size(), e.size) << e.name;
    }
    return;
  }
  const ZipReader r = ZipReader::open(path);
  bool failed_as_expected = false;
  for (const ZipEntry& e : r.entries()) {
    const bool should_fail = c.verdict == Verdict::kVerifyFails && e.name == c.detail;
    try {
      const TensorBytes data = r.verified_data(e);
      EXPECT_EQ(data.size(), e.size) << e.name;
      EXPECT_FALSE(should_fail) << e.name << " verified";
    } catch (const Error& err) {
      EXPECT_TRUE(should_fail) << err.what();
      EXPECT_EQ(err.code(), c.code) << err.what();
      EXPECT_TRUE(contains(err.what(), "CRC-32 mismatch")) << err.what();
      failed_as_expected = should_fail;
    }
  }
  EXPECT_EQ(failed_as_expected, c.verdict == Verdict::kVerifyFails);
}

INSTANTIATE_TEST_SUITE_P(ZipCorpus, ZipCorpusFile, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<CorpusCase>& param) {
                           std::string name = param.param.file;
                           name = name.substr(0, name.rfind('.'));
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

// Facts the corpus README states about particular files.
class ZipCorpusFacts : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::is_directory(corpus_dir())) GTEST_SKIP() << "no corpus at " << corpus_dir();
  }
  static ZipReader open(const char* file) { return ZipReader::open(corpus_dir() / file); }
};

TEST_F(ZipCorpusFacts, PicksTheRealEndRecordNotTheOneInsideTheComment) {
  const ZipReader plain = open("libzip/zip-in-archive-comment.zip");
  ASSERT_EQ(plain.entries().size(), 1u);
  EXPECT_EQ(plain.entries()[0].name, "test");
  EXPECT_EQ(plain.entries()[0].size, 5u);
  const ZipReader zip64 = open("libzip/zip64-in-archive-comment.zip");
  ASSERT_EQ(zip64.entries().size(), 1u);
  EXPECT_EQ(zip64.entries()[0].name, "testfile.txt");
  EXPECT_EQ(zip64.entries()[0].size, 0u);
  EXPECT_FALSE(zip64.has_zip64_end_record());
}

TEST_F(ZipCorpusFacts, StreamedEntriesHaveTheirDescriptorSizes) {
  for (const char* file : {"libzip/streamed.zip", "libzip/streamed-zip64.zip"}) {
    const ZipReader r = open(file);
    ASSERT_EQ(r.entries().size(), 1u) << file;
    const ZipEntry& e = r.entries()[0];
    EXPECT_EQ(e.name, "-");
    EXPECT_EQ(e.size, 2u);
    EXPECT_EQ(e.compressed_size, 4u);
    EXPECT_TRUE(e.is_deflated());
    EXPECT_TRUE(e.has_data_descriptor);
  }
}

TEST_F(ZipCorpusFacts, CentralOrderIsKeptBesideFileOrder) {
  const ZipReader r = open("libzip/fileorder.zip");
  ASSERT_EQ(r.entries().size(), 2u);
  const ZipEntry& file1 = r.at("file1");
  const ZipEntry& file2 = r.at("file2");
  EXPECT_EQ(file1.central_index, 0u);
  EXPECT_EQ(file2.central_index, 1u);
}

TEST_F(ZipCorpusFacts, EmptyArchivesAndLongComments) {
  EXPECT_TRUE(open("libzip/testempty.zip").entries().empty());
  EXPECT_TRUE(open("minizip-ng/tiny.zip").entries().empty());
  const ZipReader r = open("libzip/testfile-long-comment.zip");
  EXPECT_GT(r.comment().size(), 0u);
  EXPECT_TRUE(std::any_of(r.findings().begin(), r.findings().end(), [](const ZipFinding& f) {
    return f.kind == ZipFindingKind::kArchiveComment;
  }));
}

TEST_F(ZipCorpusFacts, JunkAroundAnArchiveReadsWhenCutAway) {
  // libzip's own tests read these only as the sub-range that is the archive.
  const auto junk_at_end = MappedFile::open(corpus_dir() / "libzip/junk-at-end.zip");
  EXPECT_EQ(ZipReader::from_bytes(junk_at_end->bytes().first(412), kNoOwner).entries().size(), 3u);
  const auto junk_at_start = MappedFile::open(corpus_dir() / "libzip/junk-at-start.zip");
  EXPECT_EQ(ZipReader::from_bytes(junk_at_start->bytes().subspan(4), kNoOwner).entries().size(),
            3u);
}

TEST_F(ZipCorpusFacts, DateMismatchIsAFindingNotAnError) {
  const ZipReader r = open("libzip/incons-central-date.zip");
  EXPECT_TRUE(std::any_of(r.findings().begin(), r.findings().end(), [](const ZipFinding& f) {
    return f.kind == ZipFindingKind::kHeaderMismatch && f.entry == "a";
  }));
}

}  // namespace
}  // namespace onnxzip
