// The seed corpus of fuzz/archive_load_fuzzer.cpp (fuzz/corpus/archive_load/): small archives
// written by save(), each under 16 KB, with tensors in every place the visitor knows, alignments
// 64, 128 and 4096, shared (deduplicated) entries, external sparse tensors, typed fields, an
// archive without payload entries, and one archive rewritten with deflate by Python's zipfile (an
// archive another tool wrote).
//
// save() is reproducible, so this test rebuilds every seed and requires the committed file to be
// byte-identical: the fuzzer always starts from what the writer writes today. To rewrite the
// seeds after a deliberate format or writer change, run the test with ONNXZIP_UPDATE_FUZZ_SEEDS=1.
// Inputs the fuzzer found (crash-*, named for their defect) live in the same folder and are
// replayed by CTest (archive_load_fuzzer_replay); this test leaves them alone.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "crc32.h"
#include "interrupted_edit.h"
#include "onnxzip/archive.h"
#include "onnxzip/error.h"
#include "onnxzip/tensor.h"
#include "support/external_tool.h"
#include "support/model_builder.h"
#include "support/scratch_dir.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::make_node;
using test_support::raw_tensor;
using test_support::read_file_bytes;
using test_support::ScratchDir;
using test_support::tensor_attribute;

const fs::path kCorpus = fs::path(ONNXZIP_TEST_DATA_DIR).parent_path().parent_path() / "fuzz" /
                         "corpus" / "archive_load";
constexpr std::size_t kMaxSeedBytes = 16 * 1024;

// Tensors everywhere, each a few bytes: initializers of several types (sub-byte, empty, scalar,
// STRING), a Constant, a tensor list, a sparse initializer, an If whose branch holds a Loop whose
// body has an initializer, a function with a Constant and an attribute default, training graphs.
ModelProto tiny_model() {
  ModelProto model;
  model.ir_version = 10;
  model.producer_name = "onnxzip seeds";
  OperatorSetIdProto& opset = model.opset_import.emplace_back();
  opset.domain = "";
  opset.version = 21;
  GraphProto& graph = model.graph.ensure();
  graph.name = "tiny";
  graph.initializer.push_back(raw_tensor("/enc/q.weight", TensorProto::kFloat, {2, 3}, 1));
  graph.initializer.push_back(raw_tensor("W", TensorProto::kInt8, {7}, 2));
  graph.initializer.push_back(raw_tensor("w", TensorProto::kUint4, {5}, 3));
  graph.initializer.push_back(raw_tensor("empty", TensorProto::kFloat, {0}, 4));
  graph.initializer.push_back(raw_tensor("scalar", TensorProto::kDouble, {}, 5));
  TensorProto strings;
  strings.name = "labels";
  strings.data_type = TensorProto::kString;
  strings.dims = {2};
  strings.string_data = {"a", "b"};
  graph.initializer.push_back(std::move(strings));
  SparseTensorProto sparse;
  sparse.values = raw_tensor("sp_values", TensorProto::kFloat, {3}, 6);
  sparse.indices = raw_tensor("sp_indices", TensorProto::kInt64, {3}, 7);
  sparse.dims = {100};
  graph.sparse_initializer.push_back(std::move(sparse));
  graph.node.push_back(make_node(
      "Constant", {}, {"c"},
      {tensor_attribute("value", raw_tensor("const_value", TensorProto::kFloat, {4}, 8))}));
  AttributeProto list;
  list.name = "tables";
  list.type = AttributeProto::kTensors;
  list.tensors = {raw_tensor("list0", TensorProto::kInt64, {2}, 9)};
  graph.node.push_back(make_node("Custom", {"c"}, {"d"}, {list}));
  GraphProto body;
  body.name = "body";
  body.initializer.push_back(raw_tensor("deep", TensorProto::kFloat, {3}, 10));
  GraphProto then_branch;
  then_branch.name = "then";
  then_branch.node.push_back(
      make_node("Loop", {"", ""}, {"l"}, {test_support::graph_attribute("body", std::move(body))}));
  GraphProto else_branch;
  else_branch.name = "else";
  else_branch.initializer.push_back(raw_tensor("else_init", TensorProto::kFloat16, {2}, 11));
  graph.node.push_back(
      make_node("If", {"cond"}, {"e"},
                {test_support::graph_attribute("then_branch", std::move(then_branch)),
                 test_support::graph_attribute("else_branch", std::move(else_branch))}));
  FunctionProto& function = model.functions.emplace_back();
  function.name = "F";
  function.domain = "custom";
  function.attribute_proto.push_back(
      tensor_attribute("alpha", raw_tensor("fn_default", TensorProto::kInt32, {2}, 12)));
  function.node.push_back(
      make_node("Constant", {}, {"y"},
                {tensor_attribute("value", raw_tensor("fn_const", TensorProto::kFloat, {2}, 13))}));
  TrainingInfoProto& training = model.training_info.emplace_back();
  training.initialization.ensure().initializer.push_back(
      raw_tensor("train_init", TensorProto::kFloat, {2}, 14));
  return model;
}

