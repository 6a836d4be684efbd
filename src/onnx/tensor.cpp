#include "onnxzip/tensor.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <iterator>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "check.h"
#include "message_text.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/protobuf_wire.h"
#include "tensor_sites.h"

namespace onnxzip {
namespace {

struct DataTypeInfo {
  std::string_view name;
  std::uint32_t bits;  // 0: no fixed size.
  TypedField field;
  bool is_signed;  // Sign-extended when widened into int32_data.
};

// Indexed by TensorProto::DataType value.
constexpr DataTypeInfo kDataTypes[] = {
    {"UNDEFINED", 0, TypedField::kNone, false},
    {"FLOAT", 32, TypedField::kFloatData, false},
    {"UINT8", 8, TypedField::kInt32Data, false},
    {"INT8", 8, TypedField::kInt32Data, true},
    {"UINT16", 16, TypedField::kInt32Data, false},
    {"INT16", 16, TypedField::kInt32Data, true},
    {"INT32", 32, TypedField::kInt32Data, true},
    {"INT64", 64, TypedField::kInt64Data, true},
    {"STRING", 0, TypedField::kStringData, false},
    {"BOOL", 8, TypedField::kInt32Data, false},
    {"FLOAT16", 16, TypedField::kInt32Data, false},
    {"DOUBLE", 64, TypedField::kDoubleData, false},
    {"UINT32", 32, TypedField::kUint64Data, false},
    {"UINT64", 64, TypedField::kUint64Data, false},
    {"COMPLEX64", 64, TypedField::kFloatData, false},
    {"COMPLEX128", 128, TypedField::kDoubleData, false},
    {"BFLOAT16", 16, TypedField::kInt32Data, false},
    {"FLOAT8E4M3FN", 8, TypedField::kInt32Data, false},
    {"FLOAT8E4M3FNUZ", 8, TypedField::kInt32Data, false},
    {"FLOAT8E5M2", 8, TypedField::kInt32Data, false},
    {"FLOAT8E5M2FNUZ", 8, TypedField::kInt32Data, false},
    {"UINT4", 4, TypedField::kInt32Data, false},
    {"INT4", 4, TypedField::kInt32Data, false},  // Packed bytes: never sign-extended.
    {"FLOAT4E2M1", 4, TypedField::kInt32Data, false},
    {"FLOAT8E8M0", 8, TypedField::kInt32Data, false},
    {"UINT2", 2, TypedField::kInt32Data, false},
    {"INT2", 2, TypedField::kInt32Data, false},
};
static_assert(std::size(kDataTypes) == TensorProto::kLastDataType + 1);

const DataTypeInfo* info_of(std::int32_t data_type) noexcept {
  if (data_type < 0 || data_type > TensorProto::kLastDataType) return nullptr;
  return &kDataTypes[data_type];
}

std::string type_label(std::int32_t data_type) {
  const std::string_view name = data_type_name(data_type);
  return std::to_string(data_type) + (name.empty() ? "" : " (" + std::string(name) + ")");
}

const DataTypeInfo& require_known(const TensorProto& tensor) {
  const std::int32_t data_type = tensor.data_type.value_or(TensorProto::kUndefined);
  const DataTypeInfo* info = info_of(data_type);
  if (info == nullptr || info->field == TypedField::kNone) {
    throw Error(ErrorCode::kUnsupported, tensor_place(tensor),
                "data type " + type_label(data_type) + " has no typed field");
  }
  return *info;
}

// Bytes one typed-field entry takes in raw form.
std::size_t raw_unit_bytes(std::int32_t data_type, const DataTypeInfo& info) {
  switch (info.field) {
    case TypedField::kFloatData:
      return 4;
    case TypedField::kDoubleData:
    case TypedField::kInt64Data:
      return 8;
    case TypedField::kUint64Data:
      return data_type == TensorProto::kUint32 ? 4 : 8;
    case TypedField::kInt32Data:
      return std::max<std::uint32_t>(info.bits, 8) / 8;  // Sub-byte types: one packed byte.
    case TypedField::kStringData:
    case TypedField::kNone:
      break;
  }
  return 0;
}

void store_le(std::uint8_t* out, std::uint64_t value, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) out[i] = static_cast<std::uint8_t>(value >> (8 * i));
}

std::uint64_t load_le(const std::uint8_t* in, std::size_t bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < bytes; ++i) value |= std::uint64_t{in[i]} << (8 * i);
  return value;
}

