// The .onnxz archive layer: save / ArchiveWriter, load / Archive, verify, entry names, the view
// model. Models are built with the object model (tests/support/model_builder.h); malformed
// archives are written with ZipWriter or the test ZIP builder around a hand-made ModelProto.
#include "onnxzip/archive.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "archive_internal.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/tensor.h"
#include "support/expect_contains.h"
#include "support/external_tool.h"
#include "support/model_builder.h"
#include "support/progress_calls.h"
#include "support/scratch_dir.h"
#include "support/zip_builder.h"
#include "zip_writer.h"

namespace onnxzip {
namespace {

using Bytes = std::vector<std::uint8_t>;
using test_support::expect_progress_well_formed;
using test_support::model_with_tensors_everywhere;
using test_support::ProgressCall;
using test_support::raw_tensor;
using test_support::read_file_bytes;
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

Bytes to_bytes(ByteSpan span) { return Bytes(span.begin(), span.end()); }

void write_bytes(const std::filesystem::path& path, ByteSpan bytes) {
  test_support::write_file_bytes(path, std::string(bytes.begin(), bytes.end()));
}

// Payloads as raw_data everywhere, so a typed-field original compares with what load returns.
void normalize(ModelProto& model) {
  for_each_tensor(model, [](TensorProto& tensor, const TensorSite&) {
    if (element_bits(tensor.data_type.value_or(0)) != 0) move_typed_data_to_raw(tensor);
  });
}

bool is_sparse(TensorPlace place) {
  return place != TensorPlace::kInitializer && place != TensorPlace::kAttributeTensor &&
         place != TensorPlace::kAttributeTensors;
}

// What save() must externalize (spec §7.4).
std::size_t expected_entry_count(const ModelProto& model, std::uint64_t threshold) {
  std::size_t count = 0;
  for_each_tensor(model, [&](const TensorProto& tensor, const TensorSite& site) {
    const std::int32_t type = tensor.data_type.value_or(0);
    if (is_sparse(site.place) || element_bits(type) == 0) return;
    if (tensor_byte_size(tensor.dims, type) >= threshold) ++count;
  });
  return count;
}

std::string error_message_of_verify(const VerifyReport& report) {
  std::string text;
  for (const VerifyFinding& f : report.findings) {
    text += std::string(to_string(f.severity)) + ": " + to_string(f) + "\n";
  }
  return text;
}

// --- save / load round trips ---

TEST(ArchiveSave, RoundTripsTensorsEverywhereForEachThresholdAndAlignment) {
  ScratchDir dir("archive_round_trip");
  const ModelProto model = model_with_tensors_everywhere();
  const ModelProto before = model;
  ModelProto expected = model;
  normalize(expected);

  for (const std::uint64_t threshold :
       {std::uint64_t{0}, std::uint64_t{1024}, std::numeric_limits<std::uint64_t>::max()}) {
    for (const std::uint32_t alignment : {64u, 4096u}) {
      SCOPED_TRACE("threshold " + std::to_string(threshold) + ", alignment " +
                   std::to_string(alignment));
      const auto path = dir / ("m_" + std::to_string(threshold % 100000) + "_" +
                               std::to_string(alignment) + ".onnxz");
      save(model, path, SaveOptions{.alignment = alignment, .threshold = threshold});
      EXPECT_EQ(model, before) << "save() modified the caller's model";

      std::set<std::string> externalized;
      {
        const ZipReader zip = ZipReader::open(path);
        ASSERT_FALSE(zip.entries().empty());
        EXPECT_EQ(zip.entries().back().name, kModelEntryName);
        EXPECT_EQ(zip.entries().size() - 1, expected_entry_count(model, threshold));
        for (const ZipEntry& e : zip.entries()) {
          EXPECT_EQ(e.local->data_offset % alignment, 0u) << e.name;
          EXPECT_TRUE(e.is_stored()) << e.name;
        }
        const Archive archive = Archive::open(path);
        for (const Archive::TensorInfo& info : archive.tensors()) {
          if (info.is_inline) continue;  // Listed too (spec/names.md), no entry.
          externalized.insert(info.name);
          EXPECT_EQ(info.offset.value_or(1) % alignment, 0u) << info.name;
          EXPECT_GE(info.alignment, alignment);
          // The span is the entry's data, in place in the archive bytes.
          const ZipEntry& entry = zip.at(info.entry);
          EXPECT_EQ(info.data.data(), archive.zip().bytes().data() + entry.local->data_offset);
        }
        EXPECT_EQ(externalized.size(), zip.entries().size() - 1);
        const VerifyReport report = verify(path);
        EXPECT_TRUE(report.ok()) << error_message_of_verify(report);
      }

      // Every archive object is gone before the model is used.
      ModelProto loaded = load(path);
      OwnerToken owner;
      std::size_t borrowed = 0;
      for_each_tensor(loaded, [&](const TensorProto& tensor, const TensorSite&) {
        if (!externalized.contains(tensor.name.value_or(""))) return;
        ASSERT_TRUE(tensor.raw_data.has_value()) << *tensor.name;
        EXPECT_FALSE(tensor.data_location.has_value()) << *tensor.name;
        EXPECT_TRUE(tensor.external_data.empty()) << *tensor.name;
        if (tensor.raw_data->empty()) return;
        EXPECT_TRUE(tensor.raw_data->is_borrowed()) << *tensor.name;
        ASSERT_NE(tensor.raw_data->owner(), nullptr) << *tensor.name;
        if (owner == nullptr) owner = tensor.raw_data->owner();
        EXPECT_EQ(tensor.raw_data->owner(), owner) << "one mapping for all";
        // The mapping is page aligned, so the file alignment shows in the address.
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(tensor.raw_data->data()) % alignment, 0u)
            << *tensor.name;
        ++borrowed;
      });
      EXPECT_EQ(borrowed > 0, threshold != std::numeric_limits<std::uint64_t>::max());
      normalize(loaded);
      EXPECT_EQ(loaded, expected);

      ModelProto copied = load(path, LoadOptions{.parse = {.no_copy = false}});
      for_each_tensor(copied, [&](const TensorProto& tensor, const TensorSite&) {
        if (tensor.raw_data) {
          EXPECT_TRUE(tensor.raw_data->is_owned()) << tensor.name.value_or("");
        }
      });
      normalize(copied);
      EXPECT_EQ(copied, expected);
    }
  }
}

TEST(ArchiveSave, WritesTensorMetadataAndCanonicalReferences) {
  ScratchDir dir("archive_metadata");
  const ModelProto model = model_with_tensors_everywhere();
  const auto path = dir / "m.onnxz";
  save(model, path);
  const Archive archive = Archive::open(path);
  const TensorProto& stored = archive.model().graph->initializer[0];
  const TensorProto& original = model.graph->initializer[0];
  EXPECT_EQ(stored.name, original.name);
  EXPECT_EQ(stored.dims, original.dims);
  EXPECT_EQ(stored.data_type, original.data_type);
  EXPECT_EQ(stored.doc_string, original.doc_string);
  EXPECT_EQ(stored.metadata_props, original.metadata_props);
  EXPECT_EQ(stored.unknown_fields, original.unknown_fields);
  EXPECT_EQ(stored.data_location, TensorProto::kExternal);
  EXPECT_FALSE(stored.raw_data.has_value());
  // spec §7.2 item 3: exactly [location, length].
  ASSERT_EQ(stored.external_data.size(), 2u);
  EXPECT_EQ(stored.external_data[0].key, "location");
  EXPECT_EQ(stored.external_data[0].value, "encoder_layer_0_attn_q_weight");
  EXPECT_EQ(stored.external_data[1].key, "length");
  EXPECT_EQ(stored.external_data[1].value, "2048");
  // Below the threshold, STRING and sparse tensors stay inline: listed as inline (spec/names.md),
  // but for STRING, which has no fixed-size payload.
  for (const char* name : {"onnx::Conv_123", "just_below", "sparse_values", "scalar"}) {
    ASSERT_NE(archive.find_tensor(name), nullptr) << name;
    EXPECT_TRUE(archive.find_tensor(name)->is_inline) << name;
    EXPECT_EQ(archive.find_tensor(name)->entry, "") << name;
  }
  EXPECT_EQ(archive.find_tensor("labels"), nullptr);
  for (const char* name : {"exactly_1024", "W", "w", "typed", "const_value", "list0", "deep",
                           "fn_const", "fn_default", "train_init", "train_algo"}) {
    EXPECT_NE(archive.find_tensor(name), nullptr) << name;
  }
  EXPECT_EQ(archive.find_tensor("W")->entry, "W");
  EXPECT_EQ(archive.find_tensor("w")->entry, "w_2");
  EXPECT_EQ(archive.find_entry("w_2")->name, "w");
  EXPECT_EQ(archive.find_tensor("deep")->site,
            "graph/node[2]/then_branch/node[0]/body/initializer[0]");
}

TEST(ArchiveSave, ExternalizesSparseTensorsOnlyWhenAsked) {
  ScratchDir dir("archive_sparse");
  const ModelProto model = model_with_tensors_everywhere();
  const auto path = dir / "m.onnxz";
  save(model, path, SaveOptions{.threshold = 0, .externalize_sparse = true});
  const Archive archive = Archive::open(path);
  for (const char* name :
       {"sparse_values", "sparse_indices", "sp_attr_values", "sp_attr_indices"}) {
    EXPECT_NE(archive.find_tensor(name), nullptr) << name;
  }
  ModelProto expected = model;
  normalize(expected);
  ModelProto loaded = load(path);
  normalize(loaded);
  EXPECT_EQ(loaded, expected);
}

TEST(ArchiveSave, TypedFieldsBecomeRawLittleEndianEntries) {
  ScratchDir dir("archive_typed");
  const ModelProto model = test_support::checker_model_typed_fields();
  const auto path = dir / "typed.onnxz";
  save(model, path, SaveOptions{.threshold = 0});
  const Archive archive = Archive::open(path);
  std::size_t checked = 0;
  for (const TensorProto& tensor : model.graph->initializer) {
    const Archive::TensorInfo* info = archive.find_tensor(*tensor.name);
    if (tensor.data_type == TensorProto::kString) {
      EXPECT_EQ(info, nullptr) << "STRING tensors stay inline";
      continue;
    }
    ASSERT_NE(info, nullptr) << *tensor.name;
    const Bytes expected = tensor.raw_data ? to_bytes(tensor.raw_data->view())
                                           : to_bytes(typed_data_to_raw(tensor).span());
    EXPECT_EQ(to_bytes(info->data), expected) << *tensor.name;
    EXPECT_EQ(info->data_type, *tensor.data_type);
    EXPECT_EQ(info->dims, tensor.dims);
    ++checked;
  }
  EXPECT_EQ(checked, 11u);
}

TEST(ArchiveSave, DedupeStoresIdenticalPayloadsOnce) {
  ScratchDir dir("archive_dedupe");
  ModelProto model = test_support::checker_model_typed_fields();
  auto& initializers = model.graph->initializer;
  // A raw twin of a typed tensor, and a tensor of the same size but other bytes.
  const TensorProto& typed = initializers[0];
  TensorProto twin;
  twin.name = "f_twin";
  twin.data_type = TensorProto::kFloat;
  twin.dims = typed.dims;
  twin.raw_data = TensorBytes::owned(typed_data_to_raw(typed));
  initializers.push_back(std::move(twin));
  initializers.push_back(raw_tensor("same_size_other", TensorProto::kFloat, {400}, 99));

  const auto deduped = dir / "deduped.onnxz";
  const auto plain = dir / "plain.onnxz";
  save(model, deduped, SaveOptions{.dedupe = true});
  save(model, plain);
  const std::size_t tensors = expected_entry_count(model, kDefaultExternalThreshold);
  {
    const Archive archive = Archive::open(deduped);
    EXPECT_EQ(archive.zip().entries().size() - 1, tensors - 2);
    EXPECT_EQ(archive.find_tensor("tied_a")->entry, archive.find_tensor("tied_b")->entry);
    EXPECT_EQ(archive.find_tensor("f_typed")->entry, archive.find_tensor("f_twin")->entry);
    EXPECT_NE(archive.find_tensor("same_size_other")->entry, archive.find_tensor("f_typed")->entry);
    const VerifyReport report = verify(deduped);
    EXPECT_TRUE(report.ok()) << error_message_of_verify(report);
  }
  {
    const Archive archive = Archive::open(plain);
    EXPECT_EQ(archive.zip().entries().size() - 1, tensors);
    EXPECT_NE(archive.find_tensor("tied_a")->entry, archive.find_tensor("tied_b")->entry);
  }
  ModelProto expected = model;
  normalize(expected);
  ModelProto loaded = load(deduped);
  normalize(loaded);
  EXPECT_EQ(loaded, expected);
}

TEST(ArchiveSave, IsReproducible) {
  ScratchDir dir("archive_reproducible");
  const ModelProto model = model_with_tensors_everywhere();
  save(model, dir / "a.onnxz");
  save(model, dir / "b.onnxz");
  EXPECT_EQ(read_file_bytes(dir / "a.onnxz"), read_file_bytes(dir / "b.onnxz"));
}

TEST(ArchiveSave, RefusesModelsItCannotWriteCorrectlyAndLeavesNoFile) {
  ScratchDir dir("archive_save_errors");
  const auto path = dir / "m.onnxz";
  struct Case {
    std::string what;
    std::function<void(TensorProto&)> spoil;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {"legacy external data",
       [](TensorProto& t) {
         t.raw_data.reset();
         TensorRef{"weights.bin", 2048}.apply_to(t);
       },
       {"'/encoder/layer.0/attn/q.weight'", "'weights.bin'", "load its external data first"}},
      {"raw and typed",
       [](TensorProto& t) { t.float_data = {1.0f}; },
       {"'/encoder/layer.0/attn/q.weight'", "both raw_data and float_data"}},
      {"size mismatch",
       [](TensorProto& t) {
         t.dims = {16, 33};
       },
       {"'/encoder/layer.0/attn/q.weight'", "2048 bytes", "2112"}},
      {"negative dim",
       [](TensorProto& t) {
         t.dims = {-1, 32};
       },
       {"negative"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ModelProto model = model_with_tensors_everywhere();
    c.spoil(model.graph->initializer[0]);
    const std::string message = error_of(ErrorCode::kInvalidArgument, [&] { save(model, path); });
    for (const std::string& fragment : c.fragments) EXPECT_CONTAINS(message, fragment);
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_TRUE(dir.file_names().empty());
  }
  const std::string message = error_of(ErrorCode::kInvalidArgument, [&] {
    save(model_with_tensors_everywhere(), path, SaveOptions{.alignment = 100});
  });
  EXPECT_CONTAINS(message, "alignment 100");

  // Whether a model saves does not depend on the threshold: a tensor that stays inline is held
  // to the same rule as one that becomes an entry.
  ModelProto model = model_with_tensors_everywhere();
  TensorProto& first = model.graph->initializer[0];
  first.raw_data = TensorBytes::owned(OwnedBytes(first.raw_data->size() - 1));
  for (const std::uint64_t threshold : {std::uint64_t{0}, std::uint64_t{1} << 40}) {
    SCOPED_TRACE(threshold);
    const std::string short_payload = error_of(ErrorCode::kInvalidArgument, [&] {
      save(model, path, SaveOptions{.threshold = threshold});
    });
    EXPECT_CONTAINS(short_payload, path.string() +
                                       ": tensor '/encoder/layer.0/attn/q.weight' at "
                                       "graph/initializer[0]: raw_data holds 2047 bytes, but dims "
                                       "[16, 32] of FLOAT make 2048 bytes (spec §7.3)");
    EXPECT_TRUE(dir.file_names().empty());
  }
}

TEST(ArchiveLoad, FromBytesBorrowsFromTheCallersBufferWithItsToken) {
  ScratchDir dir("archive_bytes");
  const ModelProto model = model_with_tensors_everywhere();
  save(model, dir / "m.onnxz", SaveOptions{.threshold = 0});
  auto buffer = std::make_shared<Bytes>(read_file_bytes(dir / "m.onnxz"));
  const ByteSpan span(*buffer);
  ModelProto loaded = load_bytes(span, buffer);
  const std::uint8_t* const begin = buffer->data();
  const std::uint8_t* const end = begin + buffer->size();
  std::size_t inside = 0;
  for_each_tensor(loaded, [&](const TensorProto& tensor, const TensorSite& site) {
    if (!tensor.raw_data || tensor.raw_data->empty() || is_sparse(site.place)) return;
    if (tensor.data_type == TensorProto::kString) return;
    EXPECT_TRUE(tensor.raw_data->data() >= begin && tensor.raw_data->data() < end) << *tensor.name;
    EXPECT_EQ(tensor.raw_data->owner().get(), buffer.get()) << *tensor.name;
    ++inside;
  });
  EXPECT_GT(inside, 10u);
  buffer.reset();  // The model holds the buffer now.
  ModelProto expected = model;
  normalize(expected);
  normalize(loaded);
  EXPECT_EQ(loaded, expected);
}

// --- ArchiveWriter ---

struct StreamedTensor {
  std::string name;
  std::int32_t data_type;
  std::vector<std::int64_t> dims;
  Bytes bytes;
};

std::vector<StreamedTensor> streamed_tensors() {
  std::vector<StreamedTensor> tensors;
  for (const auto& t : {raw_tensor("enc.w", TensorProto::kFloat, {64, 32}, 1),
                        raw_tensor("enc.b", TensorProto::kFloat, {32}, 2),
                        raw_tensor("emb", TensorProto::kInt64, {100, 10}, 3)}) {
    tensors.push_back({*t.name, *t.data_type, t.dims, to_bytes(t.raw_data->view())});
  }
  return tensors;
}

// The model an exporter would build: metadata-only initializers plus one small inline tensor.
ModelProto streamed_model(const std::vector<StreamedTensor>& tensors,
                          const std::vector<TensorRef>& refs) {
  ModelProto model;
  model.ir_version = 8;
  GraphProto& graph = model.graph.ensure();
  graph.name = "streamed";
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    TensorProto& t = graph.initializer.emplace_back();
    t.name = tensors[i].name;
    t.data_type = tensors[i].data_type;
    t.dims = tensors[i].dims;
    if (i < refs.size())
      refs[i].apply_to(t);
    else
      t.raw_data = TensorBytes::copy_of(tensors[i].bytes);
  }
  graph.initializer.push_back(raw_tensor("small", TensorProto::kInt32, {3}, 4));
  return model;
}

std::vector<TensorRef> add_all(ArchiveWriter& writer, const std::vector<StreamedTensor>& tensors) {
  std::vector<TensorRef> refs;
  refs.push_back(
      writer.add_tensor(tensors[0].name, tensors[0].data_type, tensors[0].dims, tensors[0].bytes));
  refs.push_back(
      writer.add_tensor(tensors[1].name, tensors[1].data_type, tensors[1].dims, tensors[1].bytes));
  const Bytes& third = tensors[2].bytes;
  refs.push_back(writer.add_tensor(
      tensors[2].name, tensors[2].data_type, tensors[2].dims, [&](EntrySink& sink) {
        for (std::size_t at = 0; at < third.size(); at += 1000) {
          sink.write(ByteSpan(third).subspan(at, std::min<std::size_t>(1000, third.size() - at)));
        }
      }));
  return refs;
}

TEST(ArchiveWriter, StreamedArchiveEqualsSaveOfTheInlineModel) {
  ScratchDir dir("archive_writer");
  const std::vector<StreamedTensor> tensors = streamed_tensors();
  const SaveOptions options{.threshold = 100};
  ArchiveWriter writer(dir / "streamed.onnxz", options);
  const std::vector<TensorRef> refs = add_all(writer, tensors);
  EXPECT_EQ(refs[0].location, "enc_w");
  EXPECT_EQ(refs[0].length, 8192u);
  EXPECT_EQ(refs[2].location, "emb");
  EXPECT_EQ(refs[2].length, 8000u);
  EXPECT_FALSE(std::filesystem::exists(dir / "streamed.onnxz"));
  const ModelProto model = streamed_model(tensors, refs);
  const ModelProto before = model;
  writer.finish(model);
  EXPECT_EQ(model, before);

  save(streamed_model(tensors, {}), dir / "saved.onnxz", options);
  EXPECT_EQ(read_file_bytes(dir / "streamed.onnxz"), read_file_bytes(dir / "saved.onnxz"));
  ModelProto loaded = load(dir / "streamed.onnxz");
  EXPECT_EQ(loaded, streamed_model(tensors, {}));
  const VerifyReport report = verify(dir / "streamed.onnxz");
  EXPECT_TRUE(report.ok()) << error_message_of_verify(report);
}

TEST(ArchiveWriter, FinishRefusesBadReferencesAndCanBeRetried) {
  ScratchDir dir("archive_writer_refs");
  const std::vector<StreamedTensor> tensors = streamed_tensors();
  const auto path = dir / "m.onnxz";
  ArchiveWriter writer(path);
  const std::vector<TensorRef> refs = add_all(writer, tensors);

  struct Case {
    std::string what;
    std::function<void(ModelProto&)> spoil;
    std::vector<std::string> fragments;
  };
  const auto first = [](ModelProto& m) -> TensorProto& { return m.graph->initializer[0]; };
  const std::vector<Case> cases = {
      {"unreferenced entry",
       [&](ModelProto& m) { m.graph->initializer.erase(m.graph->initializer.begin() + 1); },
       {"entry 'enc_b'", "no tensor of the model refers to it"}},
      {"unknown location",
       [&](ModelProto& m) { first(m).external_data[0].value = "nope"; },
       {"tensor 'enc.w'", "'nope'", "not an entry added"}},
      {"length mismatch",
       [&](ModelProto& m) { first(m).external_data[1].value = "7"; },
       {"tensor 'enc.w'", "entry 'enc_w'", "length '7'"}},
      {"dims mismatch",
       [&](ModelProto& m) {
         first(m).dims = {64, 31};
       },
       {"tensor 'enc.w'", "entry 'enc_w'", "7936"}},
      {"offset",
       [&](ModelProto& m) {
         auto& kv = first(m).external_data.emplace_back();
         kv.key = "offset";
         kv.value = "5";
       },
       {"tensor 'enc.w'", "offset '5'"}},
      {"checksum",
       [&](ModelProto& m) {
         auto& kv = first(m).external_data.emplace_back();
         kv.key = "checksum";
         kv.value = "abc";
       },
       {"tensor 'enc.w'", "'checksum'"}},
      {"payload too",
       [&](ModelProto& m) { first(m).float_data = {1.0f}; },
       {"tensor 'enc.w'", "entry 'enc_w'", "an external tensor also carries float_data"}},
      // The archive would fail its own verify (an initializer name assigned twice).
      {"name of an initializer already there",
       [&](ModelProto& m) { m.graph->initializer.back().name = "enc.w"; },
       {"tensor 'enc.w' at graph/initializer[3]", "initializer at graph/initializer[0]",
        "may not share"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ModelProto model = streamed_model(tensors, refs);
    c.spoil(model);
    const std::string message =
        error_of(ErrorCode::kInvalidArgument, [&] { writer.finish(model); });
    for (const std::string& fragment : c.fragments) EXPECT_CONTAINS(message, fragment);
    EXPECT_FALSE(std::filesystem::exists(path));
  }
  // The caller may fix the model; an offset of 0 and keys out of order are made canonical.
  ModelProto model = streamed_model(tensors, refs);
  auto& kv = model.graph->initializer[0].external_data;
  std::swap(kv[0], kv[1]);
  auto& offset = kv.emplace_back();
  offset.key = "offset";
  offset.value = "0";
  writer.finish(model);
  const VerifyReport report = verify(path);
  EXPECT_TRUE(report.ok()) << error_message_of_verify(report);
  EXPECT_EQ(load(path), streamed_model(tensors, {}));

  EXPECT_CONTAINS(error_of(ErrorCode::kBadState, [&] { writer.finish(model); }), "after finish");
  EXPECT_CONTAINS(error_of(ErrorCode::kBadState,
                           [&] {
                             writer.add_tensor("x", TensorProto::kFloat,
                                               std::vector<std::int64_t>{1}, Bytes(4));
                           }),
                  "after finish");
}

TEST(ArchiveWriter, RefusesBadTensorsAndLeavesNothingWithoutFinish) {
  ScratchDir dir("archive_writer_errors");
  const auto path = dir / "m.onnxz";
  const std::vector<std::int64_t> dims = {2, 3};
  {
    ArchiveWriter writer(path);
    EXPECT_CONTAINS(error_of(ErrorCode::kInvalidArgument,
                             [&] { writer.add_tensor("t", TensorProto::kFloat, dims, Bytes(20)); }),
                    "20 bytes given, but dims x element size of FLOAT is 24");
    EXPECT_CONTAINS(error_of(ErrorCode::kInvalidArgument,
                             [&] { writer.add_tensor("s", TensorProto::kString, dims, Bytes(6)); }),
                    "STRING");
    EXPECT_CONTAINS(error_of(ErrorCode::kInvalidArgument,
                             [&] {
                               writer.add_tensor("n", TensorProto::kFloat,
                                                 std::vector<std::int64_t>{-2}, Bytes(8));
                             }),
                    "negative");
    // Still usable after refused arguments.
    EXPECT_EQ(writer.add_tensor("t", TensorProto::kFloat, dims, Bytes(24)).location, "t");
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(dir.file_names().empty());
  {
    ArchiveWriter writer(path);
    EXPECT_CONTAINS(error_of(ErrorCode::kInvalidArgument,
                             [&] {
                               writer.add_tensor("t", TensorProto::kFloat, dims,
                                                 [](EntrySink& sink) { sink.write(Bytes(10)); });
                             }),
                    "wrote 10 of the declared 24 bytes");
    EXPECT_EQ(error_of(ErrorCode::kBadState, [&] { writer.finish(ModelProto{}); }).empty(), false);
  }
  EXPECT_TRUE(dir.file_names().empty());
}

// --- Entry names ---

struct EntryNameCase {
  std::string name;
  EntryNameKind kind;
  std::string problem;  // Empty: valid.
};

TEST(EntryNames, OnnxzRule) {
  using enum EntryNameKind;
  const std::vector<EntryNameCase> cases = {
      {"a", kPayload, ""},
      {"_", kPayload, ""},
      {"_a__", kPayload, ""},
      {"Weight_9", kPayload, ""},
      {std::string(255, 'x'), kPayload, ""},
      {"__MODEL_PROTO", kReserved, ""},
      {"__x1", kReserved, ""},
      {"", kPayload, "is empty"},
      {std::string(256, 'x'), kPayload, "is 256 bytes long, more than the 255 allowed"},
      {"9lives", kPayload, "must start with an ASCII letter or an underscore (a C identifier)"},
      {"a-b", kPayload,
       "byte 1 (0x2d) is not an ASCII letter, digit or underscore (a C identifier)"},
      {"a.b", kPayload,
       "byte 1 (0x2e) is not an ASCII letter, digit or underscore (a C identifier)"},
      {"dir/w", kPayload,
       "byte 3 (0x2f) is not an ASCII letter, digit or underscore (a C identifier)"},
      {"..", kPayload, "must start with an ASCII letter or an underscore (a C identifier)"},
      {"w b", kPayload,
       "byte 1 (0x20) is not an ASCII letter, digit or underscore (a C identifier)"},
      {"w\\b", kPayload,
       "byte 1 (0x5c) is not an ASCII letter, digit or underscore (a C identifier)"},
      {std::string("w\0b", 3), kPayload,
       "byte 1 (0x00) is not an ASCII letter, digit or underscore (a C identifier)"},
      {"caf\xc3\xa9", kPayload,
       "byte 3 (0xc3) is not an ASCII letter, digit or underscore (a C identifier)"},
      {"__MODEL_PROTO", kPayload, "names starting with '__' are reserved for the format"},
      {"__", kPayload, "names starting with '__' are reserved for the format"},
      {"MODEL_PROTO", kReserved, "a reserved name must start with '__'"},
      {"_x", kReserved, "a reserved name must start with '__'"},
      {"__a-b", kReserved,
       "byte 3 (0x2d) is not an ASCII letter, digit or underscore (a C identifier)"},
      {"__" + std::string(254, 'x'), kReserved, "is 256 bytes long, more than the 255 allowed"},
  };
  for (const EntryNameCase& c : cases) {
    EXPECT_EQ(entry_name_problem(c.name, c.kind), c.problem) << archive_detail::quote(c.name);
  }
}

TEST(EntryNames, WritersRefuseANameBreakingTheRuleAndSayWhy) {
  EntryNamer namer;
  EXPECT_CONTAINS(error_of(ErrorCode::kInvalidArgument, [&] { namer.reserve("a-b"); }),
                  "entry name 'a-b': byte 1 (0x2d)");
  EXPECT_CONTAINS(error_of(ErrorCode::kInvalidArgument, [&] { namer.reserve("__MODEL_PROTO"); }),
                  "reserved for the format");
  EXPECT_TRUE(namer.reserve("ok"));
}

TEST(EntryNamer, SanitizesReadably) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/encoder/layer.0/attn/MatMul_output_0", "encoder_layer_0_attn_MatMul_output_0"},
      {"onnx::Conv_123", "onnx_Conv_123"},
      {"conv1.weight", "conv1_weight"},
      {"model.layers.10.mlp.down_proj.weight", "model_layers_10_mlp_down_proj_weight"},
      {"123abc", "_123abc"},
      {"", "tensor"},
      {"..", "tensor"},
      {"a/../../b", "a_b"},
      {"__MODEL_PROTO", "_MODEL_PROTO"},
      {"___", "_"},
      {"x:", "x"},
      {"x_", "x_"},
      {"a_/b", "a_b"},
      {"a/_b", "a_b"},
      {"a__b", "a__b"},
      {"\xE6\x9D\x83\xE9\x87\x8D", "tensor"},
      {"poids_\xC3\xA9", "poids_"},
      {std::string("a\0b", 3), "a_b"},
      {"_ORT_MEM_ADDR_", "_ORT_MEM_ADDR_"},
      {"#x", "x"},
  };
  for (const auto& [tensor_name, entry_name] : cases) {
    EXPECT_EQ(EntryNamer::sanitize(tensor_name), entry_name) << tensor_name;
  }
  EXPECT_EQ(EntryNamer::sanitize(std::string(1000, 'x')).size(), EntryNamer::kMaxBaseLength);
}

TEST(EntryNamer, NastyNamesGiveValidUniqueEntriesThatRoundTrip) {
  std::vector<std::string> names = {"W",
                                    "w",
                                    "a.b",
                                    "a/b",
                                    "a_b",
                                    "A_B",
                                    "__MODEL_PROTO",
                                    "_MODEL_PROTO",
                                    "",
                                    "",
                                    "..",
                                    "a/../../b",
                                    "/abs/path",
                                    "C:\\x",
                                    "#x",
                                    "a/_ORT_MEM_ADDR_/b",
                                    "tensor",
                                    "tensor_2",
                                    "Tensor",
                                    std::string("a\0b", 3),
                                    "\xE6\x9D\x83",
                                    "\xE9\x87\x8D",
                                    "\xFF\xFE",
                                    std::string(1000, 'x'),
                                    std::string(1000, 'x') + "y",
                                    std::string(1000, 'X'),
                                    std::string(300, '/'),
                                    "x_2",
                                    "x",
                                    "X",
                                    "X_2"};
  EntryNamer namer;
  std::set<std::string> lowered;
  std::vector<std::string> entries;
  for (const std::string& name : names) {
    const std::string entry = namer.name_for(name);
    EXPECT_NO_THROW(ZipWriter::validate_name(entry)) << entry;
    EXPECT_EQ(archive_detail::location_problem(entry), "") << "a reader would refuse " << entry;
    EXPECT_LE(entry.size(), 255u);
    std::string lower = entry;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_TRUE(lowered.insert(lower).second) << "duplicate " << entry;
    EXPECT_TRUE(namer.is_taken(lower));
    entries.push_back(entry);
  }
  EXPECT_EQ(entries[0], "W");
  EXPECT_EQ(entries[1], "w_2");
  EXPECT_EQ(entries[16], "tensor_4");  // "", "" and ".." took tensor, tensor_2 and tensor_3.
  EXPECT_EQ(entries[17], "tensor_2_2");
  EXPECT_FALSE(namer.reserve("W"));
  EXPECT_TRUE(namer.reserve("fresh"));
  EXPECT_EQ(error_of(ErrorCode::kInvalidArgument, [&] { namer.reserve("a/b"); }).empty(), false);

  // End to end: every one of these tensor names works in an archive.
  ScratchDir dir("archive_names");
  ModelProto model;
  GraphProto& graph = model.graph.ensure();
  for (std::size_t i = 0; i < names.size(); ++i) {
    graph.initializer.push_back(
        raw_tensor("", TensorProto::kUint8, {static_cast<std::int64_t>(i + 1)}, 1));
    graph.initializer.back().name = names[i];
  }
  save(model, dir / "names.onnxz", SaveOptions{.threshold = 0});
  const VerifyReport report = verify(dir / "names.onnxz");
  EXPECT_TRUE(report.ok()) << error_message_of_verify(report);
  EXPECT_EQ(load(dir / "names.onnxz"), model);
  // The extracted folder has one file per entry, on any file system (unique ignoring case).
  if (test_support::find_tool("unzip")) {
    const auto out = dir / "extracted";
    const auto result = test_support::run_tool(
        "unzip -q " + test_support::shell_quote((dir / "names.onnxz").string()) + " -d " +
        test_support::shell_quote(out.string()));
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(out),
                            std::filesystem::directory_iterator()),
              static_cast<std::ptrdiff_t>(names.size() + 1));
  }
}

// --- Load validation (spec §9.4) ---

constexpr char kPayloadName[] = "w";

// The model of the hand-made archives: one FLOAT[4] tensor 'weight' referring to entry 'w'.
ModelProto reference_model() {
  ModelProto model;
  model.ir_version = 8;
  TensorProto& t = model.graph.ensure().initializer.emplace_back();
  t.name = "weight";
  t.data_type = TensorProto::kFloat;
  t.dims = {4};
  TensorRef{kPayloadName, 16}.apply_to(t);
  return model;
}

enum class Layout { kConforming, kModelFirst, kNoModel };

// Writes the archive with ZipWriter, trusting the model as given.
void write_hand_made(const std::filesystem::path& path, const ModelProto& model,
                     Layout layout = Layout::kConforming) {
  ZipWriter zip(path);
  const Bytes payload = test_support::pattern_bytes(16, 5);
  const Bytes model_bytes = serialize_model(model);
  if (layout == Layout::kModelFirst) zip.add(kModelEntryName, model_bytes);
  zip.add(kPayloadName, payload);
  if (layout == Layout::kConforming) zip.add(kModelEntryName, model_bytes);
  zip.finish();
}

struct BadReference {
  std::string what;
  std::function<void(TensorProto&)> spoil;
  ErrorCode code;
  std::vector<std::string> fragments;
};

void set_key(TensorProto& t, const std::string& key, const std::string& value) {
  for (auto& kv : t.external_data) {
    if (kv.key == key) {
      kv.value = value;
      return;
    }
  }
  auto& kv = t.external_data.emplace_back();
  kv.key = key;
  kv.value = value;
}

std::vector<BadReference> bad_references() {
  const auto location = [](const std::string& value) {
    return [value](TensorProto& t) { set_key(t, "location", value); };
  };
  return {
      {"dot-dot", location("../x"), ErrorCode::kCorrupt, {"tensor 'weight'", "'../x'", "'..'"}},
      {"absolute", location("/abs"), ErrorCode::kCorrupt, {"'/abs'", "absolute path"}},
      {"hash", location("#x"), ErrorCode::kCorrupt, {"'#x'", "starts with '#'"}},
      {"ort address",
       location("a/_ORT_MEM_ADDR_/b"),
       ErrorCode::kCorrupt,
       {"tensor 'weight'", "_ORT_MEM_ADDR_"}},
      {"backslash", location("a\\b"), ErrorCode::kCorrupt, {"is a path"}},
      {"reserved", location("__MODEL_PROTO"), ErrorCode::kCorrupt, {"reserved name"}},
      {"unknown entry",
       location("nope"),
       ErrorCode::kCorrupt,
       {"tensor 'weight'", "the location 'nope' names no entry"}},
      {"no location",
       [](TensorProto& t) { t.external_data.erase(t.external_data.begin()); },
       ErrorCode::kCorrupt,
       {"tensor 'weight'", "no 'location'"}},
      {"two locations",
       [](TensorProto& t) { t.external_data.push_back(t.external_data[0]); },
       ErrorCode::kCorrupt,
       {"tensor 'weight'", "2 'location' keys"}},
      {"length vs entry",
       [](TensorProto& t) { set_key(t, "length", "99"); },
       ErrorCode::kCorrupt,
       {"tensor 'weight'", "entry 'w'", "length '99'", "16 bytes"}},
      {"length vs dims",
       [](TensorProto& t) { t.dims = {5}; },
       ErrorCode::kCorrupt,
       {"tensor 'weight'", "entry 'w'", "holds 16 bytes", "is 20"}},
      {"string",
       [](TensorProto& t) { t.data_type = TensorProto::kString; },
       ErrorCode::kCorrupt,
       {"tensor 'weight'", "entry 'w'", "STRING"}},
      {"undefined",
       [](TensorProto& t) { t.data_type.reset(); },
       ErrorCode::kCorrupt,
       {"tensor 'weight'", "UNDEFINED"}},
      {"unknown type",
       [](TensorProto& t) { t.data_type = 99; },
       ErrorCode::kUnsupported,
       {"tensor 'weight'", "entry 'w'", "data type 99"}},
      {"negative dim",
       [](TensorProto& t) { t.dims = {-4}; },
       ErrorCode::kCorrupt,
       {"tensor 'weight'", "negative"}},
      {"offset",
       [](TensorProto& t) { set_key(t, "offset", "5"); },
       ErrorCode::kCorrupt,
       {"tensor 'weight'", "entry 'w'", "offset '5'"}},
      {"raw data too",
       [](TensorProto& t) { t.raw_data = TensorBytes::copy_of(Bytes(16)); },
       ErrorCode::kCorrupt,
       {"tensor 'weight'", "entry 'w'", "raw_data"}},
      {"typed data too",
       [](TensorProto& t) {
         t.float_data = {1, 2, 3, 4};
       },
       ErrorCode::kCorrupt,
       {"tensor 'weight'", "float_data"}},
  };
}

TEST(ArchiveLoad, RefusesEveryBadReferenceNamingTensorAndEntry) {
  ScratchDir dir("archive_bad_refs");
  // The unspoilt archive loads: the cases below fail for their defect only.
  write_hand_made(dir / "good.onnxz", reference_model());
  EXPECT_EQ(load(dir / "good.onnxz").graph->initializer[0].raw_data->size(), 16u);

  for (const BadReference& c : bad_references()) {
    SCOPED_TRACE(c.what);
    ModelProto model = reference_model();
    c.spoil(model.graph->initializer[0]);
    const auto path = dir / "bad.onnxz";
    write_hand_made(path, model);
    for (const std::string& message :
         {error_of(c.code, [&] { load(path); }), error_of(c.code, [&] { Archive::open(path); })}) {
      EXPECT_CONTAINS(message, "bad.onnxz");
      for (const std::string& fragment : c.fragments) EXPECT_CONTAINS(message, fragment);
    }
    const VerifyReport report = verify(path);
    EXPECT_FALSE(report.loadable());
    bool named = false;
    for (const VerifyFinding& f : report.findings) {
      named |= f.severity == VerifyFinding::Severity::kError &&
               f.message.find(c.fragments.back()) != std::string::npos &&
               f.tensor.find("'weight'") != std::string::npos;
    }
    EXPECT_TRUE(named) << error_message_of_verify(report);
  }
}

TEST(ArchiveLoad, RefusesArchivesWithoutTheModelEntryLast) {
  ScratchDir dir("archive_model_entry");
  write_hand_made(dir / "none.onnxz", reference_model(), Layout::kNoModel);
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { load(dir / "none.onnxz"); }),
                  "no entry named '__MODEL_PROTO'");
  write_hand_made(dir / "first.onnxz", reference_model(), Layout::kModelFirst);
  const std::string message = error_of(ErrorCode::kCorrupt, [&] { load(dir / "first.onnxz"); });
  EXPECT_CONTAINS(message, "'__MODEL_PROTO' at offset 0 is not the last entry");
  EXPECT_CONTAINS(message, "entry 'w' follows");

  // Last in the file, but not in the central directory.
  const Bytes model_bytes = serialize_model(reference_model());
  testing::TestEntry payload;
  payload.name = kPayloadName;
  payload.data = test_support::pattern_bytes(16, 5);
  payload.alignment = 64;
  testing::TestEntry model_entry;
  model_entry.name = std::string(kModelEntryName);
  model_entry.data = model_bytes;
  model_entry.alignment = 64;
  testing::ZipBuildOptions build_options;
  build_options.central_order = {1, 0};
  const testing::BuiltZip zip = testing::build_zip({payload, model_entry}, build_options);
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { load_bytes(zip.span(), kNoOwner); }),
                  "central directory record of entry '__MODEL_PROTO'");

  // A model entry that is not a ModelProto.
  ZipWriter writer(dir / "garbage.onnxz");
  writer.add(kModelEntryName, Bytes{0xFF, 0xFF, 0xFF});
  writer.finish();
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { load(dir / "garbage.onnxz"); }),
                  "entry '__MODEL_PROTO'");
}