// A model an exporter writes with the default threshold: one initializer of 1200 bytes becomes an
// entry, the rest stays inline; a typed-field tensor too.
ModelProto threshold_model() {
  ModelProto model;
  model.ir_version = 8;
  GraphProto& graph = model.graph.ensure();
  graph.name = "threshold";
  graph.initializer.push_back(raw_tensor("big", TensorProto::kFloat, {300}, 20));
  graph.initializer.push_back(raw_tensor("small", TensorProto::kFloat, {10}, 21));
  graph.initializer.push_back(test_support::float_data_tensor("typed", {260}, 22));
  graph.node.push_back(make_node("Add", {"big", "typed"}, {"y"}));
  return model;
}

// Three tied weights (identical bytes) and one other: with dedupe, one entry for the three.
ModelProto tied_model() {
  ModelProto model;
  model.ir_version = 8;
  GraphProto& graph = model.graph.ensure();
  graph.name = "tied";
  for (const char* name : {"embed", "lm_head", "tied_again"}) {
    graph.initializer.push_back(raw_tensor(name, TensorProto::kFloat16, {40}, 30));
  }
  graph.initializer.push_back(raw_tensor("other", TensorProto::kFloat16, {40}, 31));
  return model;
}

// Two tensors at alignment 4096.
ModelProto two_tensor_model() {
  ModelProto model;
  model.ir_version = 8;
  GraphProto& graph = model.graph.ensure();
  graph.name = "paged";
  graph.initializer.push_back(raw_tensor("a", TensorProto::kBfloat16, {8}, 40));
  graph.initializer.push_back(raw_tensor("b", TensorProto::kInt2, {9}, 41));
  return model;
}

struct Seed {
  std::string name;
  ModelProto model;
  SaveOptions options;
};

std::vector<Seed> seeds() {
  return {
      {"tiny_t0_a64", tiny_model(), SaveOptions{.threshold = 0}},
      {"tiny_t0_a128", tiny_model(), SaveOptions{.alignment = 128, .threshold = 0}},
      {"tiny_sparse_external", tiny_model(),
       SaveOptions{.threshold = 0, .externalize_sparse = true}},
      {"threshold_default", threshold_model(), SaveOptions{}},
      {"tied_dedupe", tied_model(), SaveOptions{.threshold = 0, .dedupe = true}},
      {"tied_no_dedupe", tied_model(), SaveOptions{.threshold = 0}},
      {"paged_a4096", two_tensor_model(), SaveOptions{.alignment = 4096, .threshold = 0}},
      {"no_entries", tiny_model(), SaveOptions{.threshold = 1 << 20}},
  };
}

// Payloads as raw_data everywhere, as load returns them.
ModelProto normalized(ModelProto model) {
  for_each_tensor(model, [](TensorProto& tensor, const TensorSite&) {
    if (element_bits(tensor.data_type.value_or(0)) != 0) move_typed_data_to_raw(tensor);
  });
  return model;
}

bool updating() {
  const char* value = std::getenv("ONNXZIP_UPDATE_FUZZ_SEEDS");
  return value != nullptr && std::string(value) == "1";
}

