// replace_model() (src/archive/edit.cpp) and the in-place tail rewrite under it
// (src/archive/tail_edit.cpp): the promise that only the model changes, the writers' reference
// rule, and crash safety -- after a failure or a crash at every step, and in the middle of every
// write, the archive reads with the old model or the new one.
#include "onnxzip/edit.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "crc32.h"
#include "interrupted_edit.h"
#include "locked_archive.h"
#include "onnxzip/archive.h"
#include "onnxzip/convert.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/byte_source.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/signing.h"
#include "support/byte_sources.h"
#include "support/expect_contains.h"
#include "support/model_builder.h"
#include "support/scratch_dir.h"
#include "tail_edit.h"
#include "zip_writer.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
using test_support::raw_tensor;
using test_support::read_file_bytes;
using test_support::ScratchDir;
using test_support::wire_field;

// A model of a few initializers (one of 4 MiB, so that writes take a while), saved to `path`.
ModelProto sample_model() {
  ModelProto model;
  model.ir_version = 8;
  model.producer_name = "old";
  GraphProto& graph = model.graph.emplace();
  graph.name = "g";
  graph.initializer.push_back(raw_tensor("w0", TensorProto::kFloat, {16, 16}, 1));
  graph.initializer.push_back(raw_tensor("w1", TensorProto::kFloat, {1024, 1024}, 2));
  graph.initializer.push_back(raw_tensor("w2", TensorProto::kInt8, {3000}, 3));
  graph.initializer.push_back(raw_tensor("small", TensorProto::kFloat, {4}, 4));
  return model;
}

// The archive's model as it stands: external tensors left as references, owned.
ModelProto archive_model(const fs::path& path) {
  return parse_model(Archive::open(path).model_bytes(), ParseOptions{}, path.string());
}

std::string producer_of(const fs::path& path) {
  return std::string(load(path).producer_name.value_or(""));
}

std::uint64_t model_offset(const fs::path& path) {
  return ZipReader::open(path).at(kModelEntryName).local_header_offset;
}

// Every payload as load() returns it, by tensor name.
std::vector<std::pair<std::string, Bytes>> payloads(const fs::path& path) {
  std::vector<std::pair<std::string, Bytes>> out;
  const ModelProto model = load(path);
  for (const TensorProto& t : model.graph->initializer) {
    const ByteSpan bytes = t.raw_data ? t.raw_data->view() : ByteSpan{};
    out.emplace_back(std::string(t.name.value_or("")), Bytes(bytes.begin(), bytes.end()));
  }
  return out;
}

class ArchiveEdit : public ::testing::Test {
 protected:
  void TearDown() override {
    archive_detail::set_tail_step_hook(nullptr);
    archive_detail::set_archive_opened_hook(nullptr);
  }
};

TEST_F(ArchiveEdit, OnlyTheModelChangesAtEveryAlignment) {
  for (const std::uint32_t alignment : {64u, 4096u, 65536u}) {
    SCOPED_TRACE(alignment);
    ScratchDir dir("edit_align");
    const fs::path path = dir / "m.onnxz";
    save(sample_model(), path, {.alignment = alignment});
    const Bytes before = read_file_bytes(path);
    const std::uint64_t old_offset = model_offset(path);
    const auto old_payloads = payloads(path);

    ModelProto model = archive_model(path);
    model.producer_name = "new";
    StringStringEntryProto& entry = model.metadata_props.emplace_back();
    entry.key = "license";
    entry.value = "MIT";
    const EditResult result = replace_model(path, model);

    const Bytes after = read_file_bytes(path);
    EXPECT_FALSE(result.compacted);
    EXPECT_EQ(result.file_size, after.size());
    EXPECT_EQ(result.model_offset, old_offset);
    EXPECT_EQ(model_offset(path), old_offset);
    // No byte before the model entry moved or changed.
    ASSERT_GE(after.size(), old_offset);
    EXPECT_TRUE(std::equal(before.begin(), before.begin() + static_cast<std::ptrdiff_t>(old_offset),
                           after.begin()));
    EXPECT_EQ(producer_of(path), "new");
    EXPECT_EQ(load(path).metadata_props.at(0).value.value_or(""), "MIT");
    EXPECT_EQ(payloads(path), old_payloads);
    const VerifyReport report = verify(path);
    EXPECT_TRUE(report.ok()) << (report.findings.empty() ? "" : report.findings[0].message);
    // The archive is what save() writes for the edited model.
    const ModelProto loaded = load(path);
    save(loaded, dir / "saved.onnxz", {.alignment = alignment});
    EXPECT_EQ(read_file_bytes(dir / "saved.onnxz"), after);
  }
}

// edit_model reads the archive's own model and replaces it under one open: the same archive as
// reading the model and calling replace_model, and nothing changed when the change throws.
TEST_F(ArchiveEdit, EditModelChangesTheArchivesOwnModelOrNothing) {
  ScratchDir dir("edit_model");
  const fs::path path = dir / "m.onnxz";
  const fs::path twin = dir / "twin.onnxz";
  save(sample_model(), path);
  save(sample_model(), twin);
  const std::uint64_t old_offset = model_offset(path);
  const auto old_payloads = payloads(path);
  const auto change = [](ModelProto& model) {
    model.producer_name = "edited";
    StringStringEntryProto& entry = model.metadata_props.emplace_back();
    entry.key = "license";
    entry.value = "MIT";
  };

  const EditResult result = edit_model(path, change);
  ModelProto by_hand = archive_model(twin);
  change(by_hand);
  replace_model(twin, by_hand);
  EXPECT_EQ(result.model_offset, old_offset);
  EXPECT_EQ(read_file_bytes(path), read_file_bytes(twin));
  EXPECT_EQ(producer_of(path), "edited");
  EXPECT_EQ(payloads(path), old_payloads);

  const Bytes before = read_file_bytes(path);
  EXPECT_THROW(edit_model(path,
                          [](ModelProto& model) {
                            model.producer_name = "never";
                            throw Error(ErrorCode::kInvalidArgument, "refused by the caller");
                          }),
               Error);
  // A change that breaks a reference is refused like replace_model's, before any write.
  EXPECT_THROW(edit_model(path,
                          [](ModelProto& model) {
                            model.graph->initializer.erase(model.graph->initializer.begin());
                          }),
               Error);
  EXPECT_EQ(read_file_bytes(path), before);
}

