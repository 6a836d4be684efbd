// Legacy model files, read and written, judged by the reference onnx package: the models come
// from tests/data/make_legacy_models.py (python3-onnx), and what write_legacy_model produces is
// loaded and checked by it again.
#include "onnxzip/legacy.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "onnxzip/error.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/tensor.h"
#include "output_file_testing.h"
#include "support/big_model.h"
#include "support/expect_contains.h"
#include "support/external_tool.h"
#include "support/legacy_models.h"
#include "support/model_builder.h"
#include "support/scratch_dir.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::Digests;
using test_support::digests_of;
using test_support::kLegacyCases;
using test_support::kPython;
using test_support::python_dump;
using test_support::PythonView;
using test_support::ScratchDir;

template <class Body>
std::string error_of(ErrorCode code, Body&& body) {
  try {
    body();
  } catch (const Error& e) {
    EXPECT_EQ(to_string(e.code()), to_string(code)) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return {};
}

// The models of make_legacy_models.py, generated once for the suite.
class LegacyModels : public ::testing::Test {
 protected:
  void SetUp() override {
    models_ = test_support::LegacyModelSet::get();
    if (models_ == nullptr) GTEST_SKIP() << "needs " << kPython << " with the onnx package";
  }

  fs::path model_path(const std::string& name) const { return models_->model(name); }
  Digests expected(const std::string& name) const { return models_->expected(name); }

  const test_support::LegacyModelSet* models_ = nullptr;
};

TEST_F(LegacyModels, ReadsEveryLegacyFormAsTheReferenceDoes) {
  for (const std::string name : kLegacyCases) {
    SCOPED_TRACE(name);
    const ModelProto model = read_legacy_model(model_path(name));
    EXPECT_EQ(digests_of(model), expected(name));
    const bool external = name.starts_with("external");
    std::set<const void*> owners;
    for_each_tensor(model, [&](const TensorProto& t, const TensorSite& site) {
      SCOPED_TRACE(std::string(site.path));
      EXPECT_FALSE(t.data_location.has_value());
      EXPECT_TRUE(t.external_data.empty());
      // External payloads borrow from their file's mapping: nothing copied.
      if (external && t.raw_data && !site.path.starts_with("functions") &&
          site.place != TensorPlace::kSparseInitializerValues &&
          site.place != TensorPlace::kSparseInitializerIndices) {
        EXPECT_TRUE(t.raw_data->is_borrowed());
        EXPECT_NE(t.raw_data->owner(), nullptr);
        owners.insert(t.raw_data->owner().get());
      }
    });
    // One mapping per data file, however many tensors it holds.
    if (name == "external_one_file" || name == "external_partial") {
      EXPECT_EQ(owners.size(), 1u);
    }
    if (name == "external_per_tensor") {
      EXPECT_EQ(owners.size(), 17u);
    }
  }
}

TEST_F(LegacyModels, WithoutLoadingExternalDataTheReferencesStay) {
  LegacyReadOptions options;
  options.load_external_data = false;
  const ModelProto model = read_legacy_model(model_path("external_one_file"), options);
  EXPECT_EQ(model.graph->initializer[1].data_location, TensorProto::kExternal);
  EXPECT_FALSE(model.graph->initializer[1].raw_data.has_value());
}

TEST_F(LegacyModels, WritesInlineModelsTheReferenceAccepts) {
  ScratchDir out("legacy_inline");
  std::vector<fs::path> written;
  for (const std::string name : {"inline_raw", "inline_typed", "external_one_file"}) {
    const ModelProto model = read_legacy_model(model_path(name));
    const fs::path path = out / (name + ".onnx");
    write_legacy_model(model, path);  // kAuto: small, so inline.
    written.push_back(path);
    // Typed fields stay typed inline; the model round-trips exactly.
    EXPECT_EQ(parse_model_file(path), model);
  }
  EXPECT_EQ(out.file_names(), (std::vector<std::string>{"external_one_file.onnx", "inline_raw.onnx",
                                                        "inline_typed.onnx"}));
  const auto views = python_dump(written);
  for (const fs::path& path : written) {
    SCOPED_TRACE(path.string());
    const PythonView& view = views.at(path.string());
    EXPECT_EQ(view.checker, "ok");
    EXPECT_EQ(view.digests, expected("inline_raw"));
  }
}

struct WrittenReference {
  std::string location;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::vector<std::string> keys;
};

// The external references of a written model, by tensor place, as written.
std::map<std::string, WrittenReference> references_in(const fs::path& path) {
  const ModelProto raw = parse_model_file(path);
  std::map<std::string, WrittenReference> out;
  for_each_tensor(raw, [&](const TensorProto& t, const TensorSite& site) {
    if (t.data_location != TensorProto::kExternal) return;
    WrittenReference ref;
    for (const StringStringEntryProto& e : t.external_data) {
      ref.keys.push_back(*e.key);
      if (*e.key == "location") ref.location = *e.value;
      if (*e.key == "offset") ref.offset = std::stoull(*e.value);
      if (*e.key == "length") ref.length = std::stoull(*e.value);
    }
    out[std::string(site.path)] = ref;
  });
  return out;
}

TEST_F(LegacyModels, WritesExternalDataSplitAndAligned) {
  ScratchDir out("legacy_external");
  LegacyWriteOptions options;
  options.mode = LegacyWriteOptions::Mode::kExternal;
  options.threshold = 0;
  options.alignment = 4096;
  options.max_file_size = 8192;
  std::vector<fs::path> written;
  for (const std::string name : {"inline_typed", "external_per_tensor"}) {
    SCOPED_TRACE(name);
    const ModelProto model = read_legacy_model(model_path(name));
    const ModelProto before = model;
    const fs::path folder = out / name;
    fs::create_directory(folder);
    write_legacy_model(model, folder / "model.onnx", options);
    EXPECT_EQ(model, before);  // The caller's model is untouched.
    written.push_back(folder / "model.onnx");

    const auto refs = references_in(folder / "model.onnx");
    std::map<std::string, std::uint64_t> file_end;
    std::map<std::string, int> tensors_in_file;
    for (const auto& [place, ref] : refs) {
      SCOPED_TRACE(place);
      // Only initializers of the main graph and its subgraphs: attribute tensors, sparse tensors
      // and function tensors stay inline by default.
      EXPECT_TRUE(place.starts_with("graph/"));
      EXPECT_NE(place.find("initializer["), std::string::npos);
      EXPECT_EQ(place.find("sparse"), std::string::npos);
      EXPECT_EQ(ref.keys, (std::vector<std::string>{"location", "offset", "length"}));
      EXPECT_EQ(ref.offset % 4096, 0u);
      EXPECT_TRUE(ref.location == "model.onnx.data" ||
                  ref.location.starts_with("model.onnx.data."));
      file_end[ref.location] = std::max(file_end[ref.location], ref.offset + ref.length);
      ++tensors_in_file[ref.location];
    }
    EXPECT_EQ(refs.size(), 15u);  // 13 initializers, the loop body's and the then branch's.
    for (const auto& [file, end] : file_end) {
      SCOPED_TRACE(file);
      // Each file ends with its last payload, within the limit unless one tensor larger than it
      // has the file to itself.
      EXPECT_EQ(fs::file_size(folder / file), end);
      EXPECT_TRUE(end <= 8192 || tensors_in_file[file] == 1);
    }
    EXPECT_GE(file_end.size(), 7u);
    EXPECT_EQ(file_end.count("model.onnx.data.1"), 1u);
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& item : fs::directory_iterator(folder)) ++files;
    EXPECT_EQ(files, 1 + file_end.size());  // No temporaries left behind.

    // Our reader gives the same tensors back, and the model equals the original for raw input.
    const ModelProto back = read_legacy_model(folder / "model.onnx");
    EXPECT_EQ(digests_of(back), expected(name));
    if (name == "external_per_tensor") {
      EXPECT_EQ(back, model);
    }
  }
  const auto views = python_dump(written);
  for (const fs::path& path : written) {
    SCOPED_TRACE(path.string());
    EXPECT_EQ(views.at(path.string()).checker, "ok");
    EXPECT_EQ(views.at(path.string()).digests, expected("inline_raw"));
  }
}

