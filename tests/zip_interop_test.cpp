// Archives written by ZipWriter, judged by independent ZIP implementations: Info-ZIP unzip,
// CPython's zipfile, 7-Zip, libzip (ziptool) and Android's zipalign. A test is skipped only when
// its tool is not installed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "support/external_tool.h"
#include "support/scratch_dir.h"
#include "support/sha256.h"
#include "zip_writer.h"

namespace onnxzip {
namespace {

using test_support::find_tool;
using test_support::run_tool;
using test_support::ScratchDir;
using test_support::sha256_hex;
using test_support::shell_quote;
using ::testing::HasSubstr;

constexpr char kPython[] = "/usr/bin/python3";

struct Payload {
  std::string name;
  std::vector<std::uint8_t> bytes;
};

std::vector<std::uint8_t> pattern(std::size_t size, unsigned seed) {
  std::vector<std::uint8_t> bytes(size);
  std::uint32_t state = 0x9E3779B9u * (seed + 1);
  for (auto& b : bytes) {
    state = state * 1664525u + 1013904223u;
    b = static_cast<std::uint8_t>(state >> 24);
  }
  return bytes;
}

std::vector<Payload> payloads() {
  std::vector<Payload> result;
  const std::size_t sizes[] = {0, 1, 63, 64, 65, 4097, (1 << 20) + 3};
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    std::string name = "tensor_" + std::to_string(i);
    name.append(i * 17, 'n');  // Names of varied lengths move the headers around.
    result.push_back({name, pattern(sizes[i], static_cast<unsigned>(i))});
  }
  result.push_back({"__MODEL_PROTO", pattern(300, 42)});
  return result;
}

// Writes `entries`, mixing both paths; the producer feeds 1000-byte pieces.
std::vector<WrittenEntry> write_archive(const std::filesystem::path& path,
                                        const std::vector<Payload>& entries,
                                        std::uint32_t alignment) {
  ZipWriterOptions options;
  options.alignment = alignment;
  ZipWriter writer(path, options);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Payload& p = entries[i];
    if (i % 2 == 0) {
      writer.add(p.name, p.bytes);
    } else {
      writer.add(p.name, p.bytes.size(), [&](EntrySink& sink) {
        for (std::size_t at = 0; at < p.bytes.size(); at += 1000) {
          sink.write(
              ByteSpan(p.bytes).subspan(at, std::min<std::size_t>(1000, p.bytes.size() - at)));
        }
      });
    }
  }
  writer.finish();
  return writer.entries();
}

class ZipInteropTest : public ::testing::TestWithParam<std::uint32_t> {
 protected:
  void SetUp() override { write_archive(archive_, entries_, GetParam()); }
  // Skips the test when `tool` is absent; returns its path otherwise.
  std::string require(const std::string& tool) {
    const auto path = find_tool(tool);
    if (!path) return {};
    return path->string();
  }
  std::string quoted_archive() const { return shell_quote(archive_.string()); }

  const ScratchDir dir_{"zip_interop"};
  const std::filesystem::path archive_ = dir_ / "interop.onnxz";
  const std::vector<Payload> entries_ = payloads();
};

#define ONNXZIP_REQUIRE_TOOL(var, name)  \
  const std::string var = require(name); \
  if (var.empty()) GTEST_SKIP() << name << " is not installed";

TEST_P(ZipInteropTest, InfoZipUnzipTestsEveryEntry) {
  ONNXZIP_REQUIRE_TOOL(unzip, "unzip");
  const auto result = run_tool(unzip + " -t " + quoted_archive());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("No errors detected"));
  for (const Payload& p : entries_) EXPECT_THAT(result.output, HasSubstr("testing: " + p.name));
}

TEST_P(ZipInteropTest, PythonZipfileTestsEveryCrc) {
  ONNXZIP_REQUIRE_TOOL(python, kPython);
  const auto result = run_tool(python + " -m zipfile -t " + quoted_archive());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  // zipfile -t exits 0 even for a bad CRC; only this exact output means every entry passed.
  EXPECT_EQ(result.output, "Done testing\n");
}

TEST_P(ZipInteropTest, PythonZipfileReadsBackEveryByte) {
  ONNXZIP_REQUIRE_TOOL(python, kPython);
  const std::string script =
      "import hashlib, sys, zipfile\n"
      "with zipfile.ZipFile(sys.argv[1]) as z:\n"
      "    for info in z.infolist():\n"
      "        print(info.filename, info.compress_type, "
      "hashlib.sha256(z.read(info)).hexdigest())\n";
  const auto result = run_tool(python + " -c " + shell_quote(script) + " " + quoted_archive());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::ostringstream expected;
  for (const Payload& p : entries_) expected << p.name << " 0 " << sha256_hex(p.bytes) << "\n";
  EXPECT_EQ(result.output, expected.str());
}

