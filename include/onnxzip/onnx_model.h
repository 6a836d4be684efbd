// The ONNX object model: every message of onnx.proto (IR version 13, ONNX-ML included) as a
// plain struct.
//
// The rest of its contract and the reasons: HACKING.md, "Header notes", onnx_model.h.
#ifndef ONNXZIP_ONNX_MODEL_H_
#define ONNXZIP_ONNX_MODEL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "onnxzip/bytes.h"
#include "onnxzip/error.h"
#include "onnxzip/text.h"
#include "onnxzip/unknown_fields.h"

namespace onnxzip {

using UnknownFields = wire::UnknownFields;

// An optional sub-message on the heap. Copying copies the message; comparing compares presence,
// then the messages. operator* and operator-> require has_value().
template <class T>
class Box final {
 public:
  Box() noexcept = default;
  explicit Box(T value) : value_(std::make_unique<T>(std::move(value))) {}
  Box(const Box& other) : value_(other.value_ ? std::make_unique<T>(*other.value_) : nullptr) {}
  Box(Box&& other) noexcept = default;
  Box& operator=(const Box& other) {
    if (this != &other) value_ = other.value_ ? std::make_unique<T>(*other.value_) : nullptr;
    return *this;
  }
  Box& operator=(Box&& other) noexcept = default;
  Box& operator=(T value) {
    value_ = std::make_unique<T>(std::move(value));
    return *this;
  }
  ~Box() = default;

  bool has_value() const noexcept { return value_ != nullptr; }
  explicit operator bool() const noexcept { return value_ != nullptr; }
  T& operator*() noexcept { return *value_; }
  const T& operator*() const noexcept { return *value_; }
  T* operator->() noexcept { return value_.get(); }
  const T* operator->() const noexcept { return value_.get(); }
  T* get() noexcept { return value_.get(); }
  const T* get() const noexcept { return value_.get(); }

  // The message, or Error(kBadState) when absent.
  T& value() {
    if (!value_) throw Error(ErrorCode::kBadState, "access to an absent sub-message");
    return *value_;
  }
  const T& value() const {
    if (!value_) throw Error(ErrorCode::kBadState, "access to an absent sub-message");
    return *value_;
  }
  // Replaces the content with a default-constructed (empty but present) message.
  T& emplace() {
    value_ = std::make_unique<T>();
    return *value_;
  }
  // The message, created empty first if absent (protobuf's mutable_x()).
  T& ensure() {
    if (!value_) value_ = std::make_unique<T>();
    return *value_;
  }
  void reset() noexcept { value_.reset(); }

  friend bool operator==(const Box& a, const Box& b) {
    if (!a.value_ || !b.value_) return !a.value_ && !b.value_;
    return *a.value_ == *b.value_;
  }

 private:
  std::unique_ptr<T> value_;
};

// An optional sub-message stored in place: Box's interface without a heap allocation per
// message, for the few non-recursive sub-messages that nearly every ValueInfoProto carries (its
// type, a tensor type, a shape), where one allocation each was most of the cost of parsing a
// graph's value_info.
template <class T>
class Inline final {
 public:
  Inline() noexcept = default;
  explicit Inline(T value) : value_(std::move(value)) {}
  Inline& operator=(T value) {
    value_ = std::move(value);
    return *this;
  }

  bool has_value() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return value_.has_value(); }
  T& operator*() noexcept { return *value_; }
  const T& operator*() const noexcept { return *value_; }
  T* operator->() noexcept { return &*value_; }
  const T* operator->() const noexcept { return &*value_; }
  T* get() noexcept { return value_ ? &*value_ : nullptr; }
  const T* get() const noexcept { return value_ ? &*value_ : nullptr; }