TEST(ArchiveLoad, AcceptsNonCanonicalReferencesAsFindings) {
  ScratchDir dir("archive_findings");
  ModelProto model = reference_model();
  TensorProto& t = model.graph->initializer[0];
  std::swap(t.external_data[0], t.external_data[1]);
  set_key(t, "offset", "0");
  set_key(t, "checksum", "whatever");
  const auto path = dir / "m.onnxz";
  write_hand_made(path, model);
  const ModelProto loaded = load(path);
  EXPECT_EQ(loaded.graph->initializer[0].raw_data->size(), 16u);
  const VerifyReport report = verify(path);
  EXPECT_TRUE(report.loadable());
  EXPECT_FALSE(report.ok());
  const std::string text = error_message_of_verify(report);
  EXPECT_CONTAINS(text, "not in the order location, length");
  EXPECT_CONTAINS(text, "'offset' key (of 0)");
  EXPECT_CONTAINS(text, "key 'checksum' is not part of an .onnxz reference");
}

// --- verify ---

TEST(ArchiveVerify, ReportsCorruptPayloadsByEntry) {
  ScratchDir dir("archive_verify_crc");
  const auto path = dir / "m.onnxz";
  save(model_with_tensors_everywhere(), path, SaveOptions{.threshold = 0});
  Bytes bytes = read_file_bytes(path);
  std::uint64_t offset = 0;
  {
    const ZipReader zip = ZipReader::from_bytes(bytes, kNoOwner);
    offset = zip.at("W").local->data_offset + 7;
  }
  bytes[offset] ^= 0x40;
  write_bytes(path, bytes);

  const VerifyReport report = verify(path);
  ASSERT_EQ(report.findings.size(), 1u) << error_message_of_verify(report);
  EXPECT_EQ(report.findings[0].severity, VerifyFinding::Severity::kError);
  EXPECT_EQ(report.findings[0].entry, "W");
  EXPECT_CONTAINS(report.findings[0].message, "CRC-32");
  EXPECT_FALSE(report.loadable());
  // load does not read payloads unless asked to.
  EXPECT_NO_THROW(load(path));
  EXPECT_CONTAINS(
      error_of(ErrorCode::kCorrupt, [&] { load(path, LoadOptions{.verify_crc = true}); }),
      "entry 'W'");
}

