#include "model_parts.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <span>
#include <string>

#include "onnxzip/error.h"
#include "onnxzip/protobuf_wire.h"

namespace onnxzip::detail {
namespace {

using wire::ScannedField;
using wire::ScanStatus;
using wire::WireType;

// ModelProto's field numbers (onnx.proto) of the parts split_model keeps.
constexpr std::uint32_t kGraphField = 7;
constexpr std::uint32_t kTrainingInfoField = 20;
constexpr std::uint32_t kFunctionsField = 25;

bool is_kept(std::uint32_t number) noexcept {
  return number == kGraphField || number == kTrainingInfoField || number == kFunctionsField;
}

// A whole field of wire type 0, 1, 2 or 5 (groups are rare enough in ONNX to
// leave to the full parser).
bool whole_field(const ScannedField& field) noexcept {
  return field.value.status == ScanStatus::kOk;
}

// The messages on the way from a model's kept fields to its tensors, and where
// each leads (onnx.proto field numbers; the TensorWalker of tensor.cpp follows
// the same fields).
enum class Kind : std::uint8_t {
  kGraph,
  kNode,
  kAttribute,
  kSparse,
  kTrainingInfo,
  kFunction,
  kTensor,  // Where a walk ends: the bytes go to the visitor.
};

struct Child {
  std::uint32_t number;
  Kind kind;
  bool singular;  // Protobuf merges two occurrences into one message.
};

constexpr std::array kGraphChildren = {
    Child{1, Kind::kNode, false},     // node
    Child{5, Kind::kTensor, false},   // initializer
    Child{15, Kind::kSparse, false},  // sparse_initializer
};
constexpr std::array kNodeChildren = {
    Child{5, Kind::kAttribute, false},  // attribute
};
constexpr std::array kAttributeChildren = {
    Child{5, Kind::kTensor, true},    // t
    Child{6, Kind::kGraph, true},     // g
    Child{10, Kind::kTensor, false},  // tensors
    Child{11, Kind::kGraph, false},   // graphs
    Child{22, Kind::kSparse, true},   // sparse_tensor
    Child{23, Kind::kSparse, false},  // sparse_tensors
};
constexpr std::array kSparseChildren = {
    Child{1, Kind::kTensor, true},  // values
    Child{2, Kind::kTensor, true},  // indices
};
constexpr std::array kTrainingInfoChildren = {
    Child{1, Kind::kGraph, true},  // initialization
    Child{2, Kind::kGraph, true},  // algorithm
};
constexpr std::array kFunctionChildren = {
    Child{7, Kind::kNode, false},        // node
    Child{11, Kind::kAttribute, false},  // attribute_proto
};

std::span<const Child> children_of(Kind kind) noexcept {
  switch (kind) {
    case Kind::kGraph:
      return kGraphChildren;
    case Kind::kNode:
      return kNodeChildren;
    case Kind::kAttribute:
      return kAttributeChildren;
    case Kind::kSparse:
      return kSparseChildren;
    case Kind::kTrainingInfo:
      return kTrainingInfoChildren;
    case Kind::kFunction:
      return kFunctionChildren;
    case Kind::kTensor:
      break;
  }
  return {};
}

class TensorFinder final {
 public:
  TensorFinder(std::uint32_t max_depth, const std::function<void(ByteSpan)>& visit)
      : max_depth_(max_depth), visit_(visit) {}

  // Walks one message of `kind` at `depth`; false on anything split_model's
  // contract leaves to the full parser.
  bool message(ByteSpan bytes, Kind kind, std::uint32_t depth) {
    if (depth > max_depth_) return false;
    const std::span<const Child> children = children_of(kind);
    std::uint32_t singular_seen = 0;  // Bit i: children[i] met.
    const std::uint8_t* p = bytes.data();
    const std::uint8_t* const end = p + bytes.size();
    while (p < end) {
      const ScannedField field = wire::scan_field(p, end);
      if (!whole_field(field)) return false;
      p = field.value.next;
      for (std::size_t i = 0; i < children.size(); ++i) {
        const Child& child = children[i];
        if (child.number != field.tag.number) continue;
        if (field.tag.type != WireType::kLengthDelimited) return false;
        if (child.singular) {
          if ((singular_seen & (1U << i)) != 0) return false;
          singular_seen |= 1U << i;
        }
        if (child.kind == Kind::kTensor) {
          if (depth + 1 > max_depth_) return false;
          visit_(field.value.payload());
        } else if (!message(field.value.payload(), child.kind, depth + 1)) {
          return false;
        }
        break;
      }
    }
    return true;
  }