  // The message, or Error(kBadState) when absent.
  T& value() {
    if (!value_) throw Error(ErrorCode::kBadState, "access to an absent sub-message");
    return *value_;
  }
  const T& value() const {
    if (!value_) throw Error(ErrorCode::kBadState, "access to an absent sub-message");
    return *value_;
  }
  T& emplace() { return value_.emplace(); }
  T& ensure() {
    if (!value_) value_.emplace();
    return *value_;
  }
  void reset() noexcept { value_.reset(); }

  friend bool operator==(const Inline& a, const Inline& b) { return a.value_ == b.value_; }

 private:
  std::optional<T> value_;
};

// Field kinds: the C++ type of a member (Value) and, through the codec, its wire form. Floats are
// compared bit for bit by operator== (NaN equals the same NaN, -0.0 differs from 0.0), so equality
// means "serializes to the same bytes".
namespace field {
struct Int64 {  // optional int64: varint.
  using Value = std::optional<std::int64_t>;
};
struct Int32 {  // optional int32 or enum: varint, negative values sign-extended to 10 bytes.
  using Value = std::optional<std::int32_t>;
};
struct Float {  // optional float: fixed32.
  using Value = std::optional<float>;
};
struct String {  // optional string or bytes: length-delimited, not checked for UTF-8.
  using Value = std::optional<Text>;
};
struct TensorData {  // optional bytes holding tensor payload (raw_data): owned or borrowed.
  using Value = std::optional<TensorBytes>;
};
template <class M>
struct Message {  // optional sub-message: length-delimited.
  using Value = Box<M>;
};
template <class M>
struct InlineMessage {  // optional non-recursive sub-message, stored in place.
  using Value = Inline<M>;
};
// Repeated scalars. onnx.proto declares only TensorProto's *_data fields [packed = true]; the
// others are written one tag per element, as libprotobuf does. Both forms are read for all.
struct Int64s {
  using Value = std::vector<std::int64_t>;
};
struct Floats {
  using Value = std::vector<float>;
};
struct PackedInt32s {
  using Value = std::vector<std::int32_t>;
};
struct PackedInt64s {
  using Value = std::vector<std::int64_t>;
};
struct PackedUint64s {
  using Value = std::vector<std::uint64_t>;
};
struct PackedFloats {
  using Value = std::vector<float>;
};
struct PackedDoubles {
  using Value = std::vector<double>;
};
struct Strings {  // repeated string or bytes.
  using Value = std::vector<Text>;
};
template <class M>
struct Messages {  // repeated sub-message.
  using Value = std::vector<M>;
};
}  // namespace field

// onnx.proto's top-level enum Version: values of ModelProto::ir_version.
enum Version : std::int64_t {
  kStartVersion = 0,
  kIrVersion2017_10_10 = 1,
  kIrVersion2017_10_30 = 2,
  kIrVersion2017_11_3 = 3,
  kIrVersion2019_1_22 = 4,
  kIrVersion2019_3_18 = 5,
  kIrVersion2019_9_19 = 6,
  kIrVersion2020_5_8 = 7,
  kIrVersion2021_7_30 = 8,
  kIrVersion2023_5_5 = 9,
  kIrVersion2024_3_25 = 10,
  kIrVersion2025_05_12 = 11,
  kIrVersion2025_08_26 = 12,
  kIrVersion = 13,  // The newest IR version this library knows (UINT2 and INT2 added).
};

enum OperatorStatus : std::int32_t { kExperimental = 0, kStable = 1 };

#define ONNXZIP_DECLARE_FIELD_(kind, name, number, oneof) ::onnxzip::field::kind::Value name;

// The members every message has besides its fields.
#define ONNXZIP_MESSAGE_MEMBERS_(Type, Id)                                  \
  ONNXZIP_FIELDS_##Id(ONNXZIP_DECLARE_FIELD_) UnknownFields unknown_fields; \
  friend bool operator==(const Type& a, const Type& b);

#define ONNXZIP_FIELDS_StringStringEntryProto(X) \
  X(String, key, 1, 0)                           \
  X(String, value, 2, 0)
