// Tensor payloads: element sizes, byte sizes, typed fields <-> raw bytes, finding every tensor
// of a model, and gathering payloads into one shared buffer.
//
// Sizes follow onnx.proto: raw_data holds elements little-endian at their natural width, except
// the sub-byte types, packed low bits first: INT4 / UINT4 / FLOAT4E2M1 two per byte, INT2 / UINT2
// four per byte. A typed field (float_data, int32_data...) holds what raw_data would, element by
// element: 16- and 8-bit types widened into int32_data (FLOAT16 / BFLOAT16 as their bit pattern
// in the low 16 bits), sub-byte types as one packed byte per int32_data entry, UINT32 / UINT64 in
// uint64_data, COMPLEX64 / COMPLEX128 as two floats / doubles.
//
// Every number from a file (a dimension, a data type) is checked; a failure is an onnxzip::Error
// naming the tensor. Anyone may use this header; the archive layer builds on the visitor and
// consolidate_tensors_to_buffer.
#ifndef ONNXZIP_TENSOR_H_
#define ONNXZIP_TENSOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "onnxzip/bytes.h"
#include "onnxzip/onnx_model.h"

namespace onnxzip {

// --- Element and tensor sizes ---

// Bits per element: 2 for INT2 / UINT2, 4 for INT4 / UINT4 / FLOAT4E2M1, 8 for BOOL and the 8-bit
// types, ... 128 for COMPLEX128; 0 for UNDEFINED, STRING and any value this library does not know.
std::uint32_t element_bits(std::int32_t data_type) noexcept;
// True for the types packed several to a byte (INT4, UINT4, FLOAT4E2M1, INT2, UINT2).
bool is_sub_byte_type(std::int32_t data_type) noexcept;
// onnx.proto's name of a data type ("FLOAT", "BFLOAT16"), or "" for unknown values.
std::string_view data_type_name(std::int32_t data_type) noexcept;

// The product of `dims`: Error(kCorrupt) for a negative dimension or a product beyond 64 bits.
// `what` names the tensor in messages. No dims is a scalar: one element.
std::uint64_t element_count(std::span<const std::int64_t> dims, std::string_view what = "tensor");
// Bytes of raw_data for `element_count` elements: ceil(count * bits / 8). Error(kUnsupported) for
// STRING, UNDEFINED and unknown types; Error(kCorrupt) on overflow.
std::uint64_t tensor_byte_size(std::uint64_t element_count, std::int32_t data_type,
                               std::string_view what = "tensor");
std::uint64_t tensor_byte_size(std::span<const std::int64_t> dims, std::int32_t data_type,
                               std::string_view what = "tensor");
// From the tensor's dims and data_type (0 when absent); messages name the tensor.
std::uint64_t tensor_byte_size(const TensorProto& tensor);

// The same sizes without the errors, std::nullopt where those throw: for a caller that words the
// problem itself, or only describes the tensor.
std::optional<std::uint64_t> try_element_count(std::span<const std::int64_t> dims) noexcept;
std::optional<std::uint64_t> try_tensor_byte_size(std::uint64_t element_count,
                                                  std::int32_t data_type) noexcept;
std::optional<std::uint64_t> try_tensor_byte_size(std::span<const std::int64_t> dims,
                                                  std::int32_t data_type) noexcept;
std::optional<std::uint64_t> try_tensor_byte_size(const TensorProto& tensor) noexcept;

// How messages name a tensor: "tensor 'w'" (the name quoted and escaped so that the message
// stays one printable line, as every message shows text from a file) or "unnamed tensor", then
// " at <site>" when `site` (a TensorSite path) is given: "tensor 'w' at graph/initializer[0]".
std::string tensor_label(const TensorProto& tensor, std::string_view site = {});
// The tensor as an error's place: tensor_label's phrase, and its name and site as plain values.
ErrorContext tensor_place(const TensorProto& tensor, std::string_view site = {});

// --- Typed fields and raw bytes ---

enum class TypedField : std::uint8_t {
  kNone,  // UNDEFINED or an unknown type.
  kFloatData,
  kInt32Data,
  kStringData,
  kInt64Data,
  kDoubleData,
  kUint64Data,
};
// The typed field onnx.proto assigns to a data type.
TypedField typed_field_for(std::int32_t data_type) noexcept;

// The name of the first typed data field ("float_data", "int32_data", "string_data",
// "int64_data", "double_data", "uint64_data", in that order) that holds anything, or "" when none
// does: raw_data aside, whether the tensor carries its payload inline.
std::string_view present_typed_field(const TensorProto& tensor) noexcept;
// Empties every typed data field (raw_data is left alone).
void clear_typed_data(TensorProto& tensor) noexcept;
// A copy of what `tensor` says about itself, without where its data is: name, dims, data_type,
// segment, doc_string, metadata_props and unknown fields. No raw_data, typed field,
// data_location or external_data: the start of a reference that a writer then points somewhere.
TensorProto tensor_without_data(const TensorProto& tensor);

// The elements of the typed field that tensor.data_type uses, as raw_data bytes (little-endian).
// Values wider than the element are truncated to it, as a C cast would (an int32_data entry of
// 0x1ff for UINT8 gives 0xff). STRING has no raw form in ONNX; onnxzip's own layout for it is each
// string as a varint length followed by its bytes. Error(kUnsupported) for UNDEFINED and unknown
// types.
OwnedBytes typed_data_to_raw(const TensorProto& tensor);
// Replaces the typed field tensor.data_type uses with the elements of `raw` (the inverse of
// typed_data_to_raw: signed 8/16-bit values are sign-extended into int32_data). Other fields are
// untouched. Error(kCorrupt) when `raw` is not a whole number of elements (or, for STRING, not a
// sequence of length-prefixed strings).
void set_typed_data_from_raw(ByteSpan raw, TensorProto& tensor);
// raw_data = typed_data_to_raw(tensor), and the typed field cleared. A no-op when raw_data is
// present.
void move_typed_data_to_raw(TensorProto& tensor);
// The typed field filled from raw_data, and raw_data made absent. A no-op when raw_data is absent.
void move_raw_data_to_typed(TensorProto& tensor);

// A tensor's payload as raw_data bytes, for writers: a view of its raw_data when present, else
// its typed field converted (typed_data_to_raw, with its errors) into a buffer this object owns.
// view() is valid while this object and the tensor live and the tensor is not changed.
class RawPayload final {
 public:
  explicit RawPayload(const TensorProto& tensor);
  ByteSpan view() const noexcept { return view_; }