TEST(ArchiveVerify, ReportsProgressOverTheBytesItsCrcCheckReads) {
  ScratchDir dir("archive_verify_progress");
  ModelProto model = model_with_tensors_everywhere();
  constexpr std::int64_t kFloats = 10 << 20;  // 40 MiB: the meter moves within the entry.
  model.graph->initializer.push_back(raw_tensor("big", TensorProto::kFloat, {kFloats}, 7));
  const auto path = dir / "m.onnxz";
  save(model, path, SaveOptions{.threshold = 0});
  std::uint64_t entry_bytes = 0;
  {
    const ZipReader zip = ZipReader::open(path);  // Closed before the file is changed below.
    for (const ZipEntry& e : zip.entries()) entry_bytes += e.size;
  }
  ASSERT_GT(entry_bytes, std::uint64_t{kFloats} * 4);

  std::vector<ProgressCall> calls;
  VerifyOptions options;
  options.progress = [&](std::uint64_t done, std::uint64_t total) {
    calls.push_back({done, total});
  };
  // On one thread every piece is read on the caller's, which reports each kProgressStepBytes:
  // 0, 16 MiB, 32 MiB, then the total.
  options.threads = 1;
  EXPECT_TRUE(verify(path, options).ok());
  expect_progress_well_formed(calls, entry_bytes);
  EXPECT_GE(calls.size(), 4u);
  EXPECT_LE(calls.size(), 2 + entry_bytes / kProgressStepBytes);

  // On several threads only the caller's reports, so how many calls come between the first and
  // the last depends on which thread read the big entry: the calls are well formed, no more.
  calls.clear();
  options.threads = 4;
  EXPECT_TRUE(verify(path, options).ok());
  expect_progress_well_formed(calls, entry_bytes);
  EXPECT_LE(calls.size(), 2 + entry_bytes / kProgressStepBytes);

  // Nothing to read without the CRC-32 check: a start and an end at 0.
  calls.clear();
  options.check_crc = false;
  EXPECT_TRUE(verify(path, options).ok());
  EXPECT_EQ(calls, (std::vector<ProgressCall>{{0, 0}, {0, 0}}));

  // A corrupt entry is a finding, and the progress still ends at the total.
  Bytes bytes = read_file_bytes(path);
  bytes[ZipReader::from_bytes(bytes, kNoOwner).at("big").local->data_offset + 5] ^= 1;
  write_bytes(path, bytes);
  calls.clear();
  options.check_crc = true;
  const VerifyReport report = verify(path, options);
  ASSERT_EQ(report.findings.size(), 1u) << error_message_of_verify(report);
  EXPECT_EQ(report.findings[0].entry, "big");
  expect_progress_well_formed(calls, entry_bytes);

  // A file that is not a ZIP archive is one finding, and no progress.
  calls.clear();
  test_support::write_file_bytes(dir / "text.onnxz", "hello, not a zip");
  EXPECT_EQ(verify(dir / "text.onnxz", options).findings.size(), 1u);
  EXPECT_TRUE(calls.empty());
}