struct StringStringEntryProto final {
  ONNXZIP_MESSAGE_MEMBERS_(StringStringEntryProto, StringStringEntryProto)
};

#define ONNXZIP_FIELDS_IntIntListEntryProto(X) \
  X(Int64, key, 1, 0)                          \
  X(Int64s, value, 2, 0)
struct IntIntListEntryProto final {
  ONNXZIP_MESSAGE_MEMBERS_(IntIntListEntryProto, IntIntListEntryProto)
};

#define ONNXZIP_FIELDS_OperatorSetIdProto(X) \
  X(String, domain, 1, 0)                    \
  X(Int64, version, 2, 0)
struct OperatorSetIdProto final {
  ONNXZIP_MESSAGE_MEMBERS_(OperatorSetIdProto, OperatorSetIdProto)
};

#define ONNXZIP_FIELDS_TensorProto_Segment(X) \
  X(Int64, begin, 1, 0)                       \
  X(Int64, end, 2, 0)

#define ONNXZIP_FIELDS_TensorProto(X)                       \
  X(Int64s, dims, 1, 0)                                     \
  X(Int32, data_type, 2, 0)                                 \
  X(Message<TensorProto::Segment>, segment, 3, 0)           \
  X(PackedFloats, float_data, 4, 0)                         \
  X(PackedInt32s, int32_data, 5, 0)                         \
  X(Strings, string_data, 6, 0)                             \
  X(PackedInt64s, int64_data, 7, 0)                         \
  X(String, name, 8, 0)                                     \
  X(TensorData, raw_data, 9, 0)                             \
  X(PackedDoubles, double_data, 10, 0)                      \
  X(PackedUint64s, uint64_data, 11, 0)                      \
  X(String, doc_string, 12, 0)                              \
  X(Messages<StringStringEntryProto>, external_data, 13, 0) \
  X(Int32, data_location, 14, 0)                            \
  X(Messages<StringStringEntryProto>, metadata_props, 16, 0)
struct TensorProto final {
  enum DataType : std::int32_t {
    kUndefined = 0,
    kFloat = 1,
    kUint8 = 2,
    kInt8 = 3,
    kUint16 = 4,
    kInt16 = 5,
    kInt32 = 6,
    kInt64 = 7,
    kString = 8,
    kBool = 9,
    kFloat16 = 10,
    kDouble = 11,
    kUint32 = 12,
    kUint64 = 13,
    kComplex64 = 14,
    kComplex128 = 15,
    kBfloat16 = 16,
    kFloat8e4m3fn = 17,
    kFloat8e4m3fnuz = 18,
    kFloat8e5m2 = 19,
    kFloat8e5m2fnuz = 20,
    kUint4 = 21,
    kInt4 = 22,
    kFloat4e2m1 = 23,
    kFloat8e8m0 = 24,
    kUint2 = 25,
    kInt2 = 26,
  };
  static constexpr std::int32_t kLastDataType = kInt2;

  enum DataLocation : std::int32_t { kDefault = 0, kExternal = 1 };

  struct Segment final {
    ONNXZIP_MESSAGE_MEMBERS_(Segment, TensorProto_Segment)
  };

  ONNXZIP_MESSAGE_MEMBERS_(TensorProto, TensorProto)
};

#define ONNXZIP_FIELDS_SparseTensorProto(X) \
  X(Message<TensorProto>, values, 1, 0)     \
  X(Message<TensorProto>, indices, 2, 0)    \
  X(Int64s, dims, 3, 0)
struct SparseTensorProto final {
  ONNXZIP_MESSAGE_MEMBERS_(SparseTensorProto, SparseTensorProto)
};

#define ONNXZIP_FIELDS_TensorShapeProto_Dimension(X) \
  X(Int64, dim_value, 1, 1)                          \
  X(String, dim_param, 2, 1)                         \
  X(String, denotation, 3, 0)