// Elements of `values` as `unit`-byte little-endian integers (truncating).
template <class T>
OwnedBytes integers_to_raw(const std::vector<T>& values, std::size_t unit) {
  OwnedBytes out(values.size() * unit);
  if (std::endian::native == std::endian::little && unit == sizeof(T)) {
    if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
    return out;
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    store_le(out.data() + i * unit, static_cast<std::uint64_t>(values[i]), unit);
  }
  return out;
}

// `raw` as `unit`-byte little-endian integers, sign-extended when `is_signed`.
template <class T>
std::vector<T> raw_to_integers(ByteSpan raw, std::size_t unit, bool is_signed) {
  std::vector<T> values(raw.size() / unit);
  if (std::endian::native == std::endian::little && unit == sizeof(T)) {
    if (!values.empty()) std::memcpy(values.data(), raw.data(), raw.size());
    return values;
  }
  const unsigned shift = 64 - 8 * static_cast<unsigned>(unit);
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint64_t v = load_le(raw.data() + i * unit, unit);
    if (is_signed && shift != 0) {
      v = static_cast<std::uint64_t>(static_cast<std::int64_t>(v << shift) >> shift);
    }
    values[i] = static_cast<T>(v);
  }
  return values;
}

template <class T>
OwnedBytes floats_to_raw(const std::vector<T>& values) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  std::vector<Bits> bits(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) bits[i] = std::bit_cast<Bits>(values[i]);
  return integers_to_raw(bits, sizeof(T));
}

template <class T>
std::vector<T> raw_to_floats(ByteSpan raw) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  const std::vector<Bits> bits = raw_to_integers<Bits>(raw, sizeof(T), false);
  std::vector<T> values(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) values[i] = std::bit_cast<T>(bits[i]);
  return values;
}

OwnedBytes strings_to_raw(const std::vector<Text>& strings) {
  std::uint64_t total = 0;
  for (const Text& s : strings) total += wire::varint_size(s.size()) + s.size();
  OwnedBytes out(static_cast<std::size_t>(total));
  std::uint8_t* p = out.data();
  for (const Text& s : strings) {
    p = wire::encode_varint(s.size(), p);
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    p += s.size();
  }
  return out;
}

std::vector<Text> raw_to_strings(ByteSpan raw, const TensorProto& tensor) {
  std::vector<Text> strings;
  // The reader names no file; the tensor is the place it knows.
  wire::WireReader reader(raw, "");
  with_error_context([&] { return tensor_place(tensor); },
                     [&] {
                       while (!reader.at_end()) {
                         const ByteSpan s = reader.read_length_delimited("string element");
                         strings.emplace_back(reinterpret_cast<const char*>(s.data()), s.size());
                       }
                     });
  return strings;
}

// --- The visitor ---

// The struct of each message of the table of tensor sites.
template <SiteMessage>
struct SiteStruct;
template <>
struct SiteStruct<SiteMessage::kModel> {
  using type = ModelProto;
};
template <>
struct SiteStruct<SiteMessage::kGraph> {
  using type = GraphProto;
};
template <>
struct SiteStruct<SiteMessage::kNode> {
  using type = NodeProto;
};
template <>
struct SiteStruct<SiteMessage::kAttribute> {
  using type = AttributeProto;
};
template <>
struct SiteStruct<SiteMessage::kSparseTensor> {
  using type = SparseTensorProto;
};
template <>
struct SiteStruct<SiteMessage::kFunction> {
  using type = FunctionProto;
};
template <>
struct SiteStruct<SiteMessage::kTrainingInfo> {
  using type = TrainingInfoProto;
};
template <>
struct SiteStruct<SiteMessage::kTensor> {
  using type = TensorProto;
};