TEST_F(LegacyModels, ExternalizesAttributesAndSparseTensorsOnlyWhenAsked) {
  ScratchDir out("legacy_attributes");
  const ModelProto model = read_legacy_model(model_path("inline_raw"));
  LegacyWriteOptions options;
  options.mode = LegacyWriteOptions::Mode::kExternal;
  options.threshold = 0;
  options.externalize_attributes = true;
  write_legacy_model(model, out / "attributes.onnx", options);
  auto refs = references_in(out / "attributes.onnx");
  EXPECT_EQ(refs.count("graph/node[1]/value"), 1u);
  // The else branch's Constant, in the Loop's body.
  EXPECT_EQ(refs.count("graph/node[3]/body/node[0]/else_branch/node[0]/value"), 1u);
  EXPECT_EQ(refs.count("graph/sparse_initializer[0]/values"), 0u);
  EXPECT_EQ(refs.count("functions[0]/node[0]/value"), 0u);
  const auto view = python_dump({out / "attributes.onnx"}).at((out / "attributes.onnx").string());
  EXPECT_EQ(view.checker, "ok");
  EXPECT_EQ(view.digests, expected("inline_raw"));

  // Sparse tensors: the reference cannot load them external, our reader can.
  options.externalize_sparse = true;
  write_legacy_model(model, out / "sparse.onnx", options);
  refs = references_in(out / "sparse.onnx");
  EXPECT_EQ(refs.count("graph/sparse_initializer[0]/values"), 1u);
  EXPECT_EQ(refs.count("graph/sparse_initializer[0]/indices"), 1u);
  EXPECT_EQ(read_legacy_model(out / "sparse.onnx"), model);
}

TEST_F(LegacyModels, DetectsTheFormat) {
  EXPECT_EQ(detect_format(model_path("inline_raw")), ModelFormat::kLegacy);
  ScratchDir dir("legacy_detect");
  test_support::write_file_bytes(dir / "a.onnxz", std::string("PK\x03\x04rest", 8));
  test_support::write_file_bytes(dir / "empty.zip", std::string("PK\x05\x06", 4));
  test_support::write_file_bytes(dir / "empty.onnx", "");
  EXPECT_EQ(detect_format(dir / "a.onnxz"), ModelFormat::kOnnxz);
  EXPECT_EQ(detect_format(dir / "empty.zip"), ModelFormat::kOnnxz);
  EXPECT_EQ(detect_format(dir / "empty.onnx"), ModelFormat::kLegacy);
  EXPECT_CONTAINS(error_of(ErrorCode::kNotFound, [&] { detect_format(dir / "nope"); }), "nope");
  EXPECT_CONTAINS(error_of(ErrorCode::kInvalidArgument, [&] { detect_format(dir.path()); }),
                  "is a folder");
}