#define ONNXZIP_FIELDS_TensorShapeProto(X) X(Messages<TensorShapeProto::Dimension>, dim, 1, 0)
struct TensorShapeProto final {
  // oneof value { dim_value, dim_param }.
  struct Dimension final {
    ONNXZIP_MESSAGE_MEMBERS_(Dimension, TensorShapeProto_Dimension)
  };
  ONNXZIP_MESSAGE_MEMBERS_(TensorShapeProto, TensorShapeProto)
};

struct TypeProto;

#define ONNXZIP_FIELDS_TypeProto_Tensor(X) \
  X(Int32, elem_type, 1, 0)                \
  X(InlineMessage<TensorShapeProto>, shape, 2, 0)
#define ONNXZIP_FIELDS_TypeProto_Sequence(X) X(Message<TypeProto>, elem_type, 1, 0)
#define ONNXZIP_FIELDS_TypeProto_Map(X) \
  X(Int32, key_type, 1, 0)              \
  X(Message<TypeProto>, value_type, 2, 0)
#define ONNXZIP_FIELDS_TypeProto_Optional(X) X(Message<TypeProto>, elem_type, 1, 0)
#define ONNXZIP_FIELDS_TypeProto_SparseTensor(X) \
  X(Int32, elem_type, 1, 0)                      \
  X(InlineMessage<TensorShapeProto>, shape, 2, 0)
#define ONNXZIP_FIELDS_TypeProto_Opaque(X) \
  X(String, domain, 1, 0)                  \
  X(String, name, 2, 0)

// oneof value { tensor_type, sequence_type, map_type, opaque_type, sparse_tensor_type,
// optional_type }; opaque_type is from onnx-ml.proto.
#define ONNXZIP_FIELDS_TypeProto(X)                             \
  X(InlineMessage<TypeProto::Tensor>, tensor_type, 1, 1)        \
  X(Message<TypeProto::Sequence>, sequence_type, 4, 1)          \
  X(Message<TypeProto::Map>, map_type, 5, 1)                    \
  X(String, denotation, 6, 0)                                   \
  X(Message<TypeProto::Opaque>, opaque_type, 7, 1)              \
  X(Message<TypeProto::SparseTensor>, sparse_tensor_type, 8, 1) \
  X(Message<TypeProto::Optional>, optional_type, 9, 1)
struct TypeProto final {
  struct Tensor final {
    ONNXZIP_MESSAGE_MEMBERS_(Tensor, TypeProto_Tensor)
  };
  struct Sequence final {
    ONNXZIP_MESSAGE_MEMBERS_(Sequence, TypeProto_Sequence)
  };
  struct Map final {
    ONNXZIP_MESSAGE_MEMBERS_(Map, TypeProto_Map)
  };
  struct Optional final {
    ONNXZIP_MESSAGE_MEMBERS_(Optional, TypeProto_Optional)
  };
  struct SparseTensor final {
    ONNXZIP_MESSAGE_MEMBERS_(SparseTensor, TypeProto_SparseTensor)
  };
  struct Opaque final {
    ONNXZIP_MESSAGE_MEMBERS_(Opaque, TypeProto_Opaque)
  };
  ONNXZIP_MESSAGE_MEMBERS_(TypeProto, TypeProto)
};

#define ONNXZIP_FIELDS_ValueInfoProto(X)  \
  X(String, name, 1, 0)                   \
  X(InlineMessage<TypeProto>, type, 2, 0) \
  X(String, doc_string, 3, 0)             \
  X(Messages<StringStringEntryProto>, metadata_props, 4, 0)
struct ValueInfoProto final {
  ONNXZIP_MESSAGE_MEMBERS_(ValueInfoProto, ValueInfoProto)
};

#define ONNXZIP_FIELDS_TensorAnnotation(X) \
  X(String, tensor_name, 1, 0)             \
  X(Messages<StringStringEntryProto>, quant_parameter_tensor_names, 2, 0)