// The member of a message that holds field number kNumber, and the field's name, from the field
// lists of onnx_model.h: the table names fields by number, the structs by member.
#define ONNXZIP_SITE_MEMBER_(kind, name, number, oneof) \
  if constexpr (kNumber == (number)) {                  \
    return (m.name);                                    \
  } else
#define ONNXZIP_SITE_FIELD_NAME_(kind, name, number, oneof) \
  if (field_number == (number)) return #name;
#define ONNXZIP_SITE_MESSAGE_(Type)                                                   \
  template <std::uint32_t kNumber, class M>                                           \
  requires std::is_same_v<std::remove_const_t<M>, Type>                               \
  constexpr auto& field_member(M& m) {                                                \
    ONNXZIP_FIELDS_##Type(ONNXZIP_SITE_MEMBER_) {                                     \
      static_assert(kNumber == 0, #Type " has no field of this number");              \
    }                                                                                 \
  }                                                                                   \
  constexpr std::string_view field_name_of(std::uint32_t field_number, const Type*) { \
    ONNXZIP_FIELDS_##Type(ONNXZIP_SITE_FIELD_NAME_) return {};                        \
  }
ONNXZIP_SITE_MESSAGE_(ModelProto)
ONNXZIP_SITE_MESSAGE_(GraphProto)
ONNXZIP_SITE_MESSAGE_(NodeProto)
ONNXZIP_SITE_MESSAGE_(AttributeProto)
ONNXZIP_SITE_MESSAGE_(SparseTensorProto)
ONNXZIP_SITE_MESSAGE_(FunctionProto)
ONNXZIP_SITE_MESSAGE_(TrainingInfoProto)
#undef ONNXZIP_SITE_MESSAGE_
#undef ONNXZIP_SITE_FIELD_NAME_
#undef ONNXZIP_SITE_MEMBER_

// What row kRow of the table says, checked against the structs: a field of that number and
// name, holding the child's struct, repeated or not.
template <std::size_t kRow>
constexpr bool row_matches_structs() {
  constexpr TensorSiteField kField = detail::kTensorSiteFields[kRow];
  using Parent = typename SiteStruct<kField.parent>::type;
  using Child = typename SiteStruct<kField.child>::type;
  using Member =
      std::remove_cvref_t<decltype(field_member<kField.number>(std::declval<Parent&>()))>;
  using Expected = std::conditional_t<kField.repeated, std::vector<Child>, Box<Child>>;
  return std::is_same_v<Member, Expected> &&
         field_name_of(kField.number, static_cast<const Parent*>(nullptr)) == kField.name;
}
static_assert([]<std::size_t... kRows>(std::index_sequence<kRows...>) {
  return (row_matches_structs<kRows>() && ...);
}(std::make_index_sequence<std::size(detail::kTensorSiteFields)>()));

// Walks a message's fields as the table of tensor sites lists them, expanded at compile time:
// the code is what a walker written out by hand for each message would be.
template <bool kConst>
class TensorWalker final {
 public:
  template <class T>
  using Ref = std::conditional_t<kConst, const T&, T&>;
  using Visitor = std::conditional_t<kConst, ConstTensorVisitor, TensorVisitor>;

  explicit TensorWalker(const Visitor& visit) : visit_(visit) {}

  // Visits the tensors under `m`; `sparse_values` (for a SparseTensorProto) is the place of its
  // values.
  template <SiteMessage kMessage>
  void message(Ref<typename SiteStruct<kMessage>::type> m, TensorPlace sparse_values = {}) {
    constexpr detail::SiteFieldRange kFields = detail::site_fields_of(kMessage);
    [&]<std::size_t... kI>(std::index_sequence<kI...>) {
      (field<kFields.first + kI>(m, sparse_values), ...);
    }
    (std::make_index_sequence<kFields.count>());
  }