TEST_F(LegacyModels, ConvertsInPlaceOverTheFilesItReadsFrom) {
  // The data file is replaced while its old content is still mapped and being copied: the
  // rename leaves the mapping on the old file, so the bytes survive.
  ScratchDir dir("legacy_in_place");
  for (const auto& item : fs::directory_iterator(model_path("external_one_file").parent_path())) {
    fs::copy_file(item.path(), dir / item.path().filename().string());
  }
  LegacyWriteOptions options;
  options.mode = LegacyWriteOptions::Mode::kExternal;
  options.data_file_name = "weights.bin";
  options.threshold = 0;
  {
    const ModelProto model = read_legacy_model(dir / "model.onnx");
    write_legacy_model(model, dir / "model.onnx", options);
  }
  EXPECT_EQ(digests_of(read_legacy_model(dir / "model.onnx")), expected("external_one_file"));
  EXPECT_EQ(dir.file_names(),
            (std::vector<std::string>{"expected.tsv", "model.onnx", "weights.bin"}));
}

// --- Hand-built references, hostile and otherwise ---

// A model whose one initializer, FLOAT[4] 'w', refers to external data with `entries`.
void write_model_referring(const fs::path& path,
                           const std::vector<std::pair<std::string, std::string>>& entries,
                           std::int64_t elements = 4) {
  ModelProto m;
  m.ir_version = 8;
  TensorProto w;
  w.name = "w";
  w.data_type = TensorProto::kFloat;
  w.dims = {elements};
  for (const auto& [key, value] : entries) {
    StringStringEntryProto& e = w.external_data.emplace_back();
    e.key = key;
    e.value = value;
  }
  w.data_location = TensorProto::kExternal;
  m.graph.ensure().initializer.push_back(w);
  serialize_model_to_file(m, path);
}

std::string pattern(std::size_t size) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i * 7 + 1);
  return bytes;
}

TEST(LegacyRead, AcceptsWhatTheReferenceAccepts) {
  ScratchDir dir("legacy_ok");
  fs::create_directory(dir / "sub");
  test_support::write_file_bytes(dir / "sub" / "w.bin", pattern(16));
  test_support::write_file_bytes(dir / "big.bin", pattern(40));
  struct Case {
    std::vector<std::pair<std::string, std::string>> entries;
    std::size_t first_byte;  // Offset of the payload in the pattern.
  };
  const Case cases[] = {
      {{{"location", "sub/w.bin"}}, 0},
      {{{"location", "./sub//w.bin"}}, 0},
      {{{"location", "sub/w.bin"}, {"offset", "0"}, {"length", "16"}}, 0},
      {{{"location", "big.bin"}, {"offset", "24"}}, 24},
      {{{"location", "big.bin"}, {"offset", "8"}, {"length", "16"}}, 8},
      // checksum, basepath and unknown keys are ignored, as by the reference.
      {{{"location", "big.bin"},
        {"offset", "4"},
        {"length", "16"},
        {"checksum", "x"},
        {"basepath", "/elsewhere"},
        {"other", "y"}},
       4},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.entries[0].second + " case " + std::to_string(&c - cases));
    write_model_referring(dir / "model.onnx", c.entries);
    const ModelProto m = read_legacy_model(dir / "model.onnx");
    const TensorProto& w = m.graph->initializer[0];
    ASSERT_TRUE(w.raw_data);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(w.raw_data->data()), w.raw_data->size()),
              pattern(40).substr(c.first_byte, 16));
    EXPECT_FALSE(w.data_location.has_value());
  }
}

TEST(LegacyRead, MapsEachFileOnceWhateverItsSpelling) {
  ScratchDir dir("legacy_once");
  test_support::write_file_bytes(dir / "w.bin", pattern(32));
  ModelProto m;
  GraphProto& g = m.graph.ensure();
  for (const char* location : {"w.bin", "./w.bin"}) {
    for (const char* offset : {"0", "16"}) {
      TensorProto& t = g.initializer.emplace_back();
      t.name = std::string(location) + "@" + offset;
      t.data_type = TensorProto::kFloat;
      t.dims = {4};
      t.external_data.resize(2);
      t.external_data[0].key = "location";
      t.external_data[0].value = location;
      t.external_data[1].key = "offset";
      t.external_data[1].value = offset;
      t.external_data.push_back(t.external_data[1]);
      t.external_data[2].key = "length";
      t.external_data[2].value = "16";
      t.data_location = TensorProto::kExternal;
    }
  }
  serialize_model_to_file(m, dir / "model.onnx");
  const ModelProto read = read_legacy_model(dir / "model.onnx");
  for (const TensorProto& t : read.graph->initializer) {
    EXPECT_EQ(t.raw_data->owner(), read.graph->initializer[0].raw_data->owner()) << *t.name;
  }
  EXPECT_EQ(read.graph->initializer[1].raw_data->data(),
            read.graph->initializer[0].raw_data->data() + 16);
}