TEST_F(ArchiveEdit, ModelsThatGrowAndShrink) {
  ScratchDir dir("edit_grow");
  const fs::path path = dir / "m.onnxz";
  save(sample_model(), path);
  const Bytes original = read_file_bytes(path);
  const std::uint64_t old_offset = model_offset(path);
  for (const std::size_t doc_size :
       {std::size_t{300'000}, std::size_t{10}, std::size_t{5'000'000}, std::size_t{0}}) {
    SCOPED_TRACE(doc_size);
    ModelProto model = archive_model(path);
    if (doc_size == 0) {
      model.doc_string.reset();
    } else {
      model.doc_string = std::string(doc_size, 'd');
    }
    replace_model(path, model, {.output = {.durable = false, .follow_symlinks = true}});
    EXPECT_EQ(load(path).doc_string.value_or("").size(), doc_size);
    EXPECT_TRUE(verify(path).ok());
    EXPECT_EQ(model_offset(path), old_offset);
  }
  // Back to the same model: the same bytes (no trace of the bigger tails).
  EXPECT_EQ(read_file_bytes(path), original);
}

TEST_F(ArchiveEdit, ReferencesFollowTheWritersRule) {
  ScratchDir dir("edit_refs");
  const fs::path path = dir / "m.onnxz";
  save(sample_model(), path);
  const Bytes before = read_file_bytes(path);
  struct Case {
    const char* what;
    std::function<void(TensorProto&)> change;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {"missing entry", [](TensorProto& t) { t.external_data[0].value = "nope"; },
       "tensor 'w0' at graph/initializer[0]: refers to external data 'nope', which is not a "
       "payload entry of the archive"},
      {"the model entry", [](TensorProto& t) { t.external_data[0].value = "__MODEL_PROTO"; },
       "refers to external data '__MODEL_PROTO', which is not a payload entry"},
      {"wrong length", [](TensorProto& t) { t.external_data[1].value = "12"; },
       "entry 'w0': length '12' differs from the entry's 1024 bytes"},
      {"wrong dims",
       [](TensorProto& t) {
         t.dims = {16, 15};
       },
       "entry 'w0': the entry holds 1024 bytes, but dims x element size of FLOAT is 960"},
      {"offset",
       [](TensorProto& t) {
         StringStringEntryProto& kv = t.external_data.emplace_back();
         kv.key = "offset";
         kv.value = "64";
       },
       "entry 'w0': offset '64': a payload starts at its entry's first byte"},
      {"payload too", [](TensorProto& t) { t.float_data = {1.0f}; },
       "entry 'w0': an external tensor also carries float_data"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ModelProto model = archive_model(path);
    c.change(model.graph->initializer[0]);
    try {
      replace_model(path, model);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_CONTAINS(e.what(), path.string() + ": ");
      EXPECT_CONTAINS(e.what(), c.fragment);
    }
    EXPECT_EQ(read_file_bytes(path), before);
  }
  // Redundant keys in any order are accepted and written canonically.
  ModelProto model = archive_model(path);
  TensorProto& w0 = model.graph->initializer[0];
  std::swap(w0.external_data[0], w0.external_data[1]);
  StringStringEntryProto& kv = w0.external_data.emplace_back();
  kv.key = "offset";
  kv.value = "0";
  replace_model(path, model);
  EXPECT_EQ(read_file_bytes(path), before);
  // So is a length with a leading zero; a reference already canonical is written as it is.
  model = archive_model(path);
  StringStringEntryProto& length = model.graph->initializer[1].external_data[1];
  ASSERT_EQ(*length.key, "length");
  length.value = "0" + length.value->str();
  replace_model(path, model);
  EXPECT_EQ(read_file_bytes(path), before);
}

TEST_F(ArchiveEdit, UnreferencedEntriesAreRefusedUnlessCompacting) {
  ScratchDir dir("edit_compact");
  const fs::path path = dir / "m.onnxz";
  save(sample_model(), path, {.alignment = 4096});
  const Bytes before = read_file_bytes(path);
  ModelProto model = archive_model(path);
  // Drop w1 and w2 from the model.
  model.graph->initializer.erase(model.graph->initializer.begin() + 1,
                                 model.graph->initializer.begin() + 3);
  try {
    replace_model(path, model);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_CONTAINS(e.what(), path.string() +
                                  ": no tensor of the new model refers to entries "
                                  "'w1', 'w2' (spec §7.2");
    EXPECT_CONTAINS(e.what(), "or, to delete their bytes from the archive, compact it");
  }
  EXPECT_EQ(read_file_bytes(path), before);

  const EditResult result = replace_model(path, model, {.compact = true});
  EXPECT_TRUE(result.compacted);
  EXPECT_EQ(result.dropped_entries, (std::vector<std::string>{"w1", "w2"}));
  EXPECT_TRUE(verify(path).ok());
  EXPECT_EQ(dir.file_names(), std::vector<std::string>{"m.onnxz"});
  const ZipReader zip = ZipReader::open(path);
  ASSERT_EQ(zip.entries().size(), 2u);
  EXPECT_EQ(zip.entries()[0].name, "w0");
  EXPECT_EQ(zip.entries()[1].local->data_offset % 4096, 0u);  // The archive's alignment is kept.
  EXPECT_EQ(result.file_size, fs::file_size(path));
}

// --- edit_model_properties: the graph kept as bytes ---

// A change of properties only, as the CLI's metadata flags make.
void change_properties(ModelProto& model) {
  model.producer_name = "edited";
  model.doc_string = std::string(700, 'd');
  StringStringEntryProto& entry = model.metadata_props.emplace_back();
  entry.key = "license";
  entry.value = "MIT";
}

// The archive at `from` written again to `to` with `model_bytes` as its __MODEL_PROTO: a model
// encoded as another writer may encode it.
void rewrite_with_model_bytes(const fs::path& from, const fs::path& to, const Bytes& model_bytes) {
  const ZipReader zip = ZipReader::open(from);
  ZipWriter writer(to);
  for (const ZipEntry& entry : zip.entries()) {
    if (entry.name != kModelEntryName) writer.add(entry.name, zip.data(entry).view());
  }
  writer.add(kModelEntryName, model_bytes);
  writer.finish();
}

Bytes stored_model_bytes(const fs::path& path) {
  const Archive archive = Archive::open(path);
  const ByteSpan bytes = archive.model_bytes();
  return Bytes(bytes.begin(), bytes.end());
}

// What edit_model does to a copy of the archive: the reference for edit_model_properties.
struct Twin {
  fs::path path;
  std::optional<EditResult> result;
  std::string error;
};

Twin edit_twin(const fs::path& path, const fs::path& twin) {
  fs::copy_file(path, twin, fs::copy_options::overwrite_existing);
  Twin out{twin, std::nullopt, ""};
  try {
    out.result = edit_model(twin, change_properties);
  } catch (const Error& e) {
    out.error = e.what();
  }
  return out;
}

// On archives of our own writing, the properties path writes byte for byte what edit_model
// writes: same graph bytes (ours), same properties, same places.
TEST_F(ArchiveEdit, PropertyEditsWriteWhatEditModelWrites) {
  ScratchDir dir("edit_properties");
  const std::vector<std::pair<std::string, ModelProto>> models = {
      {"sample", sample_model()},
      {"everywhere", test_support::model_with_tensors_everywhere()},
  };
  for (const auto& [name, model] : models) {
    SCOPED_TRACE(name);
    const fs::path path = dir / (name + ".onnxz");
    save(model, path);
    const Twin twin = edit_twin(path, dir / (name + "_twin.onnxz"));
    ASSERT_TRUE(twin.result) << twin.error;
    const std::uint64_t old_offset = model_offset(path);
    const EditResult result = edit_model_properties(path, change_properties);
    EXPECT_EQ(read_file_bytes(path), read_file_bytes(twin.path));
    EXPECT_EQ(result.model_offset, old_offset);
    EXPECT_EQ(result.model_size, twin.result->model_size);
    EXPECT_EQ(result.file_size, fs::file_size(path));
    EXPECT_EQ(producer_of(path), "edited");
    EXPECT_TRUE(verify(path).ok());
  }
}

TEST_F(ArchiveEdit, PropertyEditsKeepTheGraphAsAnotherWriterEncodedIt) {
  ScratchDir dir("edit_properties_kept");
  const fs::path saved = dir / "saved.onnxz";
  save(sample_model(), saved);
  // The graph's name after its initializers, and the graph after every other field of the model:
  // valid protobuf that our serializer, which writes fields in number order, would reorder.
  ModelProto properties = archive_model(saved);
  GraphProto graph = std::move(*properties.graph);
  properties.graph.reset();
  GraphProto name_only;
  name_only.name = graph.name;
  graph.name.reset();
  Bytes graph_bytes = serialize_message(graph);
  const Bytes name_bytes = serialize_message(name_only);
  graph_bytes.insert(graph_bytes.end(), name_bytes.begin(), name_bytes.end());
  const Bytes graph_field = wire_field(7, graph_bytes);
  Bytes model_bytes = serialize_model(properties);
  model_bytes.insert(model_bytes.end(), graph_field.begin(), graph_field.end());
  const fs::path path = dir / "m.onnxz";
  rewrite_with_model_bytes(saved, path, model_bytes);
  const Twin twin = edit_twin(path, dir / "twin.onnxz");
  ASSERT_TRUE(twin.result) << twin.error;

  edit_model_properties(path, change_properties);
  const Bytes after = stored_model_bytes(path);
  EXPECT_NE(std::search(after.begin(), after.end(), graph_field.begin(), graph_field.end()),
            after.end());
  // edit_model, which parses and writes the whole model, writes the graph in its own order; both
  // hold the same model.
  const Bytes by_edit_model = stored_model_bytes(twin.path);
  EXPECT_EQ(std::search(by_edit_model.begin(), by_edit_model.end(), graph_field.begin(),
                        graph_field.end()),
            by_edit_model.end());
  EXPECT_EQ(parse_model(after), parse_model(by_edit_model));
  EXPECT_EQ(producer_of(path), "edited");
  EXPECT_EQ(payloads(path), payloads(saved));
  EXPECT_TRUE(verify(path).ok());
}

// Whatever the walk of the graph's bytes cannot vouch for has the edit parse the model whole: the
// result, or the error, is edit_model's.
TEST_F(ArchiveEdit, PropertyEditsTakeTheWholeModelWhenTheWalkCannotVouch) {
  ScratchDir dir("edit_properties_whole");
  const fs::path saved = dir / "saved.onnxz";
  save(sample_model(), saved);
  const ModelProto model = archive_model(saved);
  struct Case {
    const char* what;
    Bytes model_bytes;
    bool refused;
  };
  std::vector<Case> cases;
  {
    // A reference not in canonical form (keys swapped): written anew in canonical form.
    ModelProto swapped = model;
    TensorProto& w0 = swapped.graph->initializer[0];
    std::swap(w0.external_data[0], w0.external_data[1]);
    cases.push_back({"non-canonical reference", serialize_model(swapped), false});
  }
  {
    // The graph in two fields, which protobuf merges.
    ModelProto properties = model;
    properties.graph.reset();
    GraphProto first = *model.graph;
    GraphProto second;
    second.initializer.assign(first.initializer.begin() + 2, first.initializer.end());
    first.initializer.resize(2);
    Bytes bytes = serialize_model(properties);
    for (const GraphProto* part : {&first, &second}) {
      const Bytes field = wire_field(7, serialize_message(*part));
      bytes.insert(bytes.end(), field.begin(), field.end());
    }
    cases.push_back({"graph given twice", bytes, false});
  }
  {
    ModelProto wrong = model;
    wrong.graph->initializer[1].external_data[1].value = "12";
    cases.push_back({"wrong length", serialize_model(wrong), true});
  }
  {
    ModelProto missing = model;
    missing.graph->initializer[2].external_data[0].value = "nope";
    cases.push_back({"missing entry", serialize_model(missing), true});
  }
  {
    ModelProto unreferenced = model;
    unreferenced.graph->initializer.erase(unreferenced.graph->initializer.begin() + 1);
    cases.push_back({"unreferenced entry", serialize_model(unreferenced), true});
  }
  {
    Bytes cut = serialize_model(model);
    cut.resize(cut.size() - 5);
    cases.push_back({"truncated model", cut, true});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const fs::path path = dir / "m.onnxz";
    rewrite_with_model_bytes(saved, path, c.model_bytes);
    const Bytes before = read_file_bytes(path);
    const Twin twin = edit_twin(path, dir / "twin.onnxz");
    EXPECT_EQ(!twin.result, c.refused) << twin.error;
    try {
      edit_model_properties(path, change_properties);
      EXPECT_FALSE(c.refused) << "no error";
      EXPECT_EQ(read_file_bytes(path), read_file_bytes(twin.path));
      EXPECT_TRUE(verify(path).ok());
    } catch (const Error& e) {
      EXPECT_TRUE(c.refused) << e.what();
      std::string expected = twin.error;
      const std::size_t at = expected.find(twin.path.string());
      ASSERT_NE(at, std::string::npos) << expected;
      expected.replace(at, twin.path.string().size(), path.string());
      EXPECT_EQ(std::string(e.what()), expected);
      EXPECT_EQ(read_file_bytes(path), before);
    }
  }
}

TEST_F(ArchiveEdit, PropertyEditsLeaveTheGraphToEditModel) {
  ScratchDir dir("edit_properties_graph");
  const fs::path path = dir / "m.onnxz";
  save(sample_model(), path);
  const Bytes before = read_file_bytes(path);
  bool saw_graph = true;
  try {
    edit_model_properties(path, [&](ModelProto& model) {
      saw_graph = model.graph.has_value() || !model.functions.empty();
      model.graph.ensure().name = "mine";
    });
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_CONTAINS(e.what(),
                    path.string() + ": an edit of the model's properties gave it a graph");
  }
  EXPECT_FALSE(saw_graph);
  EXPECT_THROW(edit_model_properties(
                   path, [](ModelProto&) { throw Error(ErrorCode::kInvalidArgument, "refused"); }),
               Error);
  EXPECT_EQ(read_file_bytes(path), before);
}

TEST_F(ArchiveEdit, ErrorsForFilesThatCannotBeEdited) {
  ScratchDir dir("edit_errors");
  const fs::path path = dir / "m.onnxz";
  try {
    replace_model(path, sample_model());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_CONTAINS(e.what(), path.string() + ": cannot open for editing");
  }
  save(sample_model(), path);
  const ModelProto model = archive_model(path);
  // Another edit holds the file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  try {
    EditOptions no_wait;
    no_wait.wait = std::chrono::milliseconds(0);
    replace_model(path, model, no_wait);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_CONTAINS(e.what(), path.string() +
                                  ": cannot edit: locked by another process (another edit of it "
                                  "is in progress)");
  }
  ::close(fd);
  // A ZIP without a model.
  {
    ZipWriter writer(dir / "plain.zip");
    writer.add("a", ByteSpan{});
    writer.finish();
  }
  try {
    replace_model(dir / "plain.zip", model);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorrupt);
    EXPECT_CONTAINS(e.what(), "no entry named '__MODEL_PROTO'");
  }
}

// An archive reached through a symbolic link is edited where it is (EditOptions::output
// follows links by default, as an editor saves through one); follow_symlinks = false refuses the
// link and changes nothing.
TEST_F(ArchiveEdit, SymbolicLinksAreFollowedUnlessRefused) {
  ScratchDir dir("edit_link");
  const fs::path path = dir / "m.onnxz";
  const fs::path link = dir / "link.onnxz";
  save(sample_model(), path);
  fs::create_symlink(path.filename(), link);
  ModelProto model = archive_model(path);
  model.producer_name = "through the link";
  replace_model(link, model);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(producer_of(path), "through the link");

  const Bytes before = read_file_bytes(path);
  model.producer_name = "refused";
  EditOptions options;
  options.output.follow_symlinks = false;
  for (const bool compact : {false, true}) {
    options.compact = compact;
    try {
      replace_model(link, model, options);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_CONTAINS(e.what(), link.string() + ": is a symbolic link; refusing to edit it");
    }
  }
  EXPECT_EQ(read_file_bytes(path), before);
  EXPECT_TRUE(fs::is_symlink(link));
  replace_model(path, model, options);  // The file itself is no link.
  EXPECT_EQ(producer_of(path), "refused");
}

// For the tests of files renamed over an archive's path: the archive dir/m.onnxz, a second link
// to it named `link_name` (so that the file stays reachable once another is renamed over the
// path), and that other archive, producer "other", at dir/other.onnxz. Returns the archive's
// bytes, which the link keeps.
Bytes archive_with_link_and_another(const ScratchDir& dir, const std::string& link_name) {
  const fs::path path = dir / "m.onnxz";
  save(sample_model(), path);
  fs::create_hard_link(path, dir / link_name);
  ModelProto other = sample_model();
  other.producer_name = "other";
  save(other, dir / "other.onnxz");
  return read_file_bytes(path);
}

// The edit reads the archive through the descriptor it opened and locked, and checks just before
// its first write that the path still names that file: an archive renamed over the path during
// the edit is neither read nor changed, nor is the file the edit opened (still reachable by a
// second link here); the edit fails with kChanged, to be run again.
TEST_F(ArchiveEdit, AFileRenamedOverThePathDuringTheEditFailsItUnwritten) {
  ScratchDir dir("edit_replaced");
  const fs::path path = dir / "m.onnxz";
  const Bytes opened_bytes = archive_with_link_and_another(dir, "opened.onnxz");
  const Bytes other_bytes = read_file_bytes(dir / "other.onnxz");

  ModelProto model = archive_model(path);
  model.producer_name = "new";
  bool replaced = false;
  EditOptions options;
  options.progress = [&](std::uint64_t, std::uint64_t) {
    if (replaced) return;
    fs::rename(dir / "other.onnxz", path);
    replaced = true;
  };
  try {
    replace_model(path, model, options);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kChanged);
    EXPECT_CONTAINS(e.what(), path.string() + ": cannot edit: the path names another file now");
  }
  ASSERT_TRUE(replaced);
  EXPECT_EQ(read_file_bytes(path), other_bytes);
  EXPECT_EQ(read_file_bytes(dir / "opened.onnxz"), opened_bytes);
  // Run again, the edit lands in the file at the path.
  options.progress = nullptr;
  replace_model(path, model, options);
  EXPECT_EQ(producer_of(path), "new");
}