 private:
  std::uint32_t max_depth_;
  const std::function<void(ByteSpan)>& visit_;
};

}  // namespace

SplitModel split_model(ByteSpan bytes, const ParseOptions& options, std::string_view source) {
  SplitModel split;
  std::vector<std::uint8_t> rest;  // The properties' fields, as they are.
  const std::uint8_t* p = bytes.data();
  const std::uint8_t* const end = p + bytes.size();
  while (p < end) {
    const ScannedField field = wire::scan_field(p, end);
    if (!whole_field(field)) {
      throw Error(ErrorCode::kCorrupt, std::string(source) +
                                           ": ModelProto: a malformed field at byte " +
                                           std::to_string(p - bytes.data()));
    }
    const std::uint8_t* const field_end = field.value.next;
    if (is_kept(field.tag.number) && field.tag.type == WireType::kLengthDelimited) {
      split.kept.push_back({field.tag.number, ByteSpan(p, static_cast<std::size_t>(field_end - p)),
                            field.value.payload()});
    } else {
      rest.insert(rest.end(), p, field_end);
    }
    p = field_end;
  }
  split.properties = parse_model(ByteSpan(rest), options, source);
  return split;
}

OwnedBytes join_model(const ModelProto& properties, const std::vector<KeptField>& kept) {
  if (properties.graph || !properties.training_info.empty() || !properties.functions.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "join_model: the properties hold a graph, training_info or "
                "functions of their "
                "own");
  }
  const std::vector<std::uint8_t> head = serialize_model(properties);
  std::vector<const KeptField*> order;
  std::size_t size = head.size();
  for (const KeptField& field : kept) {
    order.push_back(&field);
    size += field.field.size();
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const KeptField* a, const KeptField* b) { return a->number < b->number; });

  OwnedBytes joined(size);
  std::uint8_t* out = joined.mutable_span().data();
  const auto put = [&](const std::uint8_t* from, std::size_t count) {
    if (count != 0) std::memcpy(out, from, count);
    out += count;
  };
  auto next = order.begin();
  const std::uint8_t* p = head.data();
  const std::uint8_t* const end = p + head.size();
  while (p < end) {
    const ScannedField field = wire::scan_field(p, end);
    // Our own serialization: whole fields. Were it not, the rest goes out as it
    // is.
    const bool whole = whole_field(field);
    for (; whole && next != order.end() && (*next)->number < field.tag.number; ++next) {
      put((*next)->field.data(), (*next)->field.size());
    }
    const std::uint8_t* const field_end = whole ? field.value.next : end;
    put(p, static_cast<std::size_t>(field_end - p));
    p = field_end;
  }
  for (; next != order.end(); ++next) put((*next)->field.data(), (*next)->field.size());
  return joined;
}

bool walk_kept_tensors(const std::vector<KeptField>& kept, std::uint32_t max_depth,
                       const std::function<void(ByteSpan tensor)>& visit) {
  TensorFinder finder(max_depth, visit);
  bool graph_seen = false;
  for (const KeptField& field : kept) {
    switch (field.number) {
      case kGraphField:
        // Two graph fields merge into one graph.
        if (graph_seen) return false;
        graph_seen = true;
        if (!finder.message(field.payload, Kind::kGraph, 2)) return false;
        break;
      case kTrainingInfoField:
        if (!finder.message(field.payload, Kind::kTrainingInfo, 2)) return false;
        break;
      case kFunctionsField:
        if (!finder.message(field.payload, Kind::kFunction, 2)) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

}  // namespace onnxzip::detail