TEST(ArchiveSave, ExternalizedBytesIsTheTotalSaveReports) {
  ScratchDir dir("archive_externalized_bytes");
  const ModelProto model = model_with_tensors_everywhere();
  for (const std::uint64_t threshold :
       {std::uint64_t{0}, std::uint64_t{16}, kDefaultExternalThreshold}) {
    for (const bool sparse : {false, true}) {
      for (const bool dedupe : {false, true}) {
        SCOPED_TRACE(::testing::Message() << threshold << " " << sparse << " " << dedupe);
        std::vector<ProgressCall> calls;
        SaveOptions options{.threshold = threshold, .dedupe = dedupe, .externalize_sparse = sparse};
        const std::uint64_t expected = externalized_bytes(model, options);
        options.progress = [&](std::uint64_t done, std::uint64_t total) {
          calls.push_back({done, total});
        };
        save(model, dir / "m.onnxz", options);
        expect_progress_well_formed(calls, expected);
        if (threshold == 0 && !dedupe) {
          // Every externalized tensor has an entry of its own: the total is their sizes.
          std::uint64_t entry_bytes = 0;
          const ZipReader zip = ZipReader::open(dir / "m.onnxz");
          for (const ZipEntry& e : zip.entries()) {
            if (e.name != kModelEntryName) entry_bytes += e.size;
          }
          EXPECT_EQ(expected, entry_bytes);
        }
      }
    }
  }
  EXPECT_GT(externalized_bytes(model, SaveOptions{.threshold = 0}),
            externalized_bytes(model, SaveOptions{.threshold = 16}));

  // A tensor save() refuses counts nothing; an EXTERNAL one is not save()'s to write.
  ModelProto odd;
  odd.graph.ensure().initializer.push_back(raw_tensor("ok", TensorProto::kFloat, {4}, 1));
  TensorProto& bad =
      odd.graph->initializer.emplace_back(raw_tensor("bad", TensorProto::kFloat, {4}, 2));
  bad.dims = {5};
  TensorProto& external = odd.graph->initializer.emplace_back();
  external.name = "ext";
  external.data_type = TensorProto::kFloat;
  external.dims = {1000};
  external.data_location = TensorProto::kExternal;
  EXPECT_EQ(externalized_bytes(odd, SaveOptions{.threshold = 0}), 16u);
}