TEST(ArchiveFuzzSeeds, AreWhatSaveWritesTodayAndLoad) {
  ScratchDir dir("archive_seeds");
  if (updating()) fs::create_directories(kCorpus);
  for (const Seed& seed : seeds()) {
    SCOPED_TRACE(seed.name);
    const fs::path written = dir / (seed.name + ".onnxz");
    save(seed.model, written, seed.options);
    const fs::path committed = kCorpus / (seed.name + ".onnxz");
    if (updating()) fs::copy_file(written, committed, fs::copy_options::overwrite_existing);
    ASSERT_TRUE(fs::exists(committed)) << "run with ONNXZIP_UPDATE_FUZZ_SEEDS=1 to write it";
    EXPECT_EQ(read_file_bytes(committed), read_file_bytes(written))
        << "save() writes other bytes now: rerun with ONNXZIP_UPDATE_FUZZ_SEEDS=1 if intended";
    EXPECT_LT(fs::file_size(committed), kMaxSeedBytes);
    EXPECT_TRUE(verify(committed).ok());
    EXPECT_EQ(load(committed), normalized(seed.model));
  }
}

// Writes `model` saved with `options`, rewritten by Python's zipfile with every entry deflated
// (as another tool would), to `committed`.
void write_deflated_by_python(const ModelProto& model, const SaveOptions& options,
                              const fs::path& committed) {
  ScratchDir dir("archive_seeds_deflated");
  const fs::path source = dir / "source.onnxz";
  save(model, source, options);
  const std::string script =
      "import sys, zipfile\n"
      "src, dst = sys.argv[1], sys.argv[2]\n"
      "with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, 'w') as zout:\n"
      "    for info in zin.infolist():\n"
      "        out = zipfile.ZipInfo(info.filename, (1980, 1, 1, 0, 0, 0))\n"
      "        out.compress_type = zipfile.ZIP_DEFLATED\n"
      "        out.external_attr = 0o100644 << 16\n"
      "        zout.writestr(out, zin.read(info), compresslevel=9)\n";
  test_support::write_file_bytes(dir / "deflate.py", script);
  const auto result = test_support::run_tool(
      "/usr/bin/python3 " + test_support::shell_quote((dir / "deflate.py").string()) + " " +
      test_support::shell_quote(source.string()) + " " +
      test_support::shell_quote(committed.string()) + " 2>&1");
  ASSERT_EQ(result.exit_code, 0) << result.output;
}

// What an interrupted edit leaves (spec §9.6), as seeds of the record's reading: threshold_default
// followed by the start of a new tail that is not whole and the record (the old archive reads),
// and by a gap and the record of a tail written whole (here all of the archive, after an empty
// old one: it reads). Made from the committed archive, as an edit makes it from the file.
TEST(ArchiveFuzzSeeds, InterruptedEditsOfASavedArchive) {
  using Bytes = std::vector<std::uint8_t>;
  const Bytes archive = read_file_bytes(kCorpus / "threshold_default.onnxz");
  const auto with_record = [&](Bytes bytes, std::uint64_t old_end, std::uint64_t new_start,
                               std::uint64_t new_end, std::uint32_t crc) {
    archive_detail::InterruptedEditRecord record;
    record.old_end = old_end;
    record.new_start = new_start;
    record.new_end = new_end;
    record.new_crc32 = crc;
    record.record_offset = bytes.size();
    bytes.resize(bytes.size() + archive_detail::InterruptedEditRecord::kSize);
    record.encode(MutableByteSpan(bytes).last(archive_detail::InterruptedEditRecord::kSize));
    return bytes;
  };
  Bytes unfinished = archive;
  unfinished.insert(unfinished.end(), 40, 0);
  unfinished.insert(unfinished.end(), archive.begin(), archive.begin() + 45);  // A local header.
  Bytes whole = archive;
  whole.insert(whole.end(), 24, 0);
  const struct {
    const char* name;
    Bytes bytes;
  } seeds[] = {
      {"interrupted_edit_old",
       with_record(unfinished, archive.size(), archive.size() + 40, unfinished.size(), 0)},
      {"interrupted_edit_new", with_record(whole, 0, 0, archive.size(), crc32(archive))},
  };
  for (const auto& seed : seeds) {
    SCOPED_TRACE(seed.name);
    const fs::path committed = kCorpus / (std::string(seed.name) + ".onnxz");
    if (updating()) {
      test_support::write_file_bytes(committed, std::string(seed.bytes.begin(), seed.bytes.end()));
    }
    ASSERT_TRUE(fs::exists(committed)) << "run with ONNXZIP_UPDATE_FUZZ_SEEDS=1 to write it";
    EXPECT_EQ(read_file_bytes(committed), seed.bytes);
    EXPECT_EQ(load_bytes(seed.bytes, kNoOwner), load_bytes(archive, kNoOwner));
    const VerifyReport report = verify_bytes(seed.bytes);
    EXPECT_TRUE(report.loadable());
    ASSERT_FALSE(report.findings.empty());
    EXPECT_NE(report.findings[0].message.find("interrupted_edit: an interrupted edit left"),
              std::string::npos);
  }
}