 private:
  template <std::size_t kRow, class M>
  void field(M& m, TensorPlace sparse_values) {
    constexpr TensorSiteField kField = detail::kTensorSiteFields[kRow];
    auto& member = field_member<kField.number>(m);
    if constexpr (kField.child == SiteMessage::kAttribute) {
      static_assert(kField.repeated);
      for (std::size_t i = 0; i < member.size(); ++i) {
        const std::string_view name = member[i].name ? member[i].name->view() : "";
        path_.push_attribute(kField.name, i, name, kField.parent == SiteMessage::kNode);
        child<kRow>(member[i], sparse_values);
        path_.pop();
      }
    } else if constexpr (kField.repeated) {
      for (std::size_t i = 0; i < member.size(); ++i) {
        enter_indexed(kField.name, i, [&] { child<kRow>(member[i], sparse_values); });
      }
    } else if (member) {
      enter(kField.name, [&] { child<kRow>(*member, sparse_values); });
    }
  }

  template <std::size_t kRow, class C>
  void child(C& c, TensorPlace sparse_values) {
    constexpr TensorSiteField kField = detail::kTensorSiteFields[kRow];
    if constexpr (kField.child != SiteMessage::kTensor) {
      message<kField.child>(c, kField.place);
    } else if constexpr (kField.parent == SiteMessage::kSparseTensor) {
      visit_(c, {detail::sparse_part_place(sparse_values, kField.place), path_.spell()});
    } else {
      visit_(c, {kField.place, path_.spell()});
    }
  }

  template <class Body>
  void enter(std::string_view name, Body&& body) {
    path_.push(name);
    body();
    path_.pop();
  }

  template <class Body>
  void enter_indexed(std::string_view name, std::size_t index, Body&& body) {
    path_.push(name, index);
    body();
    path_.pop();
  }

  const Visitor& visit_;
  detail::SitePath path_;
};

// The typed fields in onnx.proto order, for payload_problem.
struct TypedFieldSlot {
  TypedField field;
  std::string_view name;
  std::size_t (*size)(const TensorProto&);
};
constexpr TypedFieldSlot kTypedFields[] = {
    {TypedField::kFloatData, "float_data",
     [](const TensorProto& t) { return t.float_data.size(); }},
    {TypedField::kInt32Data, "int32_data",
     [](const TensorProto& t) { return t.int32_data.size(); }},
    {TypedField::kStringData, "string_data",
     [](const TensorProto& t) { return t.string_data.size(); }},
    {TypedField::kInt64Data, "int64_data",
     [](const TensorProto& t) { return t.int64_data.size(); }},
    {TypedField::kDoubleData, "double_data",
     [](const TensorProto& t) { return t.double_data.size(); }},
    {TypedField::kUint64Data, "uint64_data",
     [](const TensorProto& t) { return t.uint64_data.size(); }},
};

const TypedFieldSlot& slot_of(TypedField field) {
  for (const TypedFieldSlot& slot : kTypedFields) {
    if (slot.field == field) return slot;
  }
  ONNXZIP_DCHECK(false);  // Every field of kDataTypes has a slot.
  return kTypedFields[0];
}

// "[4, 300] of FLOAT" ("of 99" for an unknown type), the first dims only when there are many
// (a hostile tensor may have millions).
std::string shape_label(const TensorProto& tensor, std::int32_t data_type) {
  constexpr std::size_t kMaxDimsShown = 8;
  std::string text = "[";
  for (std::size_t i = 0; i < tensor.dims.size() && i < kMaxDimsShown; ++i) {
    if (i != 0) text += ", ";
    text += std::to_string(tensor.dims[i]);
  }
  if (tensor.dims.size() > kMaxDimsShown) text += ", ...";
  const std::string_view name = data_type_name(data_type);
  return text + "] of " + (name.empty() ? std::to_string(data_type) : std::string(name));
}

std::string counted(std::uint64_t count, std::string_view one, std::string_view many) {
  return std::to_string(count) + " " + std::string(count == 1 ? one : many);
}

}  // namespace

std::string tensor_label(const TensorProto& tensor, std::string_view site) {
  std::string label = tensor.name ? "tensor " + detail::quote(*tensor.name) : "unnamed tensor";
  if (!site.empty()) label.append(" at ").append(site);
  return label;
}

ErrorContext tensor_place(const TensorProto& tensor, std::string_view site) {
  return {.tensor = tensor_label(tensor, site),
          .tensor_name = std::string(tensor.name.value_or("")),
          .site = std::string(site)};
}