// FileAccess::kRead: model and data files read into memory, so they may shrink afterwards (mapped,
// touching the payloads then would raise SIGBUS); the same model either way.
TEST(LegacyRead, ReadAccessOwnsTheBytesOfModelAndDataFiles) {
  ScratchDir dir("legacy_read_access");
  test_support::write_file_bytes(dir / "w.bin", pattern(4096));
  ModelProto m;
  for (int i = 0; i < 2; ++i) {
    TensorProto& t = m.graph.ensure().initializer.emplace_back();
    t.name = "w" + std::to_string(i);
    t.data_type = TensorProto::kUint8;
    t.dims = {2048};
    for (const auto& [key, value] : {std::pair<const char*, std::string>{"location", "w.bin"},
                                     {"offset", std::to_string(i * 2048)},
                                     {"length", "2048"}}) {
      StringStringEntryProto& entry = t.external_data.emplace_back();
      entry.key = key;
      entry.value = value;
    }
    t.data_location = TensorProto::kExternal;
  }
  serialize_model_to_file(m, dir / "model.onnx");
  const ModelProto mapped = read_legacy_model(dir / "model.onnx");
  ModelProto expected = mapped;
  for_each_tensor(expected, [](TensorProto& t, const TensorSite&) {
    t.raw_data = TensorBytes::owned(OwnedBytes::copy_of(t.raw_data->view()));
  });
  LegacyReadOptions options;
  options.access = FileAccess::kRead;
  const ModelProto read = read_legacy_model(dir / "model.onnx", options);
  std::filesystem::resize_file(dir / "w.bin", 0);
  std::filesystem::resize_file(dir / "model.onnx", 0);
  EXPECT_EQ(read, expected);
  EXPECT_EQ(read.graph->initializer[1].raw_data->data(),
            read.graph->initializer[0].raw_data->data() + 2048);
}

TEST(LegacyRead, RefusesHostileReferences) {
  ScratchDir dir("legacy_hostile");
  ScratchDir outside("legacy_outside");
  test_support::write_file_bytes(outside / "secret.bin", pattern(16));
  test_support::write_file_bytes(dir / "w.bin", pattern(16));
  test_support::write_file_bytes(dir / "odd.bin", pattern(20));
  fs::create_directory(dir / "sub");
  fs::create_directory(dir / "real");
  test_support::write_file_bytes(dir / "real" / "w.bin", pattern(16));
  fs::create_symlink("w.bin", dir / "link.bin");
  fs::create_directory_symlink("real", dir / "dirlink");
  fs::create_symlink(outside / "secret.bin", dir / "escape.bin");
  test_support::write_file_bytes(dir / "linked.bin", pattern(16));
  fs::create_hard_link(dir / "linked.bin", dir / "linked_twin.bin");

  using Entries = std::vector<std::pair<std::string, std::string>>;
  struct Case {
    Entries entries;
    ErrorCode code;
    std::string fragment;
  };
  const std::string nul_location("w.bin\0.txt", 10);
  const Case cases[] = {
      {{{"location", "../x.bin"}}, ErrorCode::kCorrupt, "'..' component"},
      {{{"location", "/etc/passwd"}}, ErrorCode::kCorrupt, "absolute path"},
      {{{"location", "sub/../../x"}}, ErrorCode::kCorrupt, "'..' component"},
      {{{"location", "sub/../w.bin"}}, ErrorCode::kCorrupt, "'..' component"},
      {{{"location", "link.bin"}}, ErrorCode::kCorrupt, "the file is a symbolic link"},
      {{{"location", "dirlink/w.bin"}},
       ErrorCode::kCorrupt,
       "the folder 'dirlink' is a symbolic link"},
      {{{"location", "escape.bin"}}, ErrorCode::kCorrupt, "the file is a symbolic link"},
      {{{"location", "linked.bin"}}, ErrorCode::kCorrupt, "the file has 2 hard links"},
      {{{"location", nul_location}}, ErrorCode::kCorrupt, "NUL byte"},
      {{{"location", ""}}, ErrorCode::kCorrupt, "the location is empty"},
      {{{"location", "."}}, ErrorCode::kCorrupt, "names no file"},
      {{{"location", "sub"}}, ErrorCode::kCorrupt, "not a regular file"},
      {{{"location", "w.bin/x"}}, ErrorCode::kCorrupt, "the folder 'w.bin' is not a folder"},
      {{{"location", "missing.bin"}}, ErrorCode::kNotFound, "the file does not exist"},
      {{{"location", "nodir/w.bin"}}, ErrorCode::kNotFound, "the folder 'nodir' does not exist"},
      {{{"location", "w.bin"}, {"offset", "17"}},
       ErrorCode::kCorrupt,
       "offset 17 is past the end of the file (16 bytes)"},
      {{{"location", "w.bin"}, {"offset", "8"}, {"length", "16"}},
       ErrorCode::kCorrupt,
       "offset 8 + length 16 is past the end of the file (16 bytes)"},
      {{{"location", "w.bin"}, {"length", "18446744073709551615"}},
       ErrorCode::kCorrupt,
       "is past the end of the file"},
      {{{"location", "w.bin"}, {"length", "8"}},
       ErrorCode::kCorrupt,
       "length 8 differs from dims x element size (16 bytes)"},
      {{{"location", "odd.bin"}},
       ErrorCode::kCorrupt,
       "the rest of the file from offset 0 (20 bytes) differs from dims x element size"},
      {{{"location", "w.bin"}, {"offset", "-1"}},
       ErrorCode::kCorrupt,
       "'offset' '-1' is not a non-negative decimal number"},
      {{{"location", "w.bin"}, {"length", "1e3"}},
       ErrorCode::kCorrupt,
       "'length' '1e3' is not a non-negative decimal number"},
      {{{"location", "w.bin"}, {"offset", "18446744073709551616"}},
       ErrorCode::kCorrupt,
       "is not a non-negative decimal number"},
      {{{"offset", "0"}}, ErrorCode::kCorrupt, "has no 'location'"},
      {{{"location", "w.bin"}, {"location", "odd.bin"}},
       ErrorCode::kCorrupt,
       "external_data has 2 'location' keys"},
  };
  for (const Case& c : cases) {
    const std::string location =
        c.entries[0].first == "location" ? c.entries[0].second : std::string();
    SCOPED_TRACE("case " + std::to_string(&c - cases) + ": " + location);
    write_model_referring(dir / "model.onnx", c.entries);
    const std::string message = error_of(c.code, [&] { read_legacy_model(dir / "model.onnx"); });
    EXPECT_CONTAINS(message, c.fragment);
    EXPECT_CONTAINS(message,
                    (dir / "model.onnx").string() + ": tensor 'w' at graph/initializer[0]");
    if (c.entries[0].first == "location" && location.find('\0') == std::string::npos &&
        c.fragment.find("twice") == std::string::npos) {
      EXPECT_CONTAINS(message, "location '" + location + "'");
    }
  }
  const std::string nul_message = error_of(ErrorCode::kCorrupt, [&] {
    write_model_referring(dir / "model.onnx", {{"location", nul_location}});
    read_legacy_model(dir / "model.onnx");
  });
  EXPECT_CONTAINS(nul_message, "location 'w.bin\\x00.txt'");
}