// Issue 32, defect 5: a file renamed over the path between the edit's open and its lock (as
// `edit --compact`, `convert` or a deploy script do) is the one edited; the file the edit opened
// first, which no path may name any more, is left alone.
TEST_F(ArchiveEdit, AFileRenamedOverThePathBeforeTheLockIsTheOneEdited) {
  ScratchDir dir("edit_replaced_before_lock");
  const fs::path path = dir / "m.onnxz";
  const Bytes first_bytes = archive_with_link_and_another(dir, "first.onnxz");
  ModelProto other = sample_model();
  other.producer_name = "other";

  ModelProto model = archive_model(path);
  model.producer_name = "new";
  int opens = 0;
  archive_detail::set_archive_opened_hook([&] {
    if (opens++ == 0) fs::rename(dir / "other.onnxz", path);
  });
  replace_model(path, model);
  archive_detail::set_archive_opened_hook(nullptr);
  EXPECT_EQ(opens, 2);
  EXPECT_EQ(producer_of(path), "new");
  EXPECT_EQ(read_file_bytes(dir / "first.onnxz"), first_bytes);
  EXPECT_TRUE(verify(path).ok());

  // A signing too.
  save(other, dir / "other.onnxz");
  opens = 0;
  archive_detail::set_archive_opened_hook([&] {
    if (opens++ == 0) fs::rename(dir / "other.onnxz", path);
  });
  sign_archive(path, {});
  archive_detail::set_archive_opened_hook(nullptr);
  EXPECT_EQ(opens, 2);
  EXPECT_EQ(producer_of(path), "other");
  EXPECT_TRUE(ZipReader::open(path).find(kDigestsEntryName) != nullptr);

  // A path that names another file at every attempt: refused, nothing written anywhere.
  const Bytes path_bytes = read_file_bytes(path);
  archive_detail::set_archive_opened_hook([&] {
    save(other, dir / "other.onnxz");
    fs::rename(dir / "other.onnxz", path);
  });
  try {
    replace_model(path, model);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kChanged);
    EXPECT_CONTAINS(e.what(), path.string() +
                                  ": cannot edit: another file was renamed over the path at each "
                                  "of 8 attempts to open and lock it");
  }
  archive_detail::set_archive_opened_hook(nullptr);
  EXPECT_EQ(producer_of(path), "other");
}

