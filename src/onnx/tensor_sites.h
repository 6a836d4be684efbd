// Private to the library: the table of tensor sites (tensor.h's TensorSiteField), the one place
// that says where in a model tensors sit, as a constant expression for the walkers that compile
// it into their code: for_each_tensor over the parsed model (tensor.cpp) and walk_kept_tensors
// over its wire bytes (model_parts.cpp). Everyone else reads it through tensor_site_fields(); the
// Python package gets it from the extension and walks onnx.ModelProto objects by its names.
//
// A change here changes all three walks. tensor.cpp checks every row against the field lists of
// onnx_model.h at compile time (number, name, member type), so the table cannot drift from
// onnx.proto as this library spells it; tests/python checks it against the onnx package.
#ifndef ONNXZIP_SRC_TENSOR_SITES_H_
#define ONNXZIP_SRC_TENSOR_SITES_H_

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "onnxzip/tensor.h"

namespace onnxzip::detail {

inline constexpr bool kRepeated = true;
inline constexpr bool kSingular = false;

// Grouped by parent in SiteMessage order; each parent's fields in field-number order.
inline constexpr TensorSiteField kTensorSiteFields[] = {
    // parent, number, name, child, repeated, place (of tensors; unused on other rows)
    {SiteMessage::kModel, 7, "graph", SiteMessage::kGraph, kSingular, {}},
    {SiteMessage::kModel, 20, "training_info", SiteMessage::kTrainingInfo, kRepeated, {}},
    {SiteMessage::kModel, 25, "functions", SiteMessage::kFunction, kRepeated, {}},
    {SiteMessage::kGraph, 1, "node", SiteMessage::kNode, kRepeated, {}},
    {SiteMessage::kGraph, 5, "initializer", SiteMessage::kTensor, kRepeated,
     TensorPlace::kInitializer},
    {SiteMessage::kGraph, 15, "sparse_initializer", SiteMessage::kSparseTensor, kRepeated,
     TensorPlace::kSparseInitializerValues},
    {SiteMessage::kNode, 5, "attribute", SiteMessage::kAttribute, kRepeated, {}},
    {SiteMessage::kAttribute, 5, "t", SiteMessage::kTensor, kSingular,
     TensorPlace::kAttributeTensor},
    {SiteMessage::kAttribute, 6, "g", SiteMessage::kGraph, kSingular, {}},
    {SiteMessage::kAttribute, 10, "tensors", SiteMessage::kTensor, kRepeated,
     TensorPlace::kAttributeTensors},
    {SiteMessage::kAttribute, 11, "graphs", SiteMessage::kGraph, kRepeated, {}},
    {SiteMessage::kAttribute, 22, "sparse_tensor", SiteMessage::kSparseTensor, kSingular,
     TensorPlace::kAttributeSparseTensorValues},
    {SiteMessage::kAttribute, 23, "sparse_tensors", SiteMessage::kSparseTensor, kRepeated,
     TensorPlace::kAttributeSparseTensorsValues},
    {SiteMessage::kSparseTensor, 1, "values", SiteMessage::kTensor, kSingular,
     TensorPlace::kSparseInitializerValues},
    {SiteMessage::kSparseTensor, 2, "indices", SiteMessage::kTensor, kSingular,
     TensorPlace::kSparseInitializerIndices},
    {SiteMessage::kFunction, 7, "node", SiteMessage::kNode, kRepeated, {}},
    {SiteMessage::kFunction, 11, "attribute_proto", SiteMessage::kAttribute, kRepeated, {}},
    {SiteMessage::kTrainingInfo, 1, "initialization", SiteMessage::kGraph, kSingular, {}},
    {SiteMessage::kTrainingInfo, 2, "algorithm", SiteMessage::kGraph, kSingular, {}},
};

// The rows of one parent: kTensorSiteFields[first, first + count).
struct SiteFieldRange {
  std::size_t first = 0;
  std::size_t count = 0;
};

inline constexpr std::size_t kSiteMessageCount = static_cast<std::size_t>(SiteMessage::kTensor) + 1;

inline constexpr std::array<SiteFieldRange, kSiteMessageCount> kSiteFieldRanges = [] {
  std::array<SiteFieldRange, kSiteMessageCount> ranges{};
  for (std::size_t i = 0; i < std::size(kTensorSiteFields); ++i) {
    SiteFieldRange& range = ranges[static_cast<std::size_t>(kTensorSiteFields[i].parent)];
    if (range.count == 0) range.first = i;
    ++range.count;
  }
  return ranges;
}();

constexpr SiteFieldRange site_fields_of(SiteMessage parent) noexcept {
  return kSiteFieldRanges[static_cast<std::size_t>(parent)];
}

// A TensorSite path on the way down: the fields taken so far, spelled only when a tensor is
// reached (most messages on the way, a graph's nodes, hold none). The one spelling of site paths
// (spec/names.md, "Sites"): the names joined by '/', "name[i]" for a repeated field, and an
// attribute spelled by its name: the field of the attribute taken ("t", "g", "tensors"...) is
// spelled as the attribute's name, and a node's attribute itself is not spelled at all:
//   graph/node[2]/else_branch/node[0]/value      (node 2's attribute "else_branch", field g)
//   functions[1]/attribute_proto[0]/alpha        (a function's attribute default keeps its index)
// A node's attribute without a name stands for itself, "attribute[i]", as the JavaScript
// package spells it.
class SitePath final {
 public:
  void push(std::string_view name) { segments_.push_back({name, kSingular, Kind::kField}); }
  void push(std::string_view name, std::size_t index) {
    segments_.push_back({name, index, Kind::kField});
  }
  // An AttributeProto named `attribute_name`: of a node (not spelled), or of a function
  // (`field`[`index`] spelled, "attribute_proto[1]"). The next field pushed is spelled as its
  // name. `attribute_name` must stay valid until pop().
  void push_attribute(std::string_view field, std::size_t index, std::string_view attribute_name,
                      bool of_node) {
    segments_.push_back({field, index, of_node ? Kind::kNodeAttribute : Kind::kAttribute});
    attribute_names_.push_back(attribute_name);
  }
  void pop() noexcept {
    if (segments_.back().kind != Kind::kField) attribute_names_.pop_back();
    segments_.pop_back();
  }