TEST(LegacyRead, OptionsAcceptLinksThatStayInside) {
  ScratchDir dir("legacy_links");
  ScratchDir outside("legacy_links_outside");
  fs::create_directory(dir / "real");
  test_support::write_file_bytes(dir / "real" / "w.bin", pattern(16));
  test_support::write_file_bytes(outside / "secret.bin", pattern(16));
  fs::create_directory_symlink("real", dir / "dirlink");
  fs::create_symlink(outside / "secret.bin", dir / "escape.bin");
  fs::create_hard_link(dir / "real" / "w.bin", dir / "twin.bin");
  LegacyReadOptions options;
  options.allow_symlinks = true;
  write_model_referring(dir / "model.onnx", {{"location", "dirlink/w.bin"}});
  EXPECT_CONTAINS(
      error_of(ErrorCode::kCorrupt, [&] { read_legacy_model(dir / "model.onnx", options); }),
      "hard links");
  options.allow_hard_links = true;
  EXPECT_EQ(read_legacy_model(dir / "model.onnx", options).graph->initializer[0].raw_data->size(),
            16u);
  write_model_referring(dir / "model.onnx", {{"location", "escape.bin"}});
  EXPECT_CONTAINS(
      error_of(ErrorCode::kCorrupt, [&] { read_legacy_model(dir / "model.onnx", options); }),
      "outside the model's folder");
}

TEST(LegacyRead, RefusesExternalTensorsThatAlsoHoldData) {
  ScratchDir dir("legacy_both");
  test_support::write_file_bytes(dir / "w.bin", pattern(16));
  ModelProto m;
  TensorProto& w = m.graph.ensure().initializer.emplace_back();
  w.name = "w";
  w.data_type = TensorProto::kFloat;
  w.dims = {4};
  w.float_data = {1, 2, 3, 4};
  w.external_data.resize(1);
  w.external_data[0].key = "location";
  w.external_data[0].value = "w.bin";
  w.data_location = TensorProto::kExternal;
  serialize_model_to_file(m, dir / "model.onnx");
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { read_legacy_model(dir / "model.onnx"); }),
                  "also holds its data inline");
}

// --- Writing: refusals and atomicity ---

ModelProto model_with_initializers(std::size_t count, std::size_t bytes) {
  ModelProto m;
  m.ir_version = 8;
  GraphProto& g = m.graph.ensure();
  for (std::size_t i = 0; i < count; ++i) {
    TensorProto& t = g.initializer.emplace_back();
    t.name = "t" + std::to_string(i);
    t.data_type = TensorProto::kUint8;
    t.dims = {static_cast<std::int64_t>(bytes)};
    const std::string data = pattern(bytes);
    t.raw_data = TensorBytes::copy_of(
        ByteSpan(reinterpret_cast<const std::uint8_t*>(data.data()), data.size()));
  }
  return m;
}

TEST(LegacyWrite, FailureLeavesNothingNew) {
  ScratchDir dir("legacy_atomic");
  const ModelProto model = model_with_initializers(3, 5000);
  LegacyWriteOptions options;
  options.mode = LegacyWriteOptions::Mode::kExternal;
  // The data file's name is taken by a folder: refused, nothing remains.
  fs::create_directory(dir / "model.onnx.data");
  error_of(ErrorCode::kInvalidArgument,
           [&] { write_legacy_model(model, dir / "model.onnx", options); });
  EXPECT_EQ(dir.file_names(), std::vector<std::string>{"model.onnx.data"});

  // Split: the first data file is written, the second cannot be: nothing remains.
  fs::remove(dir / "model.onnx.data");
  fs::create_directory(dir / "model.onnx.data.1");
  options.max_file_size = 6000;
  error_of(ErrorCode::kInvalidArgument,
           [&] { write_legacy_model(model, dir / "model.onnx", options); });
  EXPECT_EQ(dir.file_names(), std::vector<std::string>{"model.onnx.data.1"});

  // The model's own name taken by a folder: the data files are dropped again.
  fs::remove(dir / "model.onnx.data.1");
  fs::create_directory(dir / "model.onnx");
  error_of(ErrorCode::kInvalidArgument,
           [&] { write_legacy_model(model, dir / "model.onnx", options); });
  EXPECT_EQ(dir.file_names(), std::vector<std::string>{"model.onnx"});

  fs::remove(dir / "model.onnx");
  write_legacy_model(model, dir / "model.onnx", options);
  EXPECT_EQ(dir.file_names(), (std::vector<std::string>{"model.onnx", "model.onnx.data",
                                                        "model.onnx.data.1", "model.onnx.data.2"}));
  EXPECT_EQ(read_legacy_model(dir / "model.onnx"), model);
}