struct TensorAnnotation final {
  ONNXZIP_MESSAGE_MEMBERS_(TensorAnnotation, TensorAnnotation)
};

struct GraphProto;

#define ONNXZIP_FIELDS_AttributeProto(X)              \
  X(String, name, 1, 0)                               \
  X(Float, f, 2, 0)                                   \
  X(Int64, i, 3, 0)                                   \
  X(String, s, 4, 0)                                  \
  X(Message<TensorProto>, t, 5, 0)                    \
  X(Message<GraphProto>, g, 6, 0)                     \
  X(Floats, floats, 7, 0)                             \
  X(Int64s, ints, 8, 0)                               \
  X(Strings, strings, 9, 0)                           \
  X(Messages<TensorProto>, tensors, 10, 0)            \
  X(Messages<GraphProto>, graphs, 11, 0)              \
  X(String, doc_string, 13, 0)                        \
  X(Message<TypeProto>, tp, 14, 0)                    \
  X(Messages<TypeProto>, type_protos, 15, 0)          \
  X(Int32, type, 20, 0)                               \
  X(String, ref_attr_name, 21, 0)                     \
  X(Message<SparseTensorProto>, sparse_tensor, 22, 0) \
  X(Messages<SparseTensorProto>, sparse_tensors, 23, 0)
struct AttributeProto final {
  enum AttributeType : std::int32_t {
    kUndefined = 0,
    kFloat = 1,
    kInt = 2,
    kString = 3,
    kTensor = 4,
    kGraph = 5,
    kFloats = 6,
    kInts = 7,
    kStrings = 8,
    kTensors = 9,
    kGraphs = 10,
    kSparseTensor = 11,
    kSparseTensors = 12,
    kTypeProto = 13,
    kTypeProtos = 14,
  };
  ONNXZIP_MESSAGE_MEMBERS_(AttributeProto, AttributeProto)
};

// Multi-device configuration and sharding (IR version 11).
#define ONNXZIP_FIELDS_SimpleShardedDimProto(X) \
  X(Int64, dim_value, 1, 1)                     \
  X(String, dim_param, 2, 1)                    \
  X(Int64, num_shards, 3, 0)
struct SimpleShardedDimProto final {  // oneof dim { dim_value, dim_param }.
  ONNXZIP_MESSAGE_MEMBERS_(SimpleShardedDimProto, SimpleShardedDimProto)
};

#define ONNXZIP_FIELDS_ShardedDimProto(X) \
  X(Int64, axis, 1, 0)                    \
  X(Messages<SimpleShardedDimProto>, simple_sharding, 2, 0)
struct ShardedDimProto final {
  ONNXZIP_MESSAGE_MEMBERS_(ShardedDimProto, ShardedDimProto)
};

#define ONNXZIP_FIELDS_ShardingSpecProto(X)                          \
  X(String, tensor_name, 1, 0)                                       \
  X(Int64s, device, 2, 0)                                            \
  X(Messages<IntIntListEntryProto>, index_to_device_group_map, 3, 0) \
  X(Messages<ShardedDimProto>, sharded_dim, 4, 0)
struct ShardingSpecProto final {
  ONNXZIP_MESSAGE_MEMBERS_(ShardingSpecProto, ShardingSpecProto)
};

#define ONNXZIP_FIELDS_NodeDeviceConfigurationProto(X) \
  X(String, configuration_id, 1, 0)                    \
  X(Messages<ShardingSpecProto>, sharding_spec, 2, 0)  \
  X(Int32, pipeline_stage, 3, 0)
struct NodeDeviceConfigurationProto final {
  ONNXZIP_MESSAGE_MEMBERS_(NodeDeviceConfigurationProto, NodeDeviceConfigurationProto)
};

