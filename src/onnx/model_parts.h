// Private to the library: a serialized ModelProto taken apart at its top level, for an edit of
// the model's properties (edit.cpp) that must not pay for its graph.
//
// A model's graph, functions and training_info hold nearly all its bytes and every tensor; its
// other fields (metadata_props, producer, doc_string, opset_import...) are a few hundred bytes.
// split_model parses only the latter and keeps the former as the wire bytes they are; join_model
// serializes the changed properties with those bytes put back, unparsed. walk_kept_tensors finds
// the TensorProtos inside the kept bytes without building the graph, for the archive's reference
// check. The split keeps the heavy fields byte for byte: a property edit rewrites nothing of the
// graph, not even an encoding another writer chose differently from ours.
#ifndef ONNXZIP_SRC_MODEL_PARTS_H_
#define ONNXZIP_SRC_MODEL_PARTS_H_

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "onnxzip/bytes.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/onnx_model.h"
#include "onnxzip/tensor.h"

namespace onnxzip::detail {

// One top-level field of a serialized ModelProto, kept whole.
struct KeptField {
  std::uint32_t number = 0;  // 7 graph, 20 training_info or 25 functions.
  ByteSpan field;            // Tag, length and payload, borrowed from the split bytes.
  ByteSpan payload;          // The message inside.
};

struct SplitModel {
  // Every field but the kept ones, parsed (strings owned): graph is absent, training_info and
  // functions are empty.
  ModelProto properties;
  // The graph, training_info and functions fields in the order of the bytes.
  std::vector<KeptField> kept;
};

// Splits a serialized ModelProto. A graph, training_info or functions field whose wire type is
// not length-delimited is not kept but parsed with the properties, so that it fails as it would
// in parse_model. Errors: parse_model's, for the properties; the kept bytes are not looked into.
SplitModel split_model(ByteSpan bytes, const ParseOptions& options, std::string_view source);

// Whether split_model takes `bytes` apart: every top-level field whole (a malformed one, or a
// group, is left to parse_model, which reports the first with its offset and takes the second).
bool splits_whole(ByteSpan bytes) noexcept;

// `properties` serialized, with `kept` (split_model's, whose bytes must still be alive) put back
// at their field numbers' places: each before the first field of a larger number. Repeated
// fields keep their order. `properties` must hold no graph, training_info or functions
// (Error(kInvalidArgument) otherwise): the kept fields are those.
OwnedBytes join_model(const ModelProto& properties, const std::vector<KeptField>& kept);

using KeptTensorVisitor = std::function<void(ByteSpan tensor, const TensorSite& site)>;

// Calls `visit` with the serialized bytes of every TensorProto inside `kept` that
// for_each_tensor would visit in the model they came from (initializers, sparse initializer
// values and indices, attribute tensors, in subgraphs and functions at any depth), and the site
// for_each_tensor would give it, in the order of the bytes. Returns true when it found them all
// unambiguously; false, possibly after some visits, when the bytes are malformed, nest deeper
// than `max_depth` (the model counting as 1), or give a singular message on the way to a tensor
// twice (protobuf merges the two: the tensors then differ from their occurrences). A caller then
// parses the model whole, which reports the fault or merges as protobuf does. `visit` may throw;
// the walk does not catch what it throws.
bool walk_kept_tensors(const std::vector<KeptField>& kept, std::uint32_t max_depth,
                       const KeptTensorVisitor& visit);
// The same, without the sites.
bool walk_kept_tensors(const std::vector<KeptField>& kept, std::uint32_t max_depth,
                       const std::function<void(ByteSpan tensor)>& visit);

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_MODEL_PARTS_H_