  // The path of the fields taken; valid until the next call of any member.
  std::string_view spell() {
    text_.clear();
    bool separate = false;               // Whether a segment was spelled already.
    const Segment* attribute = nullptr;  // The attribute whose field comes next, if any.
    std::size_t attributes = 0;          // Attribute segments met so far.
    for (const Segment& segment : segments_) {
      if (segment.kind != Kind::kField) ++attributes;
      if (segment.kind == Kind::kNodeAttribute) {
        attribute = &segment;
        continue;
      }
      if (separate) text_ += '/';
      separate = true;
      if (attribute == nullptr) {
        append_indexed(segment.name, segment.index);
      } else {
        const std::string_view name = attribute_names_[attributes - 1];
        if (!name.empty() || attribute->kind == Kind::kAttribute) {
          text_ += name;
        } else {
          append_indexed(attribute->name, attribute->index);
        }
        append_index(segment.index);
      }
      attribute = segment.kind == Kind::kAttribute ? &segment : nullptr;
    }
    return text_;
  }

 private:
  static constexpr std::size_t kSingular = static_cast<std::size_t>(-1);
  enum class Kind : std::uint8_t { kField, kNodeAttribute, kAttribute };
  struct Segment {
    std::string_view name;
    std::size_t index;
    Kind kind;
  };

  void append_indexed(std::string_view name, std::size_t index) {
    text_ += name;
    append_index(index);
  }
  void append_index(std::size_t index) {
    if (index == kSingular) return;
    char digits[24];  // Enough for any 64-bit index.
    const auto digits_end = std::to_chars(std::begin(digits), std::end(digits), index).ptr;
    text_.append("[").append(digits, static_cast<std::size_t>(digits_end - digits)).append("]");
  }

  std::vector<Segment> segments_;
  std::vector<std::string_view> attribute_names_;  // Of the attribute segments, in order.
  std::string text_;
};

// The place of a sparse tensor's part: `part` is the place its row in SparseTensorProto gives
// (that of a sparse initializer's part), `values` the place the field that led to the sparse
// tensor gives its values.
constexpr TensorPlace sparse_part_place(TensorPlace values, TensorPlace part) noexcept {
  return static_cast<TensorPlace>(static_cast<int>(values) + static_cast<int>(part) -
                                  static_cast<int>(TensorPlace::kSparseInitializerValues));
}

namespace site_checks {

constexpr bool grouped_and_ordered() {
  for (std::size_t i = 1; i < std::size(kTensorSiteFields); ++i) {
    const TensorSiteField& a = kTensorSiteFields[i - 1];
    const TensorSiteField& b = kTensorSiteFields[i];
    if (a.parent > b.parent || (a.parent == b.parent && a.number >= b.number)) return false;
  }
  return true;
}
static_assert(grouped_and_ordered(), "rows grouped by parent, each parent's by field number");
static_assert(site_fields_of(SiteMessage::kTensor).count == 0, "tensors end every way");
// sparse_part_place relies on each values place being followed by its indices place.
static_assert(sparse_part_place(TensorPlace::kAttributeSparseTensorValues,
                                TensorPlace::kSparseInitializerIndices) ==
              TensorPlace::kAttributeSparseTensorIndices);
static_assert(sparse_part_place(TensorPlace::kAttributeSparseTensorsValues,
                                TensorPlace::kSparseInitializerIndices) ==
              TensorPlace::kAttributeSparseTensorsIndices);

}  // namespace site_checks
}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_TENSOR_SITES_H_