// An archive of another tool: tiny_t0_a64 rewritten by Python's zipfile with every entry
// deflated. It loads (payloads inflated, not zero-copy) and verify reports each deflated entry.
TEST(ArchiveFuzzSeeds, DeflatedArchiveOfAnotherToolLoads) {
  const fs::path committed = kCorpus / "deflated_python.onnxz";
  if (updating()) write_deflated_by_python(tiny_model(), SaveOptions{.threshold = 0}, committed);
  ASSERT_TRUE(fs::exists(committed)) << "run with ONNXZIP_UPDATE_FUZZ_SEEDS=1 to write it";
  EXPECT_LT(fs::file_size(committed), kMaxSeedBytes);
  EXPECT_EQ(load(committed), normalized(tiny_model()));
  const Archive archive = Archive::open(committed);
  ASSERT_FALSE(archive.tensors().empty());
  std::size_t external = 0;
  for (const Archive::TensorInfo& info : archive.tensors()) {
    EXPECT_FALSE(info.zero_copy);
    external += !info.is_inline;
  }
  const VerifyReport report = verify(committed);
  EXPECT_TRUE(report.loadable());
  std::size_t deflated = 0;
  for (const VerifyFinding& f : report.findings) {
    deflated += f.message.find("deflate") != std::string::npos;
  }
  EXPECT_GE(deflated, external);
}

// Zip bombs as another tool writes them: a tensor of zeros deflated by Python's zipfile, about
// 1000:1. bomb_python (2 MiB) is refused by the default compression ratio limit and loads once
// the limit is lifted; high_ratio_python (512 KiB, under the grace size) loads as it is.
TEST(ArchiveFuzzSeeds, ZipBombsOfAnotherTool) {
  struct Bomb {
    const char* name;
    std::int64_t size;
    bool refused;
  };
  for (const Bomb& bomb :
       {Bomb{"bomb_python", 2 << 20, true}, Bomb{"high_ratio_python", 512 << 10, false}}) {
    SCOPED_TRACE(bomb.name);
    ModelProto model;
    model.ir_version = 8;
    TensorProto& zeros = model.graph.ensure().initializer.emplace_back();
    zeros.name = "zeros";
    zeros.data_type = TensorProto::kUint8;
    zeros.dims = {bomb.size};
    zeros.raw_data = TensorBytes::copy_of(std::vector<std::uint8_t>(bomb.size, 0));
    const fs::path committed = kCorpus / (std::string(bomb.name) + ".onnxz");
    if (updating()) write_deflated_by_python(model, SaveOptions{}, committed);
    ASSERT_TRUE(fs::exists(committed)) << "run with ONNXZIP_UPDATE_FUZZ_SEEDS=1 to write it";
    EXPECT_LT(fs::file_size(committed), kMaxSeedBytes);
    if (bomb.refused) {
      try {
        (void)load(committed);
        ADD_FAILURE() << "loaded";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kLimitExceeded);
        EXPECT_NE(std::string(e.what()).find("entry 'zeros'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("above the limit of 100:1"), std::string::npos)
            << e.what();
      }
    }
    LoadOptions trusting;
    trusting.limits.max_compression_ratio =
        bomb.refused ? 0 : trusting.limits.max_compression_ratio;
    EXPECT_EQ(load(committed, trusting), model);
  }
}

}  // namespace
}  // namespace onnxzip