#define ONNXZIP_FIELDS_NodeProto(X)                         \
  X(Strings, input, 1, 0)                                   \
  X(Strings, output, 2, 0)                                  \
  X(String, name, 3, 0)                                     \
  X(String, op_type, 4, 0)                                  \
  X(Messages<AttributeProto>, attribute, 5, 0)              \
  X(String, doc_string, 6, 0)                               \
  X(String, domain, 7, 0)                                   \
  X(String, overload, 8, 0)                                 \
  X(Messages<StringStringEntryProto>, metadata_props, 9, 0) \
  X(Messages<NodeDeviceConfigurationProto>, device_configurations, 10, 0)
struct NodeProto final {
  ONNXZIP_MESSAGE_MEMBERS_(NodeProto, NodeProto)
};

#define ONNXZIP_FIELDS_GraphProto(X)                            \
  X(Messages<NodeProto>, node, 1, 0)                            \
  X(String, name, 2, 0)                                         \
  X(Messages<TensorProto>, initializer, 5, 0)                   \
  X(String, doc_string, 10, 0)                                  \
  X(Messages<ValueInfoProto>, input, 11, 0)                     \
  X(Messages<ValueInfoProto>, output, 12, 0)                    \
  X(Messages<ValueInfoProto>, value_info, 13, 0)                \
  X(Messages<TensorAnnotation>, quantization_annotation, 14, 0) \
  X(Messages<SparseTensorProto>, sparse_initializer, 15, 0)     \
  X(Messages<StringStringEntryProto>, metadata_props, 16, 0)
struct GraphProto final {
  ONNXZIP_MESSAGE_MEMBERS_(GraphProto, GraphProto)
};

#define ONNXZIP_FIELDS_TrainingInfoProto(X)                         \
  X(Message<GraphProto>, initialization, 1, 0)                      \
  X(Message<GraphProto>, algorithm, 2, 0)                           \
  X(Messages<StringStringEntryProto>, initialization_binding, 3, 0) \
  X(Messages<StringStringEntryProto>, update_binding, 4, 0)
struct TrainingInfoProto final {
  ONNXZIP_MESSAGE_MEMBERS_(TrainingInfoProto, TrainingInfoProto)
};

#define ONNXZIP_FIELDS_FunctionProto(X)               \
  X(String, name, 1, 0)                               \
  X(Strings, input, 4, 0)                             \
  X(Strings, output, 5, 0)                            \
  X(Strings, attribute, 6, 0)                         \
  X(Messages<NodeProto>, node, 7, 0)                  \
  X(String, doc_string, 8, 0)                         \
  X(Messages<OperatorSetIdProto>, opset_import, 9, 0) \
  X(String, domain, 10, 0)                            \
  X(Messages<AttributeProto>, attribute_proto, 11, 0) \
  X(Messages<ValueInfoProto>, value_info, 12, 0)      \
  X(String, overload, 13, 0)                          \
  X(Messages<StringStringEntryProto>, metadata_props, 14, 0)
struct FunctionProto final {
  ONNXZIP_MESSAGE_MEMBERS_(FunctionProto, FunctionProto)
};

#define ONNXZIP_FIELDS_DeviceConfigurationProto(X) \
  X(String, name, 1, 0)                            \
  X(Int32, num_devices, 2, 0)                      \
  X(Strings, device, 3, 0)
struct DeviceConfigurationProto final {
  ONNXZIP_MESSAGE_MEMBERS_(DeviceConfigurationProto, DeviceConfigurationProto)
};

#define ONNXZIP_FIELDS_ModelProto(X)                         \
  X(Int64, ir_version, 1, 0)                                 \
  X(String, producer_name, 2, 0)                             \
  X(String, producer_version, 3, 0)                          \
  X(String, domain, 4, 0)                                    \
  X(Int64, model_version, 5, 0)                              \
  X(String, doc_string, 6, 0)                                \
  X(Message<GraphProto>, graph, 7, 0)                        \
  X(Messages<OperatorSetIdProto>, opset_import, 8, 0)        \
  X(Messages<StringStringEntryProto>, metadata_props, 14, 0) \
  X(Messages<TrainingInfoProto>, training_info, 20, 0)       \
  X(Messages<FunctionProto>, functions, 25, 0)               \
  X(Messages<DeviceConfigurationProto>, configuration, 26, 0)