std::string_view to_string(KeptInline::Reason reason) noexcept {
  switch (reason) {
    case KeptInline::Reason::kSmall:
      return "under the size threshold";
    case KeptInline::Reason::kAttribute:
      return "in node attributes (Constant values)";
    case KeptInline::Reason::kSparse:
      return "sparse tensors' values or indices";
    case KeptInline::Reason::kOutside:
      return "in functions or training graphs";
    case KeptInline::Reason::kString:
      return "STRING tensors";
    case KeptInline::Reason::kDeflated:
      return "in deflated entries";
  }
  return "";
}

TensorProto tensor_without_data(const TensorProto& tensor) {
  TensorProto copy;
  copy.dims = tensor.dims;
  copy.data_type = tensor.data_type;
  copy.segment = tensor.segment;
  copy.name = tensor.name;
  copy.doc_string = tensor.doc_string;
  copy.metadata_props = tensor.metadata_props;
  copy.unknown_fields = tensor.unknown_fields;
  return copy;
}

std::string_view present_typed_field(const TensorProto& tensor) noexcept {
  for (const TypedFieldSlot& slot : kTypedFields) {
    if (slot.size(tensor) != 0) return slot.name;
  }
  return {};
}

void clear_typed_data(TensorProto& tensor) noexcept {
  tensor.float_data.clear();
  tensor.int32_data.clear();
  tensor.string_data.clear();
  tensor.int64_data.clear();
  tensor.double_data.clear();
  tensor.uint64_data.clear();
}

RawPayload::RawPayload(const TensorProto& tensor) {
  if (tensor.raw_data) {
    view_ = tensor.raw_data->view();
  } else {
    converted_ = typed_data_to_raw(tensor);
    view_ = converted_.span();
  }
}

std::uint32_t element_bits(std::int32_t data_type) noexcept {
  const DataTypeInfo* info = info_of(data_type);
  return info == nullptr ? 0 : info->bits;
}

bool is_sub_byte_type(std::int32_t data_type) noexcept {
  const std::uint32_t bits = element_bits(data_type);
  return bits != 0 && bits < 8;
}

std::string_view data_type_name(std::int32_t data_type) noexcept {
  const DataTypeInfo* info = info_of(data_type);
  return info == nullptr ? std::string_view() : info->name;
}

TypedField typed_field_for(std::int32_t data_type) noexcept {
  const DataTypeInfo* info = info_of(data_type);
  return info == nullptr ? TypedField::kNone : info->field;
}

std::uint64_t element_count(std::span<const std::int64_t> dims, std::string_view what) {
  std::uint64_t count = 1;
  for (const std::int64_t dim : dims) {
    if (dim < 0) {
      throw Error(ErrorCode::kCorrupt,
                  std::string(what) + ": dimension " + std::to_string(dim) + " is negative");
    }
    count =
        checked_mul(count, static_cast<std::uint64_t>(dim), std::string(what) + ": element count");
  }
  return count;
}

std::uint64_t tensor_byte_size(std::uint64_t element_count, std::int32_t data_type,
                               std::string_view what) {
  const std::uint32_t bits = element_bits(data_type);
  if (bits == 0) {
    throw Error(ErrorCode::kUnsupported, std::string(what) + ": data type " +
                                             type_label(data_type) + " has no fixed element size");
  }
  // (count / 8) * bits + ceil((count % 8) * bits / 8): exact, and overflows only when the
  // result does.
  const std::string context = std::string(what) + ": byte size";
  const std::uint64_t whole = checked_mul(element_count / 8, bits, context);
  const std::uint64_t size = checked_add(whole, ((element_count % 8) * bits + 7) / 8, context);
  ONNXZIP_DCHECK(try_tensor_byte_size(element_count, data_type) == size);
  return size;
}

std::uint64_t tensor_byte_size(std::span<const std::int64_t> dims, std::int32_t data_type,
                               std::string_view what) {
  return tensor_byte_size(element_count(dims, what), data_type, what);
}

std::uint64_t tensor_byte_size(const TensorProto& tensor) {
  const std::string label = tensor_label(tensor);
  return tensor_byte_size(tensor.dims, tensor.data_type.value_or(TensorProto::kUndefined), label);
}

