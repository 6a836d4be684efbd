// The options structs of the public API: plain aggregates, so that a caller names only the
// fields it changes (C++20 designated initializers) and every other field keeps its default.
// Every member has a default member initializer, `{}` at least: without one, g++ -Wextra warns
// (-Wmissing-field-initializers) at every designated initializer that leaves the member out,
// which these tests would show.
#include <gtest/gtest.h>

#include <type_traits>

#include "onnxzip/archive.h"
#include "onnxzip/convert.h"
#include "onnxzip/edit.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/legacy.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/tensor.h"
#include "output_file.h"
#include "zip_writer.h"

namespace onnxzip {
namespace {

static_assert(std::is_aggregate_v<SaveOptions>);
static_assert(std::is_aggregate_v<LoadOptions>);
static_assert(std::is_aggregate_v<VerifyOptions>);
static_assert(std::is_aggregate_v<ConvertOptions>);
static_assert(std::is_aggregate_v<EditOptions>);
static_assert(std::is_aggregate_v<LegacyReadOptions>);
static_assert(std::is_aggregate_v<LegacyWriteOptions>);
static_assert(std::is_aggregate_v<ParseOptions>);
static_assert(std::is_aggregate_v<SerializeOptions>);
static_assert(std::is_aggregate_v<TensorBufferOptions>);
static_assert(std::is_aggregate_v<OutputFileOptions>);
static_assert(std::is_aggregate_v<ZipReaderOptions>);
static_assert(std::is_aggregate_v<ZipWriterOptions>);

TEST(Options, ParseOptionsNamesTheFieldsItChangesAndKeepsTheOtherDefaults) {
  const ParseOptions options{.no_copy = true, .max_depth = 7};
  EXPECT_TRUE(options.no_copy);
  EXPECT_EQ(options.max_depth, 7u);
  EXPECT_EQ(options.raw_data_threshold, ParseOptions{}.raw_data_threshold);
  EXPECT_EQ(options.raw_data_threshold, 1024u);
  EXPECT_EQ(options.alignment, 0u);
  EXPECT_EQ(options.max_tensor_bytes, ParseOptions{}.max_tensor_bytes);
}

// One no_copy: a loaded model borrows unless parse.no_copy says otherwise, and naming another
// field of LoadOptions leaves it so.
TEST(Options, LoadOptionsBorrowsByDefaultThroughItsOneNoCopy) {
  EXPECT_TRUE(LoadOptions{}.parse.no_copy);
  EXPECT_TRUE(LoadOptions{.verify_crc = true}.parse.no_copy);
  const LoadOptions copying{.parse = {.no_copy = false}, .access = FileAccess::kRead};
  EXPECT_FALSE(copying.parse.no_copy);
  EXPECT_EQ(copying.parse.max_depth, ParseOptions{}.max_depth);
  EXPECT_EQ(copying.access, FileAccess::kRead);
  EXPECT_TRUE(copying.inflate_payloads);
}

TEST(Options, LegacyReadOptionsBorrowsTheModelFilesPayloadsByDefault) {
  EXPECT_TRUE(LegacyReadOptions{}.parse.no_copy);
  const LegacyReadOptions options{.allow_symlinks = true};
  EXPECT_TRUE(options.parse.no_copy);
  EXPECT_TRUE(options.load_external_data);
  EXPECT_FALSE(VerifyOptions{}.parse.no_copy);
}

TEST(Options, NestedOptionsAreNamedLikeTheirFields) {
  const ConvertOptions options{
      .archive = {.alignment = 4096, .threshold = 0},
      .legacy = {.mode = LegacyWriteOptions::Mode::kExternal, .alignment = 64},
      .load = {.limits = {.max_compression_ratio = 0}},
  };
  EXPECT_EQ(options.archive.alignment, 4096u);
  EXPECT_EQ(options.archive.threshold, 0u);
  EXPECT_FALSE(options.archive.dedupe);
  EXPECT_EQ(options.legacy.alignment, 64u);
  EXPECT_EQ(options.legacy.threshold, LegacyWriteOptions{}.threshold);
  EXPECT_EQ(options.load.limits.max_compression_ratio, 0u);
  EXPECT_EQ(options.load.limits.max_entries, ReadLimits{}.max_entries);
  EXPECT_TRUE(options.read.parse.no_copy);

  const EditOptions edit{.compact = true, .limits = {.spill_threshold = 1}};
  EXPECT_TRUE(edit.compact);
  EXPECT_TRUE(edit.output.durable);
  EXPECT_TRUE(edit.output.follow_symlinks);
  EXPECT_FALSE(SaveOptions{}.output.durable);
  EXPECT_FALSE(LegacyWriteOptions{}.output.follow_symlinks);
  EXPECT_EQ(edit.limits.spill_threshold, 1u);

  const SerializeOptions serialize{.max_buffered_structure_bytes = 0};
  EXPECT_EQ(serialize.substitutions, nullptr);
  EXPECT_EQ(serialize.max_buffered_structure_bytes, 0u);
  const TensorBufferOptions buffer{.alignment = 64};
  EXPECT_EQ(buffer.raw_data_threshold, 0u);
  const ZipWriterOptions zip{.alignment = 128, .output = {.durable = true}};
  EXPECT_EQ(zip.buffer_size, ZipWriterOptions{}.buffer_size);
  const OutputFileOptions output{.follow_symlinks = true};
  EXPECT_FALSE(output.durable);
}

}  // namespace
}  // namespace onnxzip