// The first byte of every payload of `model` ("old" and "new" models differ in every payload).
std::vector<std::uint8_t> first_bytes(const ModelProto& model) {
  std::vector<std::uint8_t> bytes;
  for (const TensorProto& t : model.graph->initializer) bytes.push_back(t.raw_data->view()[0]);
  return bytes;
}

ModelProto with_first_byte(ModelProto model, std::uint8_t value) {
  for (TensorProto& t : model.graph->initializer) {
    OwnedBytes bytes = OwnedBytes::copy_of(t.raw_data->view());
    bytes.data()[0] = value;
    t.raw_data = TensorBytes::owned(std::move(bytes));
  }
  return model;
}

// "old", "new", "none" (no model file), or what is wrong with the pair found.
std::string legacy_set_state(const fs::path& model_path) {
  if (!fs::exists(model_path)) return "none";
  try {
    const std::vector<std::uint8_t> bytes = first_bytes(read_legacy_model(model_path));
    if (std::all_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b == 'O'; })) {
      return "old";
    }
    if (std::all_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b == 'N'; })) {
      return "new";
    }
    return "a model with another write's data";
  } catch (const Error& e) {
    return std::string("unreadable: ") + e.what();
  }
}

TEST(LegacyWrite, ModelAndDataFilesAppearAsOneSetAfterAFailureOrACrashAtEachRename) {
  ScratchDir dir("legacy_set");
  const fs::path model_path = dir / "model.onnx";
  const ModelProto base = model_with_initializers(3, 5000);
  const ModelProto old_model = with_first_byte(base, 'O');
  const ModelProto new_model = with_first_byte(base, 'N');
  LegacyWriteOptions options;
  options.mode = LegacyWriteOptions::Mode::kExternal;
  options.max_file_size = 6000;  // Three data files.
  for (int step = 0;; ++step) {
    SCOPED_TRACE("rename " + std::to_string(step));
    write_legacy_model(old_model, model_path, options);
    ASSERT_EQ(legacy_set_state(model_path), "old");
    // A crash just before rename `step`: the folder as the hook sees it.
    int renames = 0;
    std::string at_crash;
    detail::set_rename_hook([&](const fs::path&, const fs::path&) {
      if (renames++ == step) at_crash = legacy_set_state(model_path);
      return true;
    });
    write_legacy_model(new_model, model_path, options);
    detail::set_rename_hook(nullptr);
    EXPECT_EQ(legacy_set_state(model_path), "new");
    if (at_crash.empty()) {
      EXPECT_EQ(step, 8) << "the old model aside, 2 renames per data file, the new model";
      break;
    }
    EXPECT_TRUE(at_crash == "old" || at_crash == "new" || at_crash == "none") << at_crash;

    // The same rename failing instead: the old set comes back whole.
    write_legacy_model(old_model, model_path, options);
    renames = 0;
    detail::set_rename_hook([&](const fs::path&, const fs::path&) { return renames++ != step; });
    EXPECT_CONTAINS(
        error_of(ErrorCode::kIo, [&] { write_legacy_model(new_model, model_path, options); }),
        "model.onnx");
    detail::set_rename_hook(nullptr);
    EXPECT_EQ(legacy_set_state(model_path), "old");
    EXPECT_EQ(dir.file_names(),
              (std::vector<std::string>{"model.onnx", "model.onnx.data", "model.onnx.data.1",
                                        "model.onnx.data.2"}));
  }
}

TEST(LegacyWrite, WritesTheModelAndItsPayloadsAndNothingElse) {
  ScratchDir dir("legacy_nothing_added");
  ModelProto model = model_with_initializers(2, 5000);
  StringStringEntryProto& prop = model.metadata_props.emplace_back();
  prop.key = "license";
  prop.value = "MIT";
  LegacyWriteOptions options;
  options.mode = LegacyWriteOptions::Mode::kExternal;
  write_legacy_model(model, dir / "model.onnx", options);

  // The model as written holds the caller's properties, no more: an earlier build added a
  // metadata_props entry pairing the model with its data files.
  LegacyReadOptions references_only;
  references_only.load_external_data = false;
  const ModelProto as_written = read_legacy_model(dir / "model.onnx", references_only);
  EXPECT_EQ(as_written.metadata_props, model.metadata_props);
  // The data file ends with the last payload (it ended with a 64-byte line of that build).
  std::uint64_t end = 0;
  for (const TensorProto& t : as_written.graph->initializer) {
    ASSERT_EQ(t.external_data.size(), 3u);
    end = std::max<std::uint64_t>(
        end, std::stoull(*t.external_data[1].value) + std::stoull(*t.external_data[2].value));
  }
  EXPECT_EQ(fs::file_size(dir / "model.onnx.data"), end);
  EXPECT_EQ(read_legacy_model(dir / "model.onnx"), model);
}