std::optional<std::uint64_t> try_element_count(std::span<const std::int64_t> dims) noexcept {
  std::uint64_t count = 1;
  for (const std::int64_t dim : dims) {
    if (dim < 0 || __builtin_mul_overflow(count, static_cast<std::uint64_t>(dim), &count)) {
      return std::nullopt;
    }
  }
  return count;
}

std::optional<std::uint64_t> try_tensor_byte_size(std::uint64_t element_count,
                                                  std::int32_t data_type) noexcept {
  const std::uint32_t bits = element_bits(data_type);
  std::uint64_t whole = 0;
  std::uint64_t size = 0;
  if (bits == 0 || __builtin_mul_overflow(element_count / 8, std::uint64_t{bits}, &whole) ||
      __builtin_add_overflow(whole, ((element_count % 8) * bits + 7) / 8, &size)) {
    return std::nullopt;
  }
  return size;
}

std::optional<std::uint64_t> try_tensor_byte_size(std::span<const std::int64_t> dims,
                                                  std::int32_t data_type) noexcept {
  const std::optional<std::uint64_t> count = try_element_count(dims);
  return count ? try_tensor_byte_size(*count, data_type) : std::nullopt;
}

std::optional<std::uint64_t> try_tensor_byte_size(const TensorProto& tensor) noexcept {
  return try_tensor_byte_size(tensor.dims, tensor.data_type.value_or(TensorProto::kUndefined));
}

namespace {

// The fields of an inline tensor that hold values: raw_data, then the typed fields.
std::vector<std::string_view> payload_fields(const TensorProto& tensor) {
  std::vector<std::string_view> fields;
  if (tensor.raw_data) fields.push_back("raw_data");
  for (const TypedFieldSlot& slot : kTypedFields) {
    if (slot.size(tensor) != 0) fields.push_back(slot.name);
  }
  return fields;
}

// Why dims make no element count: a negative dimension, or more than 64 bits count.
std::string dims_problem(const TensorProto& tensor, const std::string& shape) {
  for (std::size_t i = 0; i < tensor.dims.size(); ++i) {
    if (tensor.dims[i] < 0) {
      return "dims[" + std::to_string(i) + "] is " + std::to_string(tensor.dims[i]) +
             ": a dimension cannot be negative";
    }
  }
  return "dims " + shape + " make more elements than 64 bits can count";
}

std::string string_payload_problem(const TensorProto& tensor, std::uint64_t elements,
                                   const std::string& shape) {
  if (tensor.raw_data) return "STRING values cannot be in raw_data (onnx.proto: string_data)";
  if (tensor.string_data.size() != elements) {
    return "string_data holds " + counted(tensor.string_data.size(), "string", "strings") +
           ", but dims " + shape + " make " + counted(elements, "element", "elements");
  }
  return {};
}

// A type of fixed element size whose values are in raw_data, in `field` (the one typed field
// holding values, "" when none does) or nowhere.
std::string fixed_payload_problem(const TensorProto& tensor, std::string_view field,
                                  const DataTypeInfo& info, std::uint64_t elements,
                                  const std::string& shape) {
  const std::int32_t data_type = tensor.data_type.value_or(TensorProto::kUndefined);
  // The caller found a fixed element size, so only overflow fails.
  const std::optional<std::uint64_t> size = try_tensor_byte_size(elements, data_type);
  if (!size) return "dims " + shape + " make more bytes than 64 bits can count";
  const std::uint64_t bytes = *size;
  if (tensor.raw_data) {
    if (tensor.raw_data->size() == bytes) return {};
    return "raw_data holds " + counted(tensor.raw_data->size(), "byte", "bytes") + ", but dims " +
           shape + " make " + counted(bytes, "byte", "bytes");
  }
  const TypedFieldSlot& slot = slot_of(info.field);
  if (!field.empty() && field != slot.name) {
    return "holds its values in " + std::string(field) + ", but " + std::string(info.name) +
           " values belong in " + std::string(slot.name);
  }
  // tensor_byte_size is a whole number of typed entries for every type (sub-byte types: one
  // entry per packed byte).
  const std::uint64_t entries = bytes / raw_unit_bytes(data_type, info);
  if (slot.size(tensor) == entries) return {};
  if (field.empty()) {
    return "holds no data, but dims " + shape + " make " + counted(bytes, "byte", "bytes");
  }
  return std::string(slot.name) + " holds " + counted(slot.size(tensor), "entry", "entries") +
         ", but dims " + shape + " need " + std::to_string(entries);
}

}  // namespace