TEST(ArchiveVerify, ReportsUnreferencedEntriesAndNonArchives) {
  ScratchDir dir("archive_verify_misc");
  {
    ZipWriter zip(dir / "extra.onnxz");
    zip.add(kPayloadName, test_support::pattern_bytes(16, 5));
    zip.add("orphan", Bytes(8));
    zip.add("__FUTURE", Bytes(8));
    zip.add(kModelEntryName, serialize_model(reference_model()));
    zip.finish();
  }
  const VerifyReport report = verify(dir / "extra.onnxz");
  EXPECT_TRUE(report.loadable());
  ASSERT_EQ(report.findings.size(), 2u) << error_message_of_verify(report);
  EXPECT_EQ(report.findings[0].entry, "__FUTURE");
  EXPECT_CONTAINS(report.findings[0].message, "unknown reserved entry");
  EXPECT_EQ(report.findings[1].entry, "orphan");
  EXPECT_CONTAINS(report.findings[1].message, "no tensor refers");

  test_support::write_file_bytes(dir / "text.onnxz", "hello, not a zip");
  const VerifyReport text = verify(dir / "text.onnxz");
  ASSERT_EQ(text.findings.size(), 1u);
  EXPECT_EQ(text.findings[0].severity, VerifyFinding::Severity::kError);
  // The file is the finding's place, not part of its message.
  EXPECT_EQ(text.findings[0].place.file, (dir / "text.onnxz").string());
  EXPECT_EQ(text.findings[0].message,
            "not a ZIP archive: 16 bytes cannot hold an end of central directory record (22 "
            "bytes)");
  EXPECT_EQ(to_string(text.findings[0]),
            (dir / "text.onnxz").string() + ": " + text.findings[0].message);
}