// Readers hold the lock shared while they read the tail: an edit waits for them (EditOptions::
// wait), and a second edit is refused once the wait is over.
TEST_F(ArchiveEdit, AnEditWaitsForReadersAndRefusesASecondEditAfterItsWait) {
  ScratchDir dir("edit_wait");
  const fs::path path = dir / "m.onnxz";
  save(sample_model(), path);
  ModelProto model = archive_model(path);
  model.producer_name = "new";
  {
    const int reader = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(reader, 0);
    ASSERT_EQ(::flock(reader, LOCK_SH), 0);
    // Let go after a while; the edit's default wait is far longer, even on a loaded machine.
    std::thread release([reader] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ::close(reader);
    });
    replace_model(path, model);
    release.join();
    EXPECT_EQ(producer_of(path), "new");
  }
  const Bytes before = read_file_bytes(path);
  const int editor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(editor, 0);
  ASSERT_EQ(::flock(editor, LOCK_EX), 0);
  model.producer_name = "refused";
  EditOptions options;
  options.wait = std::chrono::milliseconds(150);
  const auto start = std::chrono::steady_clock::now();
  try {
    replace_model(path, model, options);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_CONTAINS(e.what(), path.string() +
                                  ": cannot edit: locked by another process (another edit of it "
                                  "is in progress) for the 150 ms this edit waits");
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, options.wait);
  try {
    sign_archive(path, {.wait = std::chrono::milliseconds(0)});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "locked by another process");
  }
  ::close(editor);
  EXPECT_EQ(read_file_bytes(path), before);
}