std::string payload_problem(const TensorProto& tensor) {
  if (tensor.data_location == TensorProto::kExternal) return {};
  const std::vector<std::string_view> fields = payload_fields(tensor);
  if (fields.size() > 1) {
    return "carries both " + std::string(fields[0]) + " and " + std::string(fields[1]) +
           "; which one is the payload?";
  }
  const std::int32_t data_type = tensor.data_type.value_or(TensorProto::kUndefined);
  const std::string shape = shape_label(tensor, data_type);
  // The size helpers' checks, their errors said in this function's words.
  const std::optional<std::uint64_t> count = try_element_count(tensor.dims);
  if (!count) return dims_problem(tensor, shape);
  const std::uint64_t elements = *count;
  const DataTypeInfo* info = info_of(data_type);
  if (info == nullptr || info->field == TypedField::kNone) return {};
  if (info->field == TypedField::kStringData) {
    return string_payload_problem(tensor, elements, shape);
  }
  const std::string_view field = fields.empty() ? std::string_view() : fields[0];
  return fixed_payload_problem(tensor, field, *info, elements, shape);
}

OwnedBytes typed_data_to_raw(const TensorProto& tensor) {
  const DataTypeInfo& info = require_known(tensor);
  const std::int32_t data_type = *tensor.data_type;
  const std::size_t unit = raw_unit_bytes(data_type, info);
  switch (info.field) {
    case TypedField::kFloatData:
      return floats_to_raw(tensor.float_data);
    case TypedField::kDoubleData:
      return floats_to_raw(tensor.double_data);
    case TypedField::kInt32Data:
      return integers_to_raw(tensor.int32_data, unit);
    case TypedField::kInt64Data:
      return integers_to_raw(tensor.int64_data, unit);
    case TypedField::kUint64Data:
      return integers_to_raw(tensor.uint64_data, unit);
    case TypedField::kStringData:
      return strings_to_raw(tensor.string_data);
    case TypedField::kNone:
      break;
  }
  return OwnedBytes();
}

void set_typed_data_from_raw(ByteSpan raw, TensorProto& tensor) {
  const DataTypeInfo& info = require_known(tensor);
  const std::int32_t data_type = *tensor.data_type;
  if (info.field == TypedField::kStringData) {
    tensor.string_data = raw_to_strings(raw, tensor);
    return;
  }
  const std::size_t unit = raw_unit_bytes(data_type, info);
  if (raw.size() % unit != 0) {
    throw Error(ErrorCode::kCorrupt, {.tensor = tensor_label(tensor)},
                std::to_string(raw.size()) + " bytes are not a whole number of " +
                    std::to_string(unit) + "-byte " + std::string(info.name) + " values");
  }
  switch (info.field) {
    case TypedField::kFloatData:
      tensor.float_data = raw_to_floats<float>(raw);
      break;
    case TypedField::kDoubleData:
      tensor.double_data = raw_to_floats<double>(raw);
      break;
    case TypedField::kInt32Data:
      tensor.int32_data = raw_to_integers<std::int32_t>(raw, unit, info.is_signed);
      break;
    case TypedField::kInt64Data:
      tensor.int64_data = raw_to_integers<std::int64_t>(raw, unit, true);
      break;
    case TypedField::kUint64Data:
      tensor.uint64_data = raw_to_integers<std::uint64_t>(raw, unit, false);
      break;
    case TypedField::kStringData:
    case TypedField::kNone:
      break;
  }
}

void move_typed_data_to_raw(TensorProto& tensor) {
  if (tensor.raw_data) return;
  OwnedBytes raw = typed_data_to_raw(tensor);
  tensor.raw_data = TensorBytes::owned(std::move(raw));
  clear_typed_data(tensor);
}