TEST_P(ZipInteropTest, SevenZipTestsEveryEntry) {
  ONNXZIP_REQUIRE_TOOL(seven_zip, "7z");
  const auto result = run_tool(seven_zip + " t " + quoted_archive());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("Everything is Ok"));
  EXPECT_THAT(result.output, HasSubstr("Files: " + std::to_string(entries_.size())));
  EXPECT_THAT(result.output, ::testing::Not(HasSubstr("Warning")));
}

TEST_P(ZipInteropTest, LibzipChecksConsistencyAndReadsEveryEntry) {
  ONNXZIP_REQUIRE_TOOL(ziptool, "ziptool");
  // -c: libzip's consistency check (local headers against the central directory).
  const auto stat = run_tool(ziptool + " -c " + quoted_archive() + " stat 0");
  EXPECT_EQ(stat.exit_code, 0) << stat.output;
  EXPECT_THAT(stat.output, HasSubstr("name: '" + entries_[0].name + "'"));
  EXPECT_THAT(stat.output, HasSubstr("size: '0'"));
  EXPECT_THAT(stat.output, HasSubstr("compression method: '0'"));
  // cat verifies each entry's CRC while reading it.
  std::string command = ziptool + " -c " + quoted_archive();
  for (std::size_t i = 0; i < entries_.size(); ++i) command += " cat " + std::to_string(i);
  const auto cat = run_tool(command + " >/dev/null");
  EXPECT_EQ(cat.exit_code, 0) << cat.output;
  EXPECT_EQ(cat.output, "");
}

TEST_P(ZipInteropTest, ZipalignConfirmsTheAlignment) {
  ONNXZIP_REQUIRE_TOOL(zipalign, "zipalign");
  const std::string alignment = std::to_string(GetParam());
  const auto result = run_tool(zipalign + " -c -v " + alignment + " " + quoted_archive());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("Verification successful"));
  for (const Payload& p : entries_) EXPECT_THAT(result.output, HasSubstr(p.name + " (OK)"));
}

INSTANTIATE_TEST_SUITE_P(Alignments, ZipInteropTest, ::testing::Values(64u, 4096u, 65536u),
                         [](const auto& param_info) {
                           return "A" + std::to_string(param_info.param);
                         });

// Alignment 65536 with a header that forces the 64-byte gap between entries: readers must
// accept the unused bytes.
TEST(ZipInteropGap, ToolsAcceptTheGapBeforeALocalHeader) {
  const ScratchDir dir("zip_interop_gap");
  const auto archive = dir / "gap.onnxz";
  // The second header ("abc", 33 bytes) ends 3 bytes short of a 65536 boundary.
  const std::vector<Payload> entries = {{"a", pattern(65536 - 33 - 3, 1)}, {"abc", pattern(10, 2)}};
  const auto written = write_archive(archive, entries, 65536);
  ASSERT_EQ(written[1].local_header_offset, 65536 + entries[0].bytes.size() + 64) << "no gap";
  const std::string quoted = shell_quote(archive.string());
  if (find_tool("unzip")) {
    const auto r = run_tool("unzip -t " + quoted);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("No errors detected"));
  }
  if (find_tool(kPython)) {
    const auto r = run_tool(std::string(kPython) + " -m zipfile -t " + quoted);
    EXPECT_EQ(r.output, "Done testing\n");
  }
  if (find_tool("7z")) {
    const auto r = run_tool("7z t " + quoted);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("Everything is Ok"));
  }
  if (find_tool("ziptool")) {
    const auto r = run_tool("ziptool -c " + quoted + " cat 0 cat 1 >/dev/null");
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  if (find_tool("zipalign")) {
    const auto r = run_tool("zipalign -c -v 65536 " + quoted);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("196608 abc (OK)"));  // After the 64-byte gap.
  }
}

TEST(Sha256Support, MatchesFipsVectors) {
  const std::string abc = "abc";
  EXPECT_EQ(sha256_hex(ByteSpan(reinterpret_cast<const std::uint8_t*>(abc.data()), abc.size())),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex({}), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(sha256_hex(ByteSpan(reinterpret_cast<const std::uint8_t*>(two_blocks.data()),
                                two_blocks.size())),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

}  // namespace
}  // namespace onnxzip