TEST(ArchiveVerify, ReportsInlinePayloadsThatDisagreeWithTheirTensor) {
  // save() refuses such models, so the archive is made by hand: the reference model plus inline
  // tensors whose data does not fit their dims, in the main graph and in a node attribute.
  ScratchDir dir("archive_verify_inline");
  ModelProto model = reference_model();
  TensorProto& short_raw = model.graph->initializer.emplace_back();
  short_raw.name = "short";
  short_raw.data_type = TensorProto::kFloat;
  short_raw.dims = {4, 300};
  short_raw.raw_data = TensorBytes::owned(OwnedBytes(100));
  NodeProto& constant = model.graph->node.emplace_back();
  constant.op_type = "Constant";
  constant.output = {"c"};
  AttributeProto& value = constant.attribute.emplace_back();
  value.name = "value";
  value.type = AttributeProto::kTensor;
  TensorProto& both = value.t.ensure();
  both.data_type = TensorProto::kInt64;
  both.dims = {1};
  both.int64_data = {1};
  both.raw_data = TensorBytes::owned(OwnedBytes(8));
  write_hand_made(dir / "m.onnxz", model);

  const VerifyReport report = verify(dir / "m.onnxz");
  ASSERT_EQ(report.findings.size(), 2u) << error_message_of_verify(report);
  const std::string path = (dir / "m.onnxz").string();
  const ZipEntry model_entry = ZipReader::open(dir / "m.onnxz").at(kModelEntryName);
  // The node's attribute tensor comes first: the visitor walks nodes before initializers.
  EXPECT_EQ(report.findings[0].severity, VerifyFinding::Severity::kWarning);
  EXPECT_EQ(report.findings[0].entry, kModelEntryName);
  EXPECT_EQ(report.findings[0].offset, model_entry.local->data_offset);
  EXPECT_EQ(report.findings[0].tensor, "unnamed tensor at graph/node[0]/value");
  // The message is the problem alone; to_string(finding) is the line with its place.
  EXPECT_EQ(report.findings[0].message,
            "carries both raw_data and int64_data; which one is the payload? (spec §9.4 item 5)");
  EXPECT_EQ(to_string(report.findings[0]),
            path +
                ": unnamed tensor at graph/node[0]/value: carries both raw_data and "
                "int64_data; which one is the payload? (spec §9.4 item 5)");
  EXPECT_EQ(report.findings[1].tensor, "tensor 'short' at graph/initializer[1]");
  EXPECT_EQ(report.findings[1].place.tensor, report.findings[1].tensor);
  EXPECT_EQ(to_string(report.findings[1]),
            path +
                ": tensor 'short' at graph/initializer[1]: raw_data holds 100 bytes, but dims "
                "[4, 300] of FLOAT make 4800 bytes (spec §9.4 item 5)");
  // A reader passes inline tensors through: the archive loads.
  EXPECT_TRUE(report.loadable());
  EXPECT_EQ(load(dir / "m.onnxz").graph->initializer[1].raw_data->size(), 100u);
}

