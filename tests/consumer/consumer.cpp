// What a user of the installed library does, through its public headers only: save a model with
// tensors, open the archive and read a tensor, load the model, verify the archive, edit its
// properties, and open it again. Every step checks a real result. Exits non-zero on a mismatch.
#include <onnxzip/archive.h>
#include <onnxzip/edit.h>
#include <onnxzip/error.h>
#include <onnxzip/onnx_codec.h>
#include <onnxzip/onnx_model.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "consumer: %s\n", what);
    ++failures;
  }
}

// A float tensor of `count` elements whose bytes are 0, 1, 2... (mod 251).
onnxzip::TensorProto weights(const char* name, std::int64_t count) {
  onnxzip::TensorProto tensor;
  tensor.name = name;
  tensor.data_type = onnxzip::TensorProto::kFloat;
  tensor.dims = {count};
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(count) * 4);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i % 251);
  tensor.raw_data = onnxzip::TensorBytes::copy_of(bytes);
  return tensor;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path();
  const fs::path path = dir / "consumer.onnxz";
  try {
    onnxzip::ModelProto model;
    model.ir_version = 8;
    model.producer_name = "consumer";
    onnxzip::GraphProto& graph = model.graph.emplace();
    graph.name = "g";
    graph.initializer.push_back(weights("w", 4096));
    graph.initializer.push_back(weights("b", 16));
    const onnxzip::TensorProto expected = graph.initializer[0];
    onnxzip::save(model, path);

    {
      const onnxzip::Archive archive = onnxzip::Archive::open(path);
      const onnxzip::Archive::TensorInfo* w = archive.find_tensor("w");
      check(w != nullptr, "open: tensor w is not external");
      if (w != nullptr) {
        check(w->offset.value_or(1) % 64 == 0, "open: payload of w is not 64-byte aligned");
        check(onnxzip::equal_bytes(w->data, expected.raw_data->view()),
              "open: payload of w differs from what was saved");
      }
    }

    const onnxzip::ModelProto loaded = onnxzip::load(path);
    check(loaded.graph && loaded.graph->initializer.size() == 2, "load: initializers lost");
    if (loaded.graph && !loaded.graph->initializer.empty()) {
      check(loaded.graph->initializer[0] == expected, "load: tensor w differs");
    }
    check(onnxzip::verify(path).ok(), "verify: findings on a fresh archive");

    onnxzip::edit_model_properties(path, [](onnxzip::ModelProto& m) {
      m.producer_name = "edited";
      onnxzip::StringStringEntryProto& prop = m.metadata_props.emplace_back();
      prop.key = "owner";
      prop.value = "consumer";
    });

    const onnxzip::Archive reopened = onnxzip::Archive::open(path);
    const onnxzip::ModelProto edited =
        onnxzip::parse_model(reopened.model_bytes(), {}, path.string());
    check(edited.producer_name && edited.producer_name->view() == "edited",
          "edit: producer_name not changed");
    check(edited.metadata_props.size() == 1 && edited.metadata_props[0].key &&
              edited.metadata_props[0].key->view() == "owner",
          "edit: metadata_props not added");
    check(onnxzip::verify(path).ok(), "verify: findings after the edit");
    check(onnxzip::load(path).graph->initializer[0] == expected, "edit: tensor w changed");
  } catch (const onnxzip::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
  fs::remove(path);
  if (failures != 0) return 1;
  std::puts("consumer ok");
  return 0;
}