TEST(LegacyWrite, SaysWhatStaysInlineAndWhy) {
  ScratchDir dir("legacy_kept_inline");
  const ModelProto model = test_support::model_with_tensors_everywhere();
  LegacyWriteOptions options;
  options.mode = LegacyWriteOptions::Mode::kExternal;
  options.threshold = 0;
  const LegacyWriteResult result = write_legacy_model(model, dir / "m.onnx", options);
  EXPECT_EQ(result.data_files, std::vector<std::string>{"m.onnx.data"});
  std::map<KeptInline::Reason, std::size_t> reasons;
  for (const KeptInline& kept : result.kept_inline) {
    ++reasons[kept.reason];
    EXPECT_GT(kept.size, 0u) << kept.tensor;
  }
  EXPECT_GT(reasons[KeptInline::Reason::kAttribute], 0u);
  EXPECT_GT(reasons[KeptInline::Reason::kSparse], 0u);
  EXPECT_GT(reasons[KeptInline::Reason::kOutside], 0u);
  EXPECT_GT(reasons[KeptInline::Reason::kString], 0u);
  EXPECT_EQ(reasons[KeptInline::Reason::kSmall], 0u);  // Threshold 0.
  // Asked to, attributes and sparse tensors move out; functions and STRING never do.
  options.externalize_attributes = true;
  options.externalize_sparse = true;
  reasons.clear();
  for (const KeptInline& kept : write_legacy_model(model, dir / "m.onnx", options).kept_inline) {
    ++reasons[kept.reason];
  }
  EXPECT_EQ(reasons[KeptInline::Reason::kAttribute], 0u);
  EXPECT_EQ(reasons[KeptInline::Reason::kSparse], 0u);
  EXPECT_GT(reasons[KeptInline::Reason::kOutside], 0u);
}

TEST(LegacyWrite, DataFilesAnEarlierWriteLeftGoWithTheOldSet) {
  ScratchDir dir("legacy_stale_data");
  const ModelProto model = model_with_initializers(3, 5000);
  LegacyWriteOptions split;
  split.mode = LegacyWriteOptions::Mode::kExternal;
  split.max_file_size = 6000;
  const LegacyWriteResult three = write_legacy_model(model, dir / "m.onnx", split);
  EXPECT_EQ(three.data_files,
            (std::vector<std::string>{"m.onnx.data", "m.onnx.data.1", "m.onnx.data.2"}));
  test_support::write_file_bytes(dir / "m.onnx.data.4", "not of this set: .3 is missing");

  // One data file now: .1 and .2 go; .4 is past the first gap and stays.
  LegacyWriteOptions one;
  one.mode = LegacyWriteOptions::Mode::kExternal;
  const LegacyWriteResult written = write_legacy_model(model, dir / "m.onnx", one);
  EXPECT_EQ(written.removed_data_files,
            (std::vector<std::string>{"m.onnx.data.1", "m.onnx.data.2"}));
  EXPECT_FALSE(fs::exists(dir / "m.onnx.data.1"));
  EXPECT_FALSE(fs::exists(dir / "m.onnx.data.2"));
  EXPECT_TRUE(fs::exists(dir / "m.onnx.data.4"));
  EXPECT_EQ(read_legacy_model(dir / "m.onnx"), model);

  // Inline: the data file goes too.
  const LegacyWriteResult inline_write = write_legacy_model(model, dir / "m.onnx");
  EXPECT_EQ(inline_write.removed_data_files, std::vector<std::string>{"m.onnx.data"});
  EXPECT_FALSE(fs::exists(dir / "m.onnx.data"));
  EXPECT_EQ(read_legacy_model(dir / "m.onnx"), model);
}

TEST(LegacyWrite, RefusesBadOptionsAndUnresolvedReferences) {
  ScratchDir dir("legacy_refuse");
  const ModelProto model = model_with_initializers(1, 2000);
  LegacyWriteOptions options;
  options.alignment = 3;
  EXPECT_CONTAINS(error_of(ErrorCode::kInvalidArgument,
                           [&] { write_legacy_model(model, dir / "m.onnx", options); }),
                  "alignment 3 is not a power of two");
  options = {};
  options.data_file_name = "sub/w.bin";
  EXPECT_CONTAINS(error_of(ErrorCode::kInvalidArgument,
                           [&] { write_legacy_model(model, dir / "m.onnx", options); }),
                  "data file name 'sub/w.bin' is not a plain file name");
  options.data_file_name = "m.onnx";
  options.mode = LegacyWriteOptions::Mode::kExternal;
  EXPECT_CONTAINS(error_of(ErrorCode::kInvalidArgument,
                           [&] { write_legacy_model(model, dir / "m.onnx", options); }),
                  "is the model's own name");

  ModelProto unresolved = model;
  unresolved.graph->initializer[0].data_location = TensorProto::kExternal;
  EXPECT_CONTAINS(error_of(ErrorCode::kInvalidArgument,
                           [&] { write_legacy_model(unresolved, dir / "m.onnx"); }),
                  "tensor 't0' at graph/initializer[0] refers to external data");
  EXPECT_TRUE(dir.file_names().empty());
}

// Address space for a tensor of `size` bytes that is sized but never read (PROT_NONE).
class Reservation final {
 public:
  explicit Reservation(std::size_t size) : size_(size) {
    address_ = ::mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  }
  ~Reservation() {
    if (address_ != MAP_FAILED) ::munmap(address_, size_);
  }
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  bool ok() const { return address_ != MAP_FAILED; }
  ByteSpan span() const { return {static_cast<const std::uint8_t*>(address_), size_}; }

 private:
  std::size_t size_;
  void* address_;
};

