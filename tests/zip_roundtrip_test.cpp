// What ZipWriter writes, ZipReader reads back: every entry by name, in order, zero-copy at an
// aligned offset, byte-identical, with a matching CRC and nothing to report -- the writer's
// output is the conforming profile the reader measures others against. And the reader's
// defences hold on the writer's own output: a flipped payload byte fails verify() of exactly
// that entry, a truncated archive is refused. Writer-made archives also seed the reader's fuzz
// corpus (fuzz/corpus/zip_reader/writer_*.zip); a test here keeps them equal to what the writer
// writes today, and rewrites them when ONNXZIP_UPDATE_FUZZ_SEEDS=1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "crc32.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/zip_reader.h"
#include "support/scratch_dir.h"
#include "zip_writer.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::read_file_bytes;
using test_support::ScratchDir;
using Bytes = std::vector<std::uint8_t>;

struct Payload {
  std::string name;
  Bytes bytes;
};

// Different bytes per seed, so entries swapped or shifted by the writer cannot go unnoticed.
Bytes payload_bytes(std::size_t size, unsigned seed) {
  Bytes bytes(size);
  for (std::size_t i = 0; i < size; ++i) {
    bytes[i] = static_cast<std::uint8_t>(i * 167 + seed * 71 + (i >> 11));
  }
  return bytes;
}

// A lead entry of 3 bytes so the sized entry needs real padding, a tail after it so its data is
// followed by another local header, and `__MODEL_PROTO` last, as in every .onnxz.
std::vector<Payload> archive_with(std::size_t size) {
  return {{"lead", payload_bytes(3, 1)},
          {"w", payload_bytes(size, 2)},
          {"tail", payload_bytes(5, 3)},
          {"__MODEL_PROTO", payload_bytes(17, 4)}};
}

void write_from_spans(const fs::path& path, const std::vector<Payload>& payloads,
                      std::uint32_t alignment) {
  ZipWriterOptions options;
  options.alignment = alignment;
  ZipWriter writer(path, options);
  for (const Payload& p : payloads) writer.add(p.name, p.bytes);
  writer.finish();
}

// Uneven pieces, an empty one among them, through a buffer small enough that both the buffered
// and the direct path of the output file are taken.
void write_from_producer(const fs::path& path, const std::vector<Payload>& payloads,
                         std::uint32_t alignment) {
  ZipWriterOptions options;
  options.alignment = alignment;
  options.buffer_size = 4096;
  ZipWriter writer(path, options);
  for (const Payload& p : payloads) {
    const ByteSpan bytes = p.bytes;
    writer.add(p.name, bytes.size(), [bytes](EntrySink& sink) {
      static constexpr std::size_t kPieces[] = {1, 0, 7, 1000, 4096, 65537};
      std::size_t at = 0;
      for (std::size_t i = 0; at < bytes.size(); ++i) {
        const std::size_t piece = std::min(kPieces[i % std::size(kPieces)], bytes.size() - at);
        sink.write(bytes.subspan(at, piece));
        at += piece;
      }
    });
  }
  writer.finish();
}

std::string describe(const std::vector<ZipFinding>& findings) {
  std::string text;
  for (const ZipFinding& f : findings) {
    text += std::string(to_string(f.kind)) + " '" + f.entry + "': " + f.message + "\n";
  }
  return text;
}

// The whole promise for one archive written from `payloads` with `alignment`.
void expect_reads_back(const fs::path& path, const std::vector<Payload>& payloads,
                       std::uint32_t alignment) {
  const ZipReader reader = ZipReader::open(path);
  EXPECT_TRUE(reader.findings().empty()) << describe(reader.findings());
  EXPECT_FALSE(reader.has_zip64_end_record());
  ASSERT_EQ(reader.entries().size(), payloads.size());
  const ByteSpan file = reader.bytes();
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    const Payload& p = payloads[i];
    SCOPED_TRACE("entry '" + p.name + "'");
    const ZipEntry& e = reader.entries()[i];
    EXPECT_EQ(e.name, p.name) << "file order is the order of add()";
    EXPECT_EQ(e.central_index, i) << "central directory order is the order of add()";
    ASSERT_EQ(reader.find(p.name), &e);
    EXPECT_TRUE(e.is_stored());
    EXPECT_FALSE(e.zip64);
    EXPECT_FALSE(e.has_data_descriptor);
    EXPECT_EQ(e.size, p.bytes.size());
    EXPECT_EQ(e.compressed_size, p.bytes.size());
    EXPECT_EQ(e.crc32, crc32(p.bytes));
    EXPECT_EQ(e.local->data_offset % alignment, 0u) << e.local->data_offset;
    EXPECT_GE(e.local->alignment(), alignment);

    const ByteSpan data = reader.stored_data(e);
    // But the last entry's, which the reader copied at open (an in-place edit rewrites it).
    if (i + 1 < payloads.size()) {
      ASSERT_EQ(data.data(), file.data() + e.local->data_offset) << "borrowed from the mapping";
    }
    ASSERT_LE(e.local->data_offset + e.size, file.size());
    EXPECT_TRUE(std::equal(data.begin(), data.end(), p.bytes.begin(), p.bytes.end()));
    EXPECT_NO_THROW(reader.verify(e));
  }
}