 private:
  OwnedBytes converted_;
  ByteSpan view_;
};

// --- Payload consistency ---

// Why an inline tensor's payload disagrees with its dims and data_type, or "" when it agrees (or
// the tensor's data is EXTERNAL, which is the external-data readers' concern). One sentence
// without the tensor's name, for the caller to prefix; never throws for the tensor's content.
// The rule, in this order:
//   * at most one of raw_data and the typed fields is present ("carries both raw_data and
//     float_data");
//   * no dimension is negative, and the element count E = product(dims) fits 64 bits;
//   * STRING: no raw_data, and string_data holds E strings;
//   * a type with a fixed element size: raw_data holds exactly tensor_byte_size bytes, or the
//     typed field typed_field_for(data_type) holds as many entries as that encodes (E, 2E for
//     COMPLEX64 / COMPLEX128, one per packed byte for sub-byte types), and no other typed field
//     holds the values; no data at all only when E = 0;
//   * UNDEFINED and unknown types: nothing more (their element size is unknown).
// The archive writer refuses a tensor it would externalize for any of these; verify reports
// every inline tensor that breaks it.
std::string payload_problem(const TensorProto& tensor);

// --- Finding every tensor ---

// The field a tensor sits in. A sparse tensor's values place is always followed by its indices
// place.
enum class TensorPlace : std::uint8_t {
  kInitializer,                    // GraphProto.initializer[i]
  kSparseInitializerValues,        // GraphProto.sparse_initializer[i].values
  kSparseInitializerIndices,       // GraphProto.sparse_initializer[i].indices
  kAttributeTensor,                // AttributeProto.t
  kAttributeTensors,               // AttributeProto.tensors[i]
  kAttributeSparseTensorValues,    // AttributeProto.sparse_tensor.values
  kAttributeSparseTensorIndices,   // AttributeProto.sparse_tensor.indices
  kAttributeSparseTensorsValues,   // AttributeProto.sparse_tensors[i].values
  kAttributeSparseTensorsIndices,  // AttributeProto.sparse_tensors[i].indices
};

// Where a visited tensor sits. `path` spells the way down from the visited root, fields and
// indices separated by '/', an attribute by its name (spec/names.md, "Sites"), e.g.
// "graph/node[3]/then_branch/initializer[1]" or "functions[0]/attribute_proto[2]/alpha". It is
// valid only during the callback.
struct TensorSite {
  TensorPlace place;
  std::string_view path;
};

// The messages on the way from a ModelProto to its tensors.
enum class SiteMessage : std::uint8_t {
  kModel,
  kGraph,
  kNode,
  kAttribute,
  kSparseTensor,
  kFunction,
  kTrainingInfo,
  kTensor,  // Where every way ends.
};
// onnx.proto's name of the message: "ModelProto", "GraphProto", ... "TensorProto".
std::string_view site_message_name(SiteMessage message) noexcept;

// One field of the table of tensor sites: a field of `parent` that leads to a `child` on the way
// to tensors. A TensorSite path is the names of the fields taken, "name[i]" for a repeated one,
// the field of an attribute spelled as the attribute's name.
struct TensorSiteField {
  SiteMessage parent;
  std::uint32_t number;   // onnx.proto's field number.
  std::string_view name;  // onnx.proto's field name.
  SiteMessage child;
  bool repeated;
  // Where the tensors the field leads to sit: for a field to a TensorProto, their place; for a
  // field to a SparseTensorProto, the place of its values (its indices take the next one).
  // SparseTensorProto's own fields give the places of a sparse initializer's values and indices,
  // to be shifted like the field that led to the sparse tensor. Unused on other fields.
  TensorPlace place;
};

// Every field on the way to a tensor, grouped by parent in SiteMessage order, each parent's in
// field-number order: the order for_each_tensor visits them in. for_each_tensor, the walk over
// a model's serialized bytes (for the properties edit) and the Python package's walk over
// onnx.ModelProto all follow this table.
std::span<const TensorSiteField> tensor_site_fields() noexcept;

using TensorVisitor = std::function<void(TensorProto&, const TensorSite&)>;
using ConstTensorVisitor = std::function<void(const TensorProto&, const TensorSite&)>;

// Calls `visit` for every TensorProto of the model, wherever it sits: initializers, sparse
// initializers (values and indices), node attributes (t, tensors, sparse_tensor, sparse_tensors,
// attribute defaults of functions), subgraphs in g and graphs at any depth, functions, and the
// training-info graphs. Order: depth-first in field order. The visitor must not add or remove
// tensors (it may change them).
void for_each_tensor(ModelProto& model, const TensorVisitor& visit);
void for_each_tensor(const ModelProto& model, const ConstTensorVisitor& visit);
void for_each_tensor(GraphProto& graph, const TensorVisitor& visit);
void for_each_tensor(const GraphProto& graph, const ConstTensorVisitor& visit);
void for_each_tensor(FunctionProto& function, const TensorVisitor& visit);
void for_each_tensor(const FunctionProto& function, const ConstTensorVisitor& visit);

// --- Consolidation ---

// Which payloads consolidate_tensors_to_buffer moves, and where it places them.
struct TensorBufferOptions {
  // Payloads of at least this many bytes are moved. 0 selects every payload.
  std::uint64_t raw_data_threshold = 0;
  // When non-zero (a power of two), each moved payload starts at an offset that is a multiple
  // of it. 0: no requirement.
  std::uint64_t alignment = 0;
};

// Moves the raw_data of every tensor of the model with at least options.raw_data_threshold bytes
// into one new buffer, each payload at an offset that is a multiple of options.alignment (when
// non-zero; the buffer start is aligned to max(alignment, 64)), the gaps zeroed. Each moved
// tensor's raw_data becomes borrowed from the buffer with the buffer as owner token, so the buffer
// lives as long as any tensor (or copy) refers to it, whether or not the caller keeps the returned
// pointer. Other tensors keep their state. Returns null when no tensor qualifies.
// Error(kInvalidArgument) when alignment is not a power of two.
std::shared_ptr<const OwnedBytes> consolidate_tensors_to_buffer(ModelProto& model,
                                                                const TensorBufferOptions& options);

// A tensor holding data that a writer asked to put payloads outside the model kept inline, and
// why (write_legacy_model in external mode, write_view_model).
struct KeptInline {
  enum class Reason : std::uint8_t {
    kSmall,      // Under the size threshold.
    kAttribute,  // A node attribute's tensor (a Constant's value...): runtimes refuse it external.
    kSparse,     // A sparse tensor's values or indices: runtimes refuse them external.
    kOutside,    // In a function or a training graph: loaders resolve no external data there.
    kString,     // STRING: no fixed-size payload.
    kDeflated,   // A deflated archive entry: not a byte range of the file (views only).
  };
  std::string tensor;  // tensor_label: name and site.
  std::uint64_t size = 0;
  Reason reason = Reason::kSmall;
};

// "under the size threshold", "in node attributes (Constant values)", ... for messages.
std::string_view to_string(KeptInline::Reason reason) noexcept;

}  // namespace onnxzip

#endif  // ONNXZIP_TENSOR_H_
