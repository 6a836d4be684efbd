#include "model_parts.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "onnxzip/error.h"
#include "onnxzip/internal/protobuf_wire.h"
#include "tensor_sites.h"

namespace onnxzip::detail {
namespace {

using wire::ScannedField;
using wire::ScanStatus;
using wire::WireType;

constexpr SiteFieldRange kModelFields = site_fields_of(SiteMessage::kModel);

// The row of `parent`'s fields in the table of tensor sites for field `number`, or null.
const TensorSiteField* site_field(SiteMessage parent, std::uint32_t number) noexcept {
  const SiteFieldRange range = site_fields_of(parent);
  for (std::size_t i = range.first; i < range.first + range.count; ++i) {
    if (kTensorSiteFields[i].number == number) return &kTensorSiteFields[i];
  }
  return nullptr;
}

// The model's fields that hold tensors: the graph, training_info and functions.
bool is_kept(std::uint32_t number) noexcept {
  return site_field(SiteMessage::kModel, number) != nullptr;
}

// A whole field of wire type 0, 1, 2 or 5 (groups are rare enough in ONNX to leave to the full
// parser).
bool whole_field(const ScannedField& field) noexcept {
  return field.value.status == ScanStatus::kOk;
}

// The name of the AttributeProto in `bytes` (its last field 1, as a parser keeps it; "" when
// absent), or nullopt when the message is not whole.
std::optional<std::string_view> attribute_name(ByteSpan bytes) {
  constexpr std::uint32_t kNameField = 1;  // AttributeProto.name (onnx_model.h).
  std::string_view name;
  const std::uint8_t* p = bytes.data();
  const std::uint8_t* const end = p + bytes.size();
  while (p < end) {
    const ScannedField field = wire::scan_field(p, end);
    if (!whole_field(field)) return std::nullopt;
    p = field.value.next;
    if (field.tag.number != kNameField) continue;
    if (field.tag.type != WireType::kLengthDelimited) return std::nullopt;
    const ByteSpan text = field.value.payload();
    name = {reinterpret_cast<const char*>(text.data()), text.size()};
  }
  return name;
}

// The most fields any message of the table has on the way to tensors.
constexpr std::size_t kMaxSiteFields = [] {
  std::size_t most = 0;
  for (const SiteFieldRange& fields : kSiteFieldRanges) most = std::max(most, fields.count);
  return most;
}();

static_assert(
    [] {
      for (const TensorSiteField& field : kTensorSiteFields) {
        if (field.number >= 64) return false;
      }
      return true;
    }(),
    "kSiteFieldMasks has a bit for fields 0 to 63");
// Per message, bit n set when field n is on the way to tensors: most fields of the messages
// walked (a node's inputs, outputs, name...) are not, and one test rules them out.
constexpr std::array<std::uint64_t, kSiteMessageCount> kSiteFieldMasks = [] {
  std::array<std::uint64_t, kSiteMessageCount> masks{};
  for (const TensorSiteField& field : kTensorSiteFields) {
    masks[static_cast<std::size_t>(field.parent)] |= std::uint64_t{1} << field.number;
  }
  return masks;
}();

// Walks serialized messages along the table of tensor sites, as for_each_tensor walks the
// parsed ones, spelling the same site paths.
class TensorFinder final {
 public:
  TensorFinder(std::uint32_t max_depth, const KeptTensorVisitor& visit)
      : max_depth_(max_depth), visit_(visit) {}

  // How often each of a message's fields has occurred: the index of the next occurrence.
  using Occurrences = std::array<std::size_t, kMaxSiteFields>;