struct RoundTripCase {
  std::size_t size;
  std::uint32_t alignment;
};

std::ostream& operator<<(std::ostream& out, const RoundTripCase& c) {
  return out << c.size << " bytes, alignment " << c.alignment;
}

std::vector<RoundTripCase> round_trip_cases() {
  std::vector<RoundTripCase> cases;
  for (const std::uint32_t alignment : {64u, 4096u, 65536u}) {
    for (const std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64},
                                   std::size_t{65}, std::size_t{1} << 20}) {
      cases.push_back({size, alignment});
    }
  }
  return cases;
}

class ZipRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(ZipRoundTrip, SpansAndProducerArchivesReadBackIdentically) {
  const RoundTripCase c = GetParam();
  const ScratchDir dir("zip_roundtrip");
  const std::vector<Payload> payloads = archive_with(c.size);

  write_from_spans(dir / "spans.zip", payloads, c.alignment);
  {
    SCOPED_TRACE("written from spans");
    expect_reads_back(dir / "spans.zip", payloads, c.alignment);
  }
  write_from_producer(dir / "producer.zip", payloads, c.alignment);
  {
    SCOPED_TRACE("written by a producer");
    expect_reads_back(dir / "producer.zip", payloads, c.alignment);
  }
  EXPECT_EQ(read_file_bytes(dir / "spans.zip"), read_file_bytes(dir / "producer.zip"))
      << "the way the bytes arrive must not change the archive";
}

INSTANTIATE_TEST_SUITE_P(SizesTimesAlignments, ZipRoundTrip,
                         ::testing::ValuesIn(round_trip_cases()),
                         [](const ::testing::TestParamInfo<RoundTripCase>& param_info) {
                           return "size" + std::to_string(param_info.param.size) + "_align" +
                                  std::to_string(param_info.param.alignment);
                         });

// Runs f, which must throw Error(kCorrupt) whose message holds every fragment.
void expect_corrupt(const std::function<void()>& f, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no error; expected corrupt";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorrupt) << e.what();
    for (const std::string& fragment : fragments) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
          << "'" << fragment << "' not in: " << e.what();
    }
  }
}

void write_bytes(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

const std::vector<Payload>& damage_payloads() {
  static const std::vector<Payload> payloads = {{"first", payload_bytes(1, 11)},
                                                {"middle", payload_bytes(300, 12)},
                                                {"big", payload_bytes(70000, 13)},
                                                {"__MODEL_PROTO", payload_bytes(40, 14)}};
  return payloads;
}

TEST(ZipRoundTripDamage, FlippedPayloadByteFailsVerifyOfThatEntryOnly) {
  const ScratchDir dir("zip_roundtrip_flip");
  const std::vector<Payload>& payloads = damage_payloads();
  write_from_spans(dir / "good.zip", payloads, 64);
  const Bytes good = read_file_bytes(dir / "good.zip");
  const ZipReader original = ZipReader::open(dir / "good.zip");

  for (const ZipEntry& target : original.entries()) {
    SCOPED_TRACE("flipped in '" + target.name + "'");
    // The last byte, so a check that stops short of the end is caught too.
    const std::uint64_t flipped = target.local->data_offset + target.size - 1;
    Bytes bad = good;
    bad[flipped] ^= 0x20;
    const fs::path path = dir / ("flipped_" + target.name + ".zip");
    write_bytes(path, bad);

    // The structure is intact, so opening succeeds; only the CRC can tell.
    const ZipReader reader = ZipReader::open(path);
    EXPECT_TRUE(reader.findings().empty()) << describe(reader.findings());
    for (const ZipEntry& e : reader.entries()) {
      if (e.name == target.name) {
        EXPECT_EQ(reader.stored_data(e)[e.size - 1], bad[flipped]);
        expect_corrupt([&] { reader.verify(e); },
                       {path.string(), "entry '" + e.name + "'",
                        "offset " + std::to_string(e.local_header_offset), "CRC-32 mismatch"});
      } else {
        EXPECT_NO_THROW(reader.verify(e)) << e.name;
      }
    }
  }
}

TEST(ZipRoundTripDamage, EveryTruncationIsRefusedAsCorrupt) {
  const ScratchDir dir("zip_roundtrip_truncate");
  write_from_spans(dir / "good.zip", damage_payloads(), 64);
  const Bytes good = read_file_bytes(dir / "good.zip");
  ASSERT_GT(good.size(), 70000u);

  // 50 evenly spaced lengths from 0, and the two cuts nearest the end (inside the end record).
  std::vector<std::size_t> lengths;
  for (std::size_t k = 0; k < 50; ++k) lengths.push_back(good.size() * k / 50);
  lengths.push_back(good.size() - 2);
  lengths.push_back(good.size() - 1);

  const fs::path path = dir / "truncated.zip";
  for (const std::size_t length : lengths) {
    SCOPED_TRACE("truncated to " + std::to_string(length) + " of " + std::to_string(good.size()));
    // From a file, as users meet it...
    write_bytes(path, Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(length)));
    expect_corrupt([&] { (void)ZipReader::open(path); }, {path.string()});
    // ...and from a heap block of exactly that size, so AddressSanitizer sees any read past it.
    const Bytes prefix(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(length));
    expect_corrupt([&] { (void)ZipReader::from_bytes(prefix, kNoOwner, {}, "cut.zip"); },
                   {"cut.zip"});
  }
}

