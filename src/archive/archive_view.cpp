// write_view_model(): a legacy .onnx whose initializers point into the archive file itself.
//
// ONNX external data is (location, offset, length) into a file in the model's folder. A stored
// payload entry is exactly such a byte range of the archive, so a model referring to
// (archive file name, data offset, size) lets today's runtimes load the archive in place.
#include <set>
#include <utility>

#include "archive_internal.h"
#include "onnxzip/tensor.h"
#include "output_file.h"

namespace onnxzip {
namespace {

using archive_detail::quote;

// The initializers the reference onnx package resolves as external data: those of the main
// graph and of subgraphs reached through GRAPH / GRAPHS attributes whose type is set (its
// loader, onnx.external_data_helper, walks exactly these). Attribute tensors, sparse tensors,
// function and training-info tensors are refused or skipped as external data by today's runtimes.
void collect_loadable_initializers(const GraphProto& graph, std::set<const TensorProto*>& out) {
  for (const TensorProto& tensor : graph.initializer) out.insert(&tensor);
  for (const NodeProto& node : graph.node) {
    for (const AttributeProto& attribute : node.attribute) {
      const std::int32_t type = attribute.type.value_or(AttributeProto::kUndefined);
      if (type == AttributeProto::kGraph && attribute.g) {
        collect_loadable_initializers(*attribute.g, out);
      }
      if (type == AttributeProto::kGraphs) {
        for (const GraphProto& g : attribute.graphs) collect_loadable_initializers(g, out);
      }
    }
  }
}

std::filesystem::path folder_of(const std::filesystem::path& path) {
  return std::filesystem::weakly_canonical(std::filesystem::absolute(path).parent_path());
}

}  // namespace

void write_view_model(const std::filesystem::path& archive_path,
                      const std::filesystem::path& view_path, const LoadOptions& options,
                      const OutputFileOptions& output) {
  const std::string label =
      "view " + quote(view_path.string()) + " of " + quote(archive_path.string());
  if (!archive_path.has_filename() || !view_path.has_filename()) {
    throw Error(ErrorCode::kInvalidArgument, {.file = label}, "both paths must name files");
  }
  // onnx resolves locations against the model's folder and refuses '..', so the view must sit
  // next to the archive.
  if (folder_of(archive_path) != folder_of(view_path)) {
    throw Error(ErrorCode::kInvalidArgument,
                label +
                    ": the view must be in the archive's folder (external data locations "
                    "are file names relative to the model's folder)");
  }
  if (archive_path.filename() == view_path.filename()) {
    throw Error(ErrorCode::kInvalidArgument, {.file = label},
                "the view would overwrite the archive");
  }
  const std::string location = archive_path.filename().string();

  LoadOptions load_options = options;
  load_options.inflate_payloads = true;  // Deflated payloads are copied into the view.
  const Archive archive = Archive::open(archive_path, load_options);
  ParseOptions parse = options.parse;
  parse.no_copy = true;  // Inline payloads borrow from the archive while the view is written.
  ModelProto view = parse_message<ModelProto>(archive.model_bytes(), archive.owner(), parse,
                                              archive.zip().source_name());
  std::set<const TensorProto*> loadable;
  if (view.graph) collect_loadable_initializers(*view.graph, loadable);

  for_each_tensor(view, [&](TensorProto& tensor, const TensorSite&) {
    if (tensor.data_location != TensorProto::kExternal) return;
    // Archive::open validated every reference, so the location resolves.
    const std::string_view entry = *detail::read_external_data(tensor).location;
    const Archive::TensorInfo& info = *archive.find_entry(entry);
    // A zero length would make onnx read to the end of the file; deflated data is no byte range.
    // A small tensor may be one that ONNX Runtime's shape inference reads (a Reshape's shape),
    // and it reads no external data while it builds the graph: below the threshold the onnx
    // package itself never externalizes, tensors go inline.
    if (loadable.contains(&tensor) && info.zero_copy &&
        info.data.size() >= kDefaultExternalThreshold) {
      tensor.external_data.clear();
      for (const auto& [key, value] :
           {std::pair<std::string_view, std::string>{"location", location},
            {"offset", std::to_string(*info.offset)},
            {"length", std::to_string(info.data.size())}}) {
        StringStringEntryProto& kv = tensor.external_data.emplace_back();
        kv.key = std::string(key);
        kv.value = value;
      }
      return;
    }
    // `archive` outlives `view`, which is written before either goes.
    tensor.raw_data = TensorBytes::borrowed(info.data, kNoOwner);
    tensor.external_data.clear();
    tensor.data_location.reset();
  });
  AtomicOutputFile file(view_path, output, std::size_t{1} << 16);
  serialize_model(view, file);
  file.commit();
}

}  // namespace onnxzip