TEST(LegacyWrite, ProtobufLimitDecidesInlineOrExternal) {
  ScratchDir dir("legacy_limit");
  const Reservation huge(std::size_t{3} << 30);
  ASSERT_TRUE(huge.ok());
  ModelProto model;
  model.ir_version = 8;
  NodeProto& constant = model.graph.ensure().node.emplace_back();
  constant.op_type = "Constant";
  AttributeProto& value = constant.attribute.emplace_back();
  value.name = "value";
  TensorProto& t = value.t.ensure();
  t.name = "huge";
  t.data_type = TensorProto::kUint8;
  t.dims = {static_cast<std::int64_t>(huge.span().size())};
  t.raw_data = TensorBytes::borrowed(huge.span(), kNoOwner);

  LegacyWriteOptions options;
  options.mode = LegacyWriteOptions::Mode::kInline;
  EXPECT_CONTAINS(error_of(ErrorCode::kLimitExceeded,
                           [&] { write_legacy_model(model, dir / "m.onnx", options); }),
                  "more than protobuf's limit of 2147483647; write it with external data");
  // kAuto goes external, but an attribute tensor stays inline unless asked.
  options.mode = LegacyWriteOptions::Mode::kAuto;
  EXPECT_CONTAINS(error_of(ErrorCode::kLimitExceeded,
                           [&] { write_legacy_model(model, dir / "m.onnx", options); }),
                  "still serializes to");
  EXPECT_TRUE(dir.file_names().empty());
}

// Every model of the ONNX test data, written with all its initializers external and read back:
// the same model, except that typed fields became raw_data.
TEST(LegacyRoundTrip, EveryModelOfTheOnnxTestData) {
  const fs::path root = "/usr/share/libonnx-testdata";
  if (!fs::exists(root)) GTEST_SKIP() << "libonnx-testdata is not installed";
  ScratchDir dir("legacy_testdata");
  LegacyWriteOptions options;
  options.mode = LegacyWriteOptions::Mode::kExternal;
  options.threshold = 0;
  options.alignment = 64;
  std::size_t models = 0;
  std::size_t externalized = 0;
  for (const auto& item : fs::recursive_directory_iterator(root)) {
    if (item.path().extension() != ".onnx") continue;
    SCOPED_TRACE(item.path().string());
    ++models;
    ModelProto model = read_legacy_model(item.path());
    write_legacy_model(model, dir / "model.onnx", options);
    const ModelProto back = read_legacy_model(dir / "model.onnx");
    for_each_tensor(model, [&](TensorProto& t, const TensorSite& site) {
      const TypedField field = typed_field_for(t.data_type.value_or(0));
      if (site.place != TensorPlace::kInitializer || !site.path.starts_with("graph/") ||
          (!t.raw_data && (field == TypedField::kNone || field == TypedField::kStringData))) {
        return;
      }
      ++externalized;
      move_typed_data_to_raw(t);
      // An explicit DEFAULT location reads back as absent: the same meaning.
      if (t.data_location == TensorProto::kDefault) t.data_location.reset();
    });
    ASSERT_EQ(back, model);
    for (const auto& file : fs::directory_iterator(dir.path())) fs::remove(file.path());
  }
  EXPECT_GT(models, 1000u);
  EXPECT_GT(externalized, 90u);  // 98 initializers in the test data of onnx 1.12.
}

// --- Over 4 GiB ---

TEST(LegacySlow, ExternalDataOver4GiB) {
  ScratchDir source("legacy_big_source");
  ScratchDir target("legacy_big_target");
  constexpr std::uint64_t kBig = (std::uint64_t{1} << 32) + 12345;  // Bytes of tensor 'big'.
  // The data file, written in pieces: big at 0, small (1 KiB) past 4 GiB.
  const std::vector<test_support::BigTensor> layout =
      test_support::write_big_external_model(source.path(), {{"big", kBig}, {"small", 1024, 4096}});
  const std::uint64_t kSmallOffset = layout[1].offset;
  ASSERT_EQ(kSmallOffset, (kBig + 4095) / 4096 * 4096 + 4096);
  const auto big_byte = [&](std::uint64_t i) { return test_support::big_byte(layout[0].seed, i); };
  std::vector<std::uint8_t> small(1024);
  test_support::fill_big_bytes(layout[1].seed, 0, small);

  const auto check_big = [&](ByteSpan big) {
    ASSERT_EQ(big.size(), kBig);
    for (const std::uint64_t i : {std::uint64_t{0}, std::uint64_t{1} << 31,
                                  (std::uint64_t{1} << 32) - 1, std::uint64_t{1} << 32, kBig - 1}) {
      EXPECT_EQ(big[i], big_byte(i)) << i;
    }
  };
  {
    const ModelProto model = read_legacy_model(source / "model.onnx");
    const TensorProto& big = model.graph->initializer[0];
    EXPECT_TRUE(big.raw_data->is_borrowed());
    check_big(big.raw_data->view());
    EXPECT_EQ(model.graph->initializer[1].raw_data->view()[5], small[5]);

    write_legacy_model(model, target / "model.onnx");  // kAuto: over 2 GiB, so external.
  }
  EXPECT_EQ(target.file_names(), (std::vector<std::string>{"model.onnx", "model.onnx.data"}));
  const auto refs = references_in(target / "model.onnx");
  EXPECT_EQ(refs.at("graph/initializer[0]").offset, 0u);
  EXPECT_EQ(refs.at("graph/initializer[0]").length, kBig);
  const std::uint64_t small_at = (kBig + 4095) / 4096 * 4096;
  EXPECT_EQ(refs.at("graph/initializer[1]").offset, small_at);
  EXPECT_EQ(fs::file_size(target / "model.onnx.data"), small_at + small.size());
  {
    const auto data = MappedFile::open(target / "model.onnx.data");
    check_big(data->bytes().first(kBig));
    EXPECT_TRUE(equal_bytes(data->bytes().subspan(small_at, small.size()), small));
    const ModelProto back = read_legacy_model(target / "model.onnx");
    check_big(back.graph->initializer[0].raw_data->view());
  }
}

}  // namespace
}  // namespace onnxzip