TEST(ArchiveVerify, ReportsDeflatedAndUnalignedArchivesOfOtherTools) {
  const auto python = test_support::find_tool("/usr/bin/python3");
  if (!python) GTEST_SKIP() << "no /usr/bin/python3";
  ScratchDir dir("archive_verify_python");
  ModelProto model = reference_model();
  write_bytes(dir / "model.bin", serialize_model(model));
  const Bytes payload = test_support::pattern_bytes(16, 5);
  write_bytes(dir / "w.bin", payload);
  const std::string script =
      "import sys, zipfile\n"
      "d = sys.argv[1]\n"
      "for name, method in (('deflated', zipfile.ZIP_DEFLATED), ('stored', zipfile.ZIP_STORED)):\n"
      "    with zipfile.ZipFile(d + '/' + name + '.onnxz', 'w', method) as z:\n"
      "        z.write(d + '/w.bin', 'w')\n"
      "        z.write(d + '/model.bin', '__MODEL_PROTO')\n";
  test_support::write_file_bytes(dir / "make.py", script);
  const auto result = test_support::run_tool(test_support::shell_quote(python->string()) + " " +
                                             test_support::shell_quote((dir / "make.py").string()) +
                                             " " + test_support::shell_quote(dir.path().string()));
  ASSERT_EQ(result.exit_code, 0) << result.output;

  for (const char* name : {"deflated", "stored"}) {
    SCOPED_TRACE(name);
    const auto path = dir / (std::string(name) + ".onnxz");
    const VerifyReport report = verify(path);
    EXPECT_TRUE(report.loadable()) << error_message_of_verify(report);
    EXPECT_FALSE(report.ok());
    const std::string text = error_message_of_verify(report);
    EXPECT_CONTAINS(text, std::string(name) == "deflated" ? "deflated" : "unaligned");
    EXPECT_CONTAINS(text, "modification date/time");
    // Parsing `__MODEL_PROTO` with no_copy (an inflated copy, for the deflated archive): what the
    // model borrows outlives the inflated bytes' scope (ASan's check).
    VerifyOptions no_copy;
    no_copy.parse.no_copy = true;
    no_copy.parse.raw_data_threshold = 0;
    EXPECT_EQ(error_message_of_verify(verify(path, no_copy)), text);
    const ModelProto loaded = load(path);
    EXPECT_EQ(to_bytes(loaded.graph->initializer[0].raw_data->view()), payload);
    const Archive archive = Archive::open(path);
    EXPECT_EQ(archive.find_tensor("weight")->zero_copy, std::string(name) == "stored");
    EXPECT_EQ(to_bytes(archive.find_tensor("weight")->data), payload);
  }
}