  // Walks one `parent` message at `depth`; false on anything split_model's contract leaves to
  // the full parser. `sparse_values`: as for take().
  bool message(ByteSpan bytes, SiteMessage parent, std::uint32_t depth, TensorPlace sparse_values) {
    if (depth > max_depth_) return false;
    const SiteFieldRange fields = site_fields_of(parent);
    const std::uint64_t mask = kSiteFieldMasks[static_cast<std::size_t>(parent)];
    Occurrences seen{};
    const std::uint8_t* p = bytes.data();
    const std::uint8_t* const end = p + bytes.size();
    while (p < end) {
      const ScannedField field = wire::scan_field(p, end);
      if (!whole_field(field)) return false;
      p = field.value.next;
      if (field.tag.number >= 64 || (mask & (std::uint64_t{1} << field.tag.number)) == 0) continue;
      for (std::size_t i = 0; i < fields.count; ++i) {
        const TensorSiteField& site = kTensorSiteFields[fields.first + i];
        if (site.number != field.tag.number) continue;
        if (field.tag.type != WireType::kLengthDelimited) return false;
        if (!take(site, seen[i], field.value.payload(), depth, sparse_values)) return false;
        break;
      }
    }
    return true;
  }

  // One occurrence of `site`, a field of a message at `depth`, whose payload is `payload`;
  // `seen` counts the field's occurrences. `sparse_values` is the place of a sparse tensor's
  // values, when the message is one.
  bool take(const TensorSiteField& site, std::size_t& seen, ByteSpan payload, std::uint32_t depth,
            TensorPlace sparse_values) {
    // A singular message given twice: protobuf merges the two.
    if (!site.repeated && seen != 0) return false;
    const std::size_t index = seen++;
    if (site.child == SiteMessage::kAttribute) {
      const std::optional<std::string_view> name = attribute_name(payload);
      if (!name) return false;
      path_.push_attribute(site.name, index, *name, site.parent == SiteMessage::kNode);
    } else if (site.repeated) {
      path_.push(site.name, index);
    } else {
      path_.push(site.name);
    }
    bool whole = true;
    if (site.child != SiteMessage::kTensor) {
      whole = message(payload, site.child, depth + 1, site.place);
    } else if (depth + 1 > max_depth_) {
      whole = false;
    } else {
      const TensorPlace place = site.parent == SiteMessage::kSparseTensor
                                    ? sparse_part_place(sparse_values, site.place)
                                    : site.place;
      visit_(payload, TensorSite{place, path_.spell()});
    }
    path_.pop();
    return whole;
  }

 private:
  std::uint32_t max_depth_;
  const KeptTensorVisitor& visit_;
  SitePath path_;
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

bool splits_whole(ByteSpan bytes) noexcept {
  const std::uint8_t* p = bytes.data();
  const std::uint8_t* const end = p + bytes.size();
  while (p < end) {
    const ScannedField field = wire::scan_field(p, end);
    if (!whole_field(field)) return false;
    p = field.value.next;
  }
  return true;
}

OwnedBytes join_model(const ModelProto& properties, const std::vector<KeptField>& kept) {
  if (properties.graph || !properties.training_info.empty() || !properties.functions.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "join_model: the properties hold a graph, training_info or functions of their "
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
    // Our own serialization: whole fields. Were it not, the rest goes out as it is.
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
                       const KeptTensorVisitor& visit) {
  TensorFinder finder(max_depth, visit);
  // The kept fields are the model's (depth 1) fields on the way to tensors, in the bytes' order.
  TensorFinder::Occurrences seen{};
  for (const KeptField& field : kept) {
    const TensorSiteField* const site = site_field(SiteMessage::kModel, field.number);
    if (site == nullptr) return false;
    const auto row = static_cast<std::size_t>(site - kTensorSiteFields) - kModelFields.first;
    if (!finder.take(*site, seen[row], field.payload, 1, TensorPlace{})) return false;
  }
  return true;
}

bool walk_kept_tensors(const std::vector<KeptField>& kept, std::uint32_t max_depth,
                       const std::function<void(ByteSpan tensor)>& visit) {
  return walk_kept_tensors(kept, max_depth,
                           [&](ByteSpan tensor, const TensorSite&) { visit(tensor); });
}

}  // namespace onnxzip::detail