// Editors that overlap take turns (each waits for the lock), and each reads the model under the
// lock it writes under: none loses another's update.
TEST_F(ArchiveEdit, EditorsAtOnceTakeTurnsAndLoseNoUpdate) {
  ScratchDir dir("edit_turns");
  const fs::path path = dir / "m.onnxz";
  save(sample_model(), path);
  constexpr int kEditors = 4;
  constexpr int kEditsEach = 10;
  std::vector<std::thread> editors;
  std::atomic<int> failures{0};
  for (int e = 0; e < kEditors; ++e) {
    editors.emplace_back([&] {
      for (int i = 0; i < kEditsEach; ++i) {
        try {
          edit_model_properties(path, [](ModelProto& model) {
            const int count = std::stoi(std::string(model.doc_string.value_or("0")));
            model.doc_string = std::to_string(count + 1);
          });
        } catch (const Error&) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& editor : editors) editor.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(std::string(load(path).doc_string.value_or("")), std::to_string(kEditors * kEditsEach));
  EXPECT_TRUE(verify(path).ok());
}

// Issue 32, defect 6: the space an edit may take is reserved before its first write, so that a
// full disk fails it with the file unchanged -- not at §9.6 step 3, where the new tail fits past
// the end of the file but not back in its place (the bytes between hold a hole). Run on a tmpfs
// of a chosen size, mounted in a child process's own mount namespace; skipped where the system
// does not allow one.
std::string edit_on_small_tmpfs(const fs::path& folder, const fs::path& archive,
                                std::uint64_t free_bytes, const ModelProto& model) {
  const std::uint64_t archive_pages = (fs::file_size(archive) + 4095) / 4096;
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    const auto report = [&](const std::string& text, int code) {
      static_cast<void>(::write(pipe_fds[1], text.data(), text.size()));
      ::_exit(code);
    };
    if (::unshare(CLONE_NEWNS) != 0) {
      // Not privileged: a user namespace of our own, where we are.
      const uid_t uid = ::getuid();
      const gid_t gid = ::getgid();
      if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) report("skip: no mount namespace", 0);
      const auto put = [](const char* file, const std::string& text) {
        const int fd = ::open(file, O_WRONLY);
        if (fd < 0) return;
        static_cast<void>(::write(fd, text.data(), text.size()));
        ::close(fd);
      };
      put("/proc/self/setgroups", "deny");
      put("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1");
      put("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1");
    }
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      report("skip: cannot make mounts private", 0);
    }
    const std::string size = "size=" + std::to_string(archive_pages * 4096 + free_bytes);
    if (::mount("tmpfs", folder.c_str(), "tmpfs", 0, size.c_str()) != 0) {
      report("skip: cannot mount a tmpfs", 0);
    }
    const fs::path path = folder / "m.onnxz";
    try {
      fs::copy_file(archive, path);
      const Bytes before = read_file_bytes(path);
      std::string outcome;
      try {
        replace_model(path, model);
        outcome = "edited";
      } catch (const Error& e) {
        outcome = std::string("error: ") + e.what();
      }
      const bool unchanged = read_file_bytes(path) == before;
      const bool ok = verify(path).ok();
      report(outcome + (unchanged ? " | unchanged" : " | changed") + (ok ? " | ok" : " | bad") +
                 " | producer " + producer_of(path),
             0);
    } catch (const std::exception& e) {
      report(std::string("failed: ") + e.what(), 1);
    }
  }
  ::close(pipe_fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return text;
}

TEST_F(ArchiveEdit, AFullDiskFailsTheEditBeforeItWritesAnything) {
  ScratchDir dir("edit_enospc");
  const fs::path archive = dir / "m.onnxz";
  save(sample_model(), archive);
  fs::create_directory(dir / "mount");
  ModelProto model = archive_model(archive);
  model.producer_name = "new";
  constexpr std::uint64_t kMiB = 1 << 20;
  model.doc_string = std::string(kMiB, 'd');  // The old tail is a few KiB.
  // Room for steps 1 and 2 (the new tail and the record past the archive) but not for step 3's
  // bytes past the old end as well.
  const std::string full = edit_on_small_tmpfs(dir / "mount", archive, 3 * kMiB / 2, model);
  if (full.starts_with("skip: ")) GTEST_SKIP() << full;
  EXPECT_CONTAINS(full, "error: ");
  EXPECT_CONTAINS(full, "m.onnxz: editing in place: no room for the edit");
  EXPECT_CONTAINS(full, "No space left on device; the archive is unchanged");
  EXPECT_CONTAINS(full, "| unchanged | ok | producer old");
  // With room for the reservation, the same edit completes.
  EXPECT_EQ(edit_on_small_tmpfs(dir / "mount", archive, 3 * kMiB, model),
            "edited | changed | ok | producer new");
}

// More than 65,534 entries: the end records need zip64 (spec §5.2) in every tail the edit
// writes, and every central record is carried over as it was. (Slow: 65,600 entries.)
TEST(ArchiveEditSlow, ArchivesWithZip64EndRecords) {
  ScratchDir dir("edit_zip64");
  const fs::path path = dir / "m.onnxz";
  constexpr int kEntries = 65'600;
  {
    ModelProto model;
    model.ir_version = 8;
    model.producer_name = "old";
    GraphProto& graph = model.graph.emplace();
    ArchiveWriter writer(path);
    const std::vector<std::int64_t> dims = {1};
    for (int i = 0; i < kEntries; ++i) {
      const std::uint8_t byte = static_cast<std::uint8_t>(i);
      const std::string name = "t" + std::to_string(i);
      TensorProto& t = graph.initializer.emplace_back();
      t.name = name;
      t.data_type = TensorProto::kUint8;
      t.dims = dims;
      writer.add_tensor(name, TensorProto::kUint8, dims, ByteSpan(&byte, 1)).apply_to(t);
    }
    writer.finish(model);
  }
  ASSERT_TRUE(ZipReader::open(path).has_zip64_end_record());
  const Bytes before = read_file_bytes(path);
  const std::uint64_t old_offset = model_offset(path);
  ModelProto model = archive_model(path);
  model.producer_name = "new";
  model.doc_string = std::string(3'000'000, 'z');  // Past the old tail: a gap before the new one.
  replace_model(path, model);
  const Bytes after = read_file_bytes(path);
  EXPECT_TRUE(std::equal(before.begin(), before.begin() + static_cast<std::ptrdiff_t>(old_offset),
                         after.begin()));
  EXPECT_EQ(producer_of(path), "new");
  EXPECT_TRUE(verify(path).ok());
  EXPECT_EQ(ZipReader::open(path).entries().size(), kEntries + 1u);
}

// --- Crash safety ---

using archive_detail::TailStep;
struct StepPoint {
  TailStep step;
  bool synced;
  // What the file must hold after a failure here (the edit takes back what it wrote until the
  // new tail is whole and flushed) and after a crash here (the new tail is the archive as soon
  // as it is whole).
  bool new_after_failure;
  bool new_after_crash;
};
const std::vector<StepPoint> kPoints = {
    {TailStep::kMark, false, false, false}, {TailStep::kAppend, false, false, true},
    {TailStep::kAppend, true, false, true}, {TailStep::kMove, false, true, true},
    {TailStep::kMove, true, true, true},    {TailStep::kTruncate, false, true, true},
};

std::string label_of(const StepPoint& point) {
  return std::to_string(static_cast<int>(point.step)) + (point.synced ? " synced" : "");
}

// The edit used by the crash tests: a new producer and a model tail bigger than the old one, so
// that the new tail lies past the end of the archive with a gap before it.
ModelProto edited(const fs::path& path) {
  ModelProto model = archive_model(path);
  model.producer_name = "new";
  model.doc_string = std::string(100'000, 'x');
  return model;
}

// After a failure or crash: the old or new model, as `point` says; verify loads it; repack
// makes a conforming archive of it; and the next edit tidies it.
void expect_readable(const fs::path& path, bool new_model_live, const std::string& label) {
  SCOPED_TRACE(label);
  EXPECT_EQ(producer_of(path), new_model_live ? "new" : "old");
  const VerifyReport report = verify(path);
  EXPECT_TRUE(report.loadable());
  const fs::path repacked = path.parent_path() / "repacked.onnxz";
  repack(path, repacked);
  EXPECT_TRUE(verify(repacked).ok());
  fs::remove(repacked);
  ModelProto model = archive_model(path);
  model.producer_name = "again";
  replace_model(path, model);
  const VerifyReport tidy = verify(path);
  EXPECT_TRUE(tidy.ok()) << (tidy.findings.empty() ? "" : tidy.findings[0].message);
  EXPECT_EQ(producer_of(path), "again");
}

TEST_F(ArchiveEdit, AFailureAfterEachStepLeavesTheOldOrTheNewModel) {
  for (const StepPoint& point : kPoints) {
    const std::string label = label_of(point);
    ScratchDir dir("edit_fail");
    const fs::path path = dir / "m.onnxz";
    save(sample_model(), path);
    const Bytes before = read_file_bytes(path);
    const ModelProto model = edited(path);
    archive_detail::set_tail_step_hook([&](TailStep step, bool synced) {
      if (step == point.step && synced == point.synced) {
        throw Error(ErrorCode::kIo, "injected failure");
      }
    });
    EXPECT_THROW(replace_model(path, model), Error) << label;
    archive_detail::set_tail_step_hook(nullptr);
    if (!point.new_after_failure) {
      // Nothing left behind: the edit took back what it wrote.
      EXPECT_EQ(read_file_bytes(path), before) << label;
    }
    expect_readable(path, point.new_after_failure, label);
  }
}

// Runs the edit in a child process that dies (as if killed) right after the step `when` picks.
void edit_and_die_when(const fs::path& path, const ModelProto& model,
                       const std::function<bool(TailStep, bool)>& when) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    archive_detail::set_tail_step_hook([&](TailStep step, bool synced) {
      if (when(step, synced)) ::_exit(0);
    });
    try {
      replace_model(path, model);
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(3);  // The hook did not fire.
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
}

void edit_and_die_at(const fs::path& path, const ModelProto& model, const StepPoint& point) {
  edit_and_die_when(path, model, [&](TailStep step, bool synced) {
    return step == point.step && synced == point.synced;
  });
}

TEST_F(ArchiveEdit, ACrashAfterEachStepLeavesTheOldOrTheNewModel) {
  for (const StepPoint& point : kPoints) {
    const std::string label = label_of(point);
    ScratchDir dir("edit_crash");
    const fs::path path = dir / "m.onnxz";
    save(sample_model(), path);
    edit_and_die_at(path, edited(path), point);
    if (point.step != TailStep::kTruncate) {
      const VerifyReport report = verify(path);
      ASSERT_FALSE(report.findings.empty()) << label;
      EXPECT_CONTAINS(report.findings[0].message, "interrupted_edit: an interrupted edit left");
      EXPECT_CONTAINS(report.findings[0].message,
                      point.new_after_crash ? "the archive is the edit's new one, written whole"
                                            : "the archive is the one the edit began from");
    }
    expect_readable(path, point.new_after_crash, label);
  }
}

// An edit that follows an interrupted one whose record lies far past the archive (its tail was
// large) puts its own record past that one, so that the file ends with the record of the edit
// under way: killed once its new tail is whole, the file reads as its new model; failing, it
// leaves the archive it read, without the bytes of either edit.
TEST_F(ArchiveEdit, AnEditAfterAnInterruptedOneEndsTheFileWithItsOwnRecord) {
  for (const bool crash : {true, false}) {
    SCOPED_TRACE(crash ? "crash" : "failure");
    ScratchDir dir("edit_after_interrupted");
    const fs::path path = dir / "m.onnxz";
    save(sample_model(), path);
    const std::uint64_t old_size = fs::file_size(path);
    ModelProto large = archive_model(path);
    large.producer_name = "large";
    large.doc_string = std::string(std::size_t{5} << 20, 'y');
    edit_and_die_at(path, large, {TailStep::kMark, false, false, false});
    const std::uint64_t interrupted_size = fs::file_size(path);
    ASSERT_GT(interrupted_size, old_size + large.doc_string->size());
    EXPECT_EQ(producer_of(path), "old");

    ModelProto small = archive_model(path);
    small.producer_name = "small";
    if (crash) {
      edit_and_die_at(path, small, {TailStep::kAppend, false, false, true});
      EXPECT_GT(fs::file_size(path), interrupted_size);
      EXPECT_EQ(producer_of(path), "small");
      EXPECT_TRUE(verify(path).loadable());
      continue;
    }
    archive_detail::set_tail_step_hook([](TailStep step, bool) {
      if (step == TailStep::kAppend) throw Error(ErrorCode::kIo, "injected failure");
    });
    EXPECT_THROW(replace_model(path, small), Error);
    archive_detail::set_tail_step_hook(nullptr);
    EXPECT_EQ(fs::file_size(path), old_size);
    EXPECT_TRUE(verify(path).ok());
    EXPECT_EQ(producer_of(path), "old");
  }
}

// Storage writes a 512-byte sector whole or not at all, so a power loss cannot leave half a record
// (spec §9.6) only when the record lies within one sector: wherever the archive ends, the record
// never crosses a multiple of 512. Archives of 128 sizes, a byte apart, put the record's natural
// place at every offset.
TEST_F(ArchiveEdit, TheRecordNeverCrossesASectorBoundary) {
  ScratchDir dir("edit_sector");
  const fs::path path = dir / "m.onnxz";
  std::vector<std::uint64_t> records;
  archive_detail::set_tail_step_hook([&](TailStep step, bool) {
    if (step == TailStep::kMark) {
      records.push_back(fs::file_size(path) - archive_detail::InterruptedEditRecord::kSize);
    }
  });
  for (std::size_t pad = 0; pad < 128; ++pad) {
    ModelProto model;
    model.ir_version = 8;
    model.producer_name = "old";
    model.doc_string = std::string(pad, 'z');
    model.graph.emplace().initializer.push_back(raw_tensor("w", TensorProto::kFloat, {256}, 1));
    save(model, path);
    model = archive_model(path);
    model.producer_name = "new";
    replace_model(path, model);
  }
  archive_detail::set_tail_step_hook(nullptr);
  ASSERT_EQ(records.size(), 128u);
  std::set<std::uint64_t> places;
  for (const std::uint64_t offset : records) {
    EXPECT_LE(offset % 512 + archive_detail::InterruptedEditRecord::kSize, 512u) << offset;
    places.insert(offset % 512);
  }
  EXPECT_GT(places.size(), 64u);  // The archives did move the record about.
  EXPECT_TRUE(verify(path).ok());
}

// A model the archive refuses, or a change that throws, comes before the edit writes anything:
// the file is byte for byte the same.
TEST_F(ArchiveEdit, ARefusedModelLeavesTheFileAsItWas) {
  ScratchDir dir("edit_refused");
  const fs::path path = dir / "m.onnxz";
  save(sample_model(), path);
  const Bytes before = read_file_bytes(path);
  bool written = false;
  archive_detail::set_tail_step_hook([&](TailStep, bool) { written = true; });
  ModelProto model = archive_model(path);
  model.graph->initializer.clear();  // Refers to no entry any more.
  EXPECT_THROW(replace_model(path, model), Error);
  EXPECT_THROW(
      edit_model(path, [](ModelProto&) { throw Error(ErrorCode::kInvalidArgument, "no"); }), Error);
  archive_detail::set_tail_step_hook(nullptr);
  EXPECT_FALSE(written);
  EXPECT_EQ(read_file_bytes(path), before);
  EXPECT_TRUE(verify(path).ok());
}

// A killed process leaves any prefix of each write: every such state of both writes reads.
TEST_F(ArchiveEdit, ACrashInTheMiddleOfAWriteLeavesTheOldOrTheNewModel) {
  ScratchDir dir("edit_partial");
  const fs::path original = dir / "m.onnxz";
  save(sample_model(), original);
  const ModelProto model = edited(original);
  const auto state_after = [&](TailStep step) {
    const fs::path path = dir / "state.onnxz";
    fs::copy_file(original, path, fs::copy_options::overwrite_existing);
    edit_and_die_at(path, model, {step, false, false, false});
    Bytes bytes = read_file_bytes(path);
    fs::remove(path);
    return bytes;
  };
  // (before, after, which model) for the two writes of a tail: the new tail past the archive,
  // which is the archive once whole, then the tail in its place.
  const Bytes marked = state_after(TailStep::kMark);
  const Bytes appended = state_after(TailStep::kAppend);
  const Bytes moved = state_after(TailStep::kMove);
  struct Write {
    const Bytes* before;
    const Bytes* after;
    const char* partial;  // The model of every prefix but the whole write.
  };
  for (const Write& write : {Write{&marked, &appended, "old"}, Write{&appended, &moved, "new"}}) {
    ASSERT_EQ(write.before->size(), write.after->size());
    const auto first =
        std::mismatch(write.before->begin(), write.before->end(), write.after->begin());
    const auto last =
        std::mismatch(write.before->rbegin(), write.before->rend(), write.after->rbegin());
    const std::size_t from = static_cast<std::size_t>(first.first - write.before->begin());
    const std::size_t to =
        write.before->size() - static_cast<std::size_t>(last.first - write.before->rbegin());
    ASSERT_LT(from, to);
    // Every prefix near the ends and the headers, and a stride through the data.
    std::vector<std::size_t> cuts;
    for (std::size_t n = 0; n <= to - from; n += (n < 200 || to - from - n < 200) ? 1 : 997) {
      cuts.push_back(n);
    }
    for (const std::size_t n : cuts) {
      Bytes state = *write.before;
      std::copy(write.after->begin() + static_cast<std::ptrdiff_t>(from),
                write.after->begin() + static_cast<std::ptrdiff_t>(from + n),
                state.begin() + static_cast<std::ptrdiff_t>(from));
      const ModelProto loaded = load_bytes(ByteSpan(state), kNoOwner, {}, "state");
      ASSERT_EQ(loaded.producer_name.value_or(""), n == to - from ? "new" : write.partial)
          << "prefix " << n;
    }
  }
}

TEST_F(ArchiveEdit, KilledAtRandomInstantsLeavesAModelThatLoads) {
  ScratchDir dir("edit_kill");
  const fs::path path = dir / "m.onnxz";
  save(sample_model(), path);
  const ModelProto a = edited(path);
  ModelProto b = archive_model(path);
  b.producer_name = "b";
  std::mt19937 random(20261123);
  for (int round = 0; round < 20; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0;; ++i) {
        try {
          replace_model(path, i % 2 == 0 ? a : b,
                        {.output = {.durable = false, .follow_symlinks = true}});
        } catch (...) {
          ::_exit(2);
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 20'000));
    ::kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the editing child failed, status " << status;
    const std::string producer = producer_of(path);
    EXPECT_TRUE(producer == "new" || producer == "b" || producer == "old") << producer;
    EXPECT_TRUE(verify(path).loadable());
  }
}

TEST_F(ArchiveEdit, ARecordOfAnInterruptedEditMustPointAtAnArchive) {
  ScratchDir dir("edit_record");
  const fs::path path = dir / "m.onnxz";
  save(sample_model(), path);
  const Bytes archive = read_file_bytes(path);
  const std::uint64_t size = archive.size();
  // The archive, `gap` zero bytes, and a record of `fields` (its own offset moved by
  // `offset_error`).
  const auto with_record = [&](archive_detail::InterruptedEditRecord fields, std::uint64_t gap,
                               std::int64_t offset_error = 0) {
    Bytes bytes = archive;
    bytes.resize(bytes.size() + gap, 0);
    fields.record_offset = bytes.size() + static_cast<std::uint64_t>(offset_error);
    bytes.resize(bytes.size() + archive_detail::InterruptedEditRecord::kSize);
    fields.encode(MutableByteSpan(bytes).last(archive_detail::InterruptedEditRecord::kSize));
    return bytes;
  };
  const auto record = [](std::uint64_t old_end, std::uint64_t new_start, std::uint64_t new_end,
                         std::uint32_t crc) {
    archive_detail::InterruptedEditRecord r;
    r.old_end = old_end;
    r.new_start = new_start;
    r.new_end = new_end;
    r.new_crc32 = crc;
    return r;
  };
  const auto open_zip = [](const Bytes& bytes, const char* name = "<memory>") {
    return archive_detail::open_zip(ByteSource::of_bytes(bytes, kNoOwner, name), {});
  };
  // Good, the new tail not whole (its bytes, zeros here, lack its CRC-32): the old archive,
  // whatever follows it; through a source that reads ranges too.
  const Bytes old_live = with_record(record(size, size, size + 5000, 1), 5000);
  const ZipReader zip = open_zip(old_live);
  EXPECT_EQ(zip.size(), size);
  EXPECT_EQ(archive_detail::open_zip(test_support::ranges_of(old_live), {}).size(), size);
  ASSERT_TRUE(zip.trailer().has_value());
  EXPECT_EQ(zip.trailer()->offset, size + 5000);
  EXPECT_EQ(zip.trailer()->finding,
            "an interrupted edit left 5048 bytes after the archive's end at offset " +
                std::to_string(size) + " (up to its record at offset " +
                std::to_string(size + 5000) +
                "); the archive is the one the edit began from; editing the archive again or "
                "repacking it removes them (spec §9.6)");
  EXPECT_EQ(load_bytes(ByteSpan(old_live), kNoOwner).producer_name.value_or(""), "old");
  // Good, the new tail whole: here the whole archive is the "new tail", after an empty old one.
  const Bytes new_live = with_record(record(0, 0, size, crc32(archive)), 100);
  const ZipReader switched = open_zip(new_live);
  EXPECT_EQ(switched.size(), size);
  EXPECT_CONTAINS(switched.trailer()->finding, "the archive is the edit's new one");
  // A ZIP reader knows no record: to it the bytes after the archive are what they are.
  try {
    (void)ZipReader::from_bytes(new_live, kNoOwner);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorrupt);
    EXPECT_CONTAINS(e.what(), "bytes after the archive");
  }
  // Bad: a record that is not where it says, names its parts out of order, or points where no
  // archive ends.
  const auto expect_corrupt = [&](const Bytes& bytes, const std::string& fragment) {
    try {
      (void)open_zip(bytes, "x.onnxz");
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCorrupt);
      EXPECT_CONTAINS(e.what(), fragment);
    }
  };
  expect_corrupt(with_record(record(size, size, size, 0), 100, 8),
                 "x.onnxz: interrupted edit record at offset " + std::to_string(size + 100) +
                     ": says it is at offset " + std::to_string(size + 108));
  expect_corrupt(with_record(record(size + 200, size + 200, size + 200, 0), 100),
                 "the old archive ends at offset " + std::to_string(size + 200));
  expect_corrupt(with_record(record(size, size - 1, size + 50, 0), 100),
                 "the new tail spans offsets " + std::to_string(size - 1) + " to " +
                     std::to_string(size + 50));
  expect_corrupt(with_record(record(size, size + 60, size + 50, 0), 100),
                 "cannot hold that in that order (spec §9.6)");
  expect_corrupt(with_record(record(0, 0, size, crc32(archive) ^ 1), 100),
                 "x.onnxz: interrupted edit record at offset " + std::to_string(size + 100) +
                     ": the archive it points to ends at offset 0, but no end of central "
                     "directory record ends there");
  expect_corrupt(with_record(record(size - 1, size, size + 50, 0), 100),
                 "the archive it points to ends at offset " + std::to_string(size - 1) +
                     ", but no end of central directory record ends there");
}

}  // namespace
}  // namespace onnxzip