// An archive of another tool with a zip bomb: a 2 MiB tensor of zeros deflated to about 2 KB,
// and a small deflated tensor. Open and load refuse the bomb by its ratio (naming the entry and
// the option), verify reports it as an error; Archive::open without inflating payloads reads
// only the model and sizes, as `onnxzip info` does; a raised limit lets everything through.
TEST(ArchiveLoad, DeflatedBombsAreRefusedUnlessTrustedAndNeverInflatedForTheModelAlone) {
  ScratchDir dir("archive_bomb");
  ModelProto model;
  model.ir_version = 8;
  GraphProto& graph = model.graph.ensure();
  const Bytes zeros(2 << 20, 0);
  const Bytes small = test_support::pattern_bytes(4096, 3);
  for (const auto& [name, bytes] : {std::pair{"bomb", &zeros}, std::pair{"small", &small}}) {
    TensorProto& t = graph.initializer.emplace_back();
    t.name = name;
    t.data_type = TensorProto::kUint8;
    t.dims = {static_cast<std::int64_t>(bytes->size())};
    TensorRef{name, bytes->size()}.apply_to(t);
  }
  const Bytes model_bytes = serialize_model(model);
  std::vector<testing::TestEntry> entries(3);
  entries[0].name = "bomb";
  entries[0].data = zeros;
  entries[1].name = "small";
  entries[1].data = small;
  entries[2].name = std::string(kModelEntryName);
  entries[2].data = model_bytes;
  for (testing::TestEntry& e : entries) e.method = zip::kMethodDeflated;
  const std::filesystem::path path = dir / "bomb.onnxz";
  write_bytes(path, testing::build_zip(entries).bytes);

  for (const std::string& message :
       {error_of(ErrorCode::kLimitExceeded, [&] { (void)load(path); }),
        error_of(ErrorCode::kLimitExceeded, [&] { (void)Archive::open(path); })}) {
    EXPECT_CONTAINS(message, "bomb.onnxz: entry 'bomb'");
    EXPECT_CONTAINS(message, "to 2097152 bytes");
    EXPECT_CONTAINS(message, "above the limit of 100:1");
    EXPECT_CONTAINS(message, "max_compression_ratio");
  }
  const VerifyReport report = verify(path);
  EXPECT_FALSE(report.loadable());
  EXPECT_CONTAINS(error_message_of_verify(report), "entry 'bomb' at offset 0: deflated from");

  LoadOptions model_only;
  model_only.inflate_payloads = false;
  const Archive archive = Archive::open(path, model_only);
  EXPECT_EQ(archive.model(), model);
  ASSERT_EQ(archive.tensors().size(), 2u);
  for (const Archive::TensorInfo& info : archive.tensors()) {
    EXPECT_FALSE(info.zero_copy);
    EXPECT_TRUE(info.data.empty()) << info.name;
  }
  EXPECT_EQ(archive.zip().at("bomb").size, zeros.size());
  // load() resolves every payload, whatever inflate_payloads says.
  EXPECT_EQ(error_of(ErrorCode::kLimitExceeded, [&] { (void)load(path, model_only); }).empty(),
            false);

  LoadOptions trusting;
  trusting.limits.max_compression_ratio = 0;
  const ModelProto loaded = load(path, trusting);
  EXPECT_EQ(to_bytes(loaded.graph->initializer[0].raw_data->view()), zeros);
  EXPECT_EQ(to_bytes(loaded.graph->initializer[1].raw_data->view()), small);
  VerifyOptions trusting_verify;
  trusting_verify.limits.max_compression_ratio = 0;
  EXPECT_TRUE(verify(path, trusting_verify).loadable());
}

TEST(ArchiveVerify, AcceptsEveryAlignment) {
  ScratchDir dir("archive_verify_alignment");
  for (const std::uint32_t alignment : {64u, 128u, 4096u, 65536u}) {
    SCOPED_TRACE(alignment);
    const auto path = dir / ("a" + std::to_string(alignment) + ".onnxz");
    save(model_with_tensors_everywhere(), path,
         SaveOptions{.alignment = alignment, .threshold = 0});
    const VerifyReport report = verify(path);
    EXPECT_TRUE(report.ok()) << error_message_of_verify(report);
  }
}

// spec §4.4: with A = 65536 a header whose padding would be 1 to 5 bytes moves 64 bytes on.
TEST(ArchiveVerify, AcceptsTheGapsOfAlignment65536) {
  ScratchDir dir("archive_verify_gap");
  const auto path = dir / "gap.onnxz";
  ArchiveWriter writer(path, SaveOptions{.alignment = 65536});
  // Entry "a" has its data at 65536; "b"'s header then ends 3 bytes before the next boundary.
  const std::vector<std::int64_t> a_dims = {65502};
  const std::vector<std::int64_t> b_dims = {10};
  ModelProto model;
  GraphProto& graph = model.graph.ensure();
  for (const auto& [name, dims] : {std::pair{"a", a_dims}, std::pair{"b", b_dims}}) {
    const Bytes bytes = test_support::pattern_bytes(static_cast<std::size_t>(dims[0]), 1);
    TensorProto& t = graph.initializer.emplace_back();
    t.name = name;
    t.data_type = TensorProto::kUint8;
    t.dims = dims;
    writer.add_tensor(name, TensorProto::kUint8, dims, bytes).apply_to(t);
  }
  writer.finish(model);
  bool gap = false;
  const ZipReader zip = ZipReader::open(path);
  for (const ZipFinding& f : zip.findings()) gap |= f.kind == ZipFindingKind::kGap;
  ASSERT_TRUE(gap) << "the layout did not need a gap";
  const VerifyReport report = verify(path);
  EXPECT_TRUE(report.ok()) << error_message_of_verify(report);
}

// --- The view model ---

TEST(ArchiveView, RefersToStoredPayloadsInPlaceAndInlinesTheRest) {
  ScratchDir dir("archive_view");
  const ModelProto model = test_support::checker_model_mlp_with_if();
  const auto archive_path = dir / "mlp.onnxz";
  save(model, archive_path);
  write_view_model(archive_path, dir / "mlp.onnx");

  const ModelProto view = parse_model_file(dir / "mlp.onnx");
  const Archive archive = Archive::open(archive_path);
  const TensorProto& weight = view.graph->initializer[0];
  ASSERT_EQ(weight.external_data.size(), 3u);
  EXPECT_EQ(weight.external_data[0].value, "mlp.onnxz");
  const Archive::TensorInfo* info = archive.find_tensor(*weight.name);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(weight.external_data[1].value, std::to_string(info->offset.value()));
  EXPECT_EQ(weight.external_data[2].value, std::to_string(info->data.size()));
  // The bytes at (offset, length) of the archive file are the payload.
  const Bytes file = read_file_bytes(archive_path);
  EXPECT_EQ(Bytes(file.begin() + *info->offset, file.begin() + *info->offset + info->data.size()),
            to_bytes(info->data));
  // The Constant's value stays inline; the If branch's initializer is external.
  const TensorProto& constant = *view.graph->node[2].attribute[0].t;
  EXPECT_FALSE(constant.data_location.has_value());
  EXPECT_EQ(constant.raw_data, model.graph->node[2].attribute[0].t->raw_data);
  const TensorProto& then_weight = view.graph->node[4].attribute[0].g->initializer[0];
  EXPECT_EQ(then_weight.data_location, TensorProto::kExternal);

  EXPECT_CONTAINS(error_of(ErrorCode::kInvalidArgument,
                           [&] {
                             std::filesystem::create_directory(dir / "sub");
                             write_view_model(archive_path, dir / "sub" / "v.onnx");
                           }),
                  "the archive's folder");
  EXPECT_CONTAINS(
      error_of(ErrorCode::kInvalidArgument, [&] { write_view_model(archive_path, archive_path); }),
      "overwrite the archive");
}

}  // namespace
}  // namespace onnxzip

namespace onnxzip {
namespace {

// FileAccess::kRead: the archive read into memory, so it may shrink (or be rewritten) while the
// model lives; mapped, touching the model then would raise SIGBUS.
TEST(ArchiveLoad, ReadAccessOwnsTheArchiveSoItMayShrinkAfterwards) {
  test_support::ScratchDir dir("archive_read_access");
  ModelProto expected = test_support::model_with_tensors_everywhere();
  save(expected, dir / "m.onnxz", SaveOptions{.threshold = 0});
  normalize(expected);
  LoadOptions options;
  options.access = FileAccess::kRead;
  const ModelProto model = load(dir / "m.onnxz", options);
  const Archive archive = Archive::open(dir / "m.onnxz", options);
  VerifyOptions verify_options;
  verify_options.access = FileAccess::kRead;
  EXPECT_TRUE(verify(dir / "m.onnxz", verify_options).ok());
  const auto payload_sum = [&] {
    std::uint64_t sum = 0;
    for (const Archive::TensorInfo& info : archive.tensors()) {
      for (const std::uint8_t byte : info.data) sum = sum * 31 + byte;
    }
    return sum;
  };
  const std::uint64_t before = payload_sum();
  std::filesystem::resize_file(dir / "m.onnxz", 0);
  EXPECT_EQ(model, expected);
  EXPECT_EQ(payload_sum(), before);
  EXPECT_FALSE(archive.tensors().empty());
}

TEST(ArchiveLoad, AnArchivePathThatIsNotARegularFileIsAnError) {
  test_support::ScratchDir dir("archive_not_regular");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  const std::string expected = (dir / "fifo").string() + ": not a regular file (a FIFO)";
  for (const FileAccess access : {FileAccess::kMap, FileAccess::kRead}) {
    LoadOptions options;
    options.access = access;
    try {
      load(dir / "fifo", options);
      ADD_FAILURE() << "loaded a FIFO";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kIo);
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace onnxzip