// Spec §4.4: with A = 65536 and a natural padding of 1..5 bytes the writer must leave a gap of 64
// zero bytes before the next local header. The reader accepts it (§4.5) but reports it as a gap
// -- the one finding a conforming archive can produce, named here so a change on either side
// shows up.
TEST(ZipRoundTripGap, TheGapOfSection44IsAcceptedAndIsTheOnlyFinding) {
  const ScratchDir dir("zip_roundtrip_gap");
  // "lead" data starts at 65536; 65502 bytes of it put the next header's end (30 + 1 for "w")
  // 3 bytes before 2 * 65536: too little for a padding record, too much for the extra field.
  const std::vector<Payload> payloads = {{"lead", payload_bytes(65502, 21)},
                                         {"w", payload_bytes(100, 22)}};
  ZipWriterOptions options;
  options.alignment = 65536;
  ZipWriter writer(dir / "gap.zip", options);
  for (const Payload& p : payloads) writer.add(p.name, p.bytes);
  writer.finish();
  ASSERT_EQ(writer.entries()[1].local_header_offset, 65536u + 65502u + 64u) << "the gap";

  const ZipReader reader = ZipReader::open(dir / "gap.zip");
  ASSERT_EQ(reader.findings().size(), 1u) << describe(reader.findings());
  const ZipFinding& gap = reader.findings()[0];
  EXPECT_EQ(gap.kind, ZipFindingKind::kGap);
  EXPECT_EQ(gap.entry, "lead");
  EXPECT_EQ(gap.offset, 65536u + 65502u);
  EXPECT_NE(gap.message.find("64 bytes"), std::string::npos) << gap.message;
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    const ZipEntry& e = reader.at(payloads[i].name);
    EXPECT_EQ(e.local->data_offset % 65536, 0u);
    const ByteSpan data = reader.stored_data(e);
    EXPECT_TRUE(
        std::equal(data.begin(), data.end(), payloads[i].bytes.begin(), payloads[i].bytes.end()));
    EXPECT_NO_THROW(reader.verify(e));
  }
}

// Tiny archives (< 10 KB) for the fuzzer to start from: what a conforming .onnxz looks like.
struct Seed {
  std::string file_name;
  std::uint32_t alignment;
  std::vector<Payload> payloads;
};

std::vector<Seed> writer_seeds() {
  std::vector<Payload> many;
  for (unsigned i = 0; i < 8; ++i) many.push_back({"t" + std::to_string(i), payload_bytes(i, i)});
  many.push_back({"__MODEL_PROTO", payload_bytes(24, 9)});
  return {
      {"writer_align64.zip",
       64,
       {{"conv1_weight", payload_bytes(100, 31)},
        {"conv1_bias", payload_bytes(10, 32)},
        {"__MODEL_PROTO", payload_bytes(40, 33)}}},
      {"writer_align128_many.zip", 128, many},
      {"writer_align4096.zip",
       4096,
       {{"w", payload_bytes(70, 41)}, {"__MODEL_PROTO", payload_bytes(30, 42)}}},
      {"writer_empty_entry.zip", 64, {{"empty", {}}, {"__MODEL_PROTO", payload_bytes(12, 51)}}},
  };
}

TEST(ZipRoundTripSeeds, FuzzCorpusHoldsWhatTheWriterWritesToday) {
  const fs::path corpus =
      fs::path(ONNXZIP_TEST_DATA_DIR) / ".." / ".." / "fuzz" / "corpus" / "zip_reader";
  const char* update = std::getenv("ONNXZIP_UPDATE_FUZZ_SEEDS");
  const bool rewrite = update != nullptr && std::string(update) == "1";
  const ScratchDir dir("zip_roundtrip_seeds");
  for (const Seed& seed : writer_seeds()) {
    SCOPED_TRACE(seed.file_name);
    const fs::path fresh = dir / seed.file_name;
    write_from_spans(fresh, seed.payloads, seed.alignment);
    expect_reads_back(fresh, seed.payloads, seed.alignment);
    const Bytes bytes = read_file_bytes(fresh);
    EXPECT_LT(bytes.size(), 10'000u) << "seeds stay small so the fuzzer runs fast";
    if (rewrite) write_bytes(corpus / seed.file_name, bytes);
    ASSERT_TRUE(fs::exists(corpus / seed.file_name)) << "run with ONNXZIP_UPDATE_FUZZ_SEEDS=1";
    EXPECT_EQ(read_file_bytes(corpus / seed.file_name), bytes)
        << "the writer's output changed; if on purpose, run with ONNXZIP_UPDATE_FUZZ_SEEDS=1";
  }
}

}  // namespace
}  // namespace onnxzip