struct ModelProto final {
  ONNXZIP_MESSAGE_MEMBERS_(ModelProto, ModelProto)
};

#undef ONNXZIP_MESSAGE_MEMBERS_
#undef ONNXZIP_DECLARE_FIELD_

// Every message type: M(C++ type, field-list id, name in messages). The codec instantiates its
// generic functions for exactly these.
#define ONNXZIP_ONNX_MESSAGES(M)                                                                \
  M(StringStringEntryProto, StringStringEntryProto, "StringStringEntryProto")                   \
  M(IntIntListEntryProto, IntIntListEntryProto, "IntIntListEntryProto")                         \
  M(OperatorSetIdProto, OperatorSetIdProto, "OperatorSetIdProto")                               \
  M(TensorProto::Segment, TensorProto_Segment, "TensorProto.Segment")                           \
  M(TensorProto, TensorProto, "TensorProto")                                                    \
  M(SparseTensorProto, SparseTensorProto, "SparseTensorProto")                                  \
  M(TensorShapeProto::Dimension, TensorShapeProto_Dimension, "TensorShapeProto.Dimension")      \
  M(TensorShapeProto, TensorShapeProto, "TensorShapeProto")                                     \
  M(TypeProto::Tensor, TypeProto_Tensor, "TypeProto.Tensor")                                    \
  M(TypeProto::Sequence, TypeProto_Sequence, "TypeProto.Sequence")                              \
  M(TypeProto::Map, TypeProto_Map, "TypeProto.Map")                                             \
  M(TypeProto::Optional, TypeProto_Optional, "TypeProto.Optional")                              \
  M(TypeProto::SparseTensor, TypeProto_SparseTensor, "TypeProto.SparseTensor")                  \
  M(TypeProto::Opaque, TypeProto_Opaque, "TypeProto.Opaque")                                    \
  M(TypeProto, TypeProto, "TypeProto")                                                          \
  M(ValueInfoProto, ValueInfoProto, "ValueInfoProto")                                           \
  M(TensorAnnotation, TensorAnnotation, "TensorAnnotation")                                     \
  M(AttributeProto, AttributeProto, "AttributeProto")                                           \
  M(SimpleShardedDimProto, SimpleShardedDimProto, "SimpleShardedDimProto")                      \
  M(ShardedDimProto, ShardedDimProto, "ShardedDimProto")                                        \
  M(ShardingSpecProto, ShardingSpecProto, "ShardingSpecProto")                                  \
  M(NodeDeviceConfigurationProto, NodeDeviceConfigurationProto, "NodeDeviceConfigurationProto") \
  M(NodeProto, NodeProto, "NodeProto")                                                          \
  M(GraphProto, GraphProto, "GraphProto")                                                       \
  M(TrainingInfoProto, TrainingInfoProto, "TrainingInfoProto")                                  \
  M(FunctionProto, FunctionProto, "FunctionProto")                                              \
  M(DeviceConfigurationProto, DeviceConfigurationProto, "DeviceConfigurationProto")             \
  M(ModelProto, ModelProto, "ModelProto")

// True for the message types above: the types parse_message / serialize_message accept.
template <class T>
inline constexpr bool kIsOnnxMessage = false;
#define ONNXZIP_MARK_MESSAGE_(Type, Id, Name) \
  template <>                                 \
  inline constexpr bool kIsOnnxMessage<Type> = true;
ONNXZIP_ONNX_MESSAGES(ONNXZIP_MARK_MESSAGE_)
#undef ONNXZIP_MARK_MESSAGE_

template <class T>
concept OnnxMessage = kIsOnnxMessage<T>;

}  // namespace onnxzip

#endif  // ONNXZIP_ONNX_MODEL_H_