void move_raw_data_to_typed(TensorProto& tensor) {
  if (!tensor.raw_data) return;
  set_typed_data_from_raw(tensor.raw_data->view(), tensor);
  tensor.raw_data.reset();
}

std::string_view site_message_name(SiteMessage message) noexcept {
  switch (message) {
    case SiteMessage::kModel:
      return "ModelProto";
    case SiteMessage::kGraph:
      return "GraphProto";
    case SiteMessage::kNode:
      return "NodeProto";
    case SiteMessage::kAttribute:
      return "AttributeProto";
    case SiteMessage::kSparseTensor:
      return "SparseTensorProto";
    case SiteMessage::kFunction:
      return "FunctionProto";
    case SiteMessage::kTrainingInfo:
      return "TrainingInfoProto";
    case SiteMessage::kTensor:
      return "TensorProto";
  }
  return {};
}

std::span<const TensorSiteField> tensor_site_fields() noexcept { return detail::kTensorSiteFields; }

void for_each_tensor(ModelProto& model, const TensorVisitor& visit) {
  TensorWalker<false>(visit).message<SiteMessage::kModel>(model);
}
void for_each_tensor(const ModelProto& model, const ConstTensorVisitor& visit) {
  TensorWalker<true>(visit).message<SiteMessage::kModel>(model);
}
void for_each_tensor(GraphProto& graph, const TensorVisitor& visit) {
  TensorWalker<false>(visit).message<SiteMessage::kGraph>(graph);
}
void for_each_tensor(const GraphProto& graph, const ConstTensorVisitor& visit) {
  TensorWalker<true>(visit).message<SiteMessage::kGraph>(graph);
}
void for_each_tensor(FunctionProto& function, const TensorVisitor& visit) {
  TensorWalker<false>(visit).message<SiteMessage::kFunction>(function);
}
void for_each_tensor(const FunctionProto& function, const ConstTensorVisitor& visit) {
  TensorWalker<true>(visit).message<SiteMessage::kFunction>(function);
}

std::shared_ptr<const OwnedBytes> consolidate_tensors_to_buffer(
    ModelProto& model, const TensorBufferOptions& options) {
  const std::uint64_t alignment = options.alignment;
  if (alignment != 0 && !is_power_of_two(alignment)) {
    throw Error(ErrorCode::kInvalidArgument, "consolidate_tensors_to_buffer: alignment " +
                                                 std::to_string(alignment) +
                                                 " is not a power of two");
  }
  std::vector<TensorProto*> selected;
  for_each_tensor(model, [&](TensorProto& tensor, const TensorSite&) {
    if (tensor.raw_data && tensor.raw_data->size() >= options.raw_data_threshold) {
      selected.push_back(&tensor);
    }
  });
  if (selected.empty()) return nullptr;

  std::vector<std::uint64_t> offsets;
  offsets.reserve(selected.size());
  std::uint64_t end = 0;
  for (const TensorProto* tensor : selected) {
    if (alignment != 0) end = align_up(end, alignment);
    offsets.push_back(end);
    end = checked_add(end, tensor->raw_data->size(), "consolidate_tensors_to_buffer");
  }
  const auto buffer = std::make_shared<OwnedBytes>(
      static_cast<std::size_t>(end),
      static_cast<std::size_t>(std::max<std::uint64_t>(alignment, kDefaultBufferAlignment)));
  std::uint64_t written = 0;
  for (std::size_t i = 0; i < selected.size(); ++i) {
    TensorProto& tensor = *selected[i];
    const ByteSpan source = tensor.raw_data->view();
    std::uint8_t* const target = buffer->data() + offsets[i];
    if (offsets[i] > written) std::memset(buffer->data() + written, 0, offsets[i] - written);
    if (!source.empty()) std::memcpy(target, source.data(), source.size());
    written = offsets[i] + source.size();
    tensor.raw_data = TensorBytes::borrowed(ByteSpan(target, source.size()), OwnerToken(buffer));
  }
  return buffer;
}

}  // namespace onnxzip
