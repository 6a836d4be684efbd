// The layout plan of an archive written in parts (parts.h, spec §13): every entry's name and
// offsets from the tensors' names, types and shapes, laid out by the ZIP writer's own rules
// (zip_layout.h) and named by the ArchiveWriter's EntryNamer, in plan order, so that the parts
// add up to the bytes one writer would write.
#include <unordered_map>
#include <utility>

#include "archive_internal.h"
#include "check.h"
#include "onnxzip/parts.h"
#include "parts_codec.h"
#include "zip_layout.h"

namespace onnxzip {

using archive_detail::PartsDecoder;
using archive_detail::PartsEncoder;
using archive_detail::quote;

struct PartsPlan::Layout {
  std::uint32_t alignment = 64;
  bool digests = false;
  std::vector<PlannedEntry> entries;
  // Part p's entries are entries[first_entry[p], first_entry[p + 1]); its bytes
  // [first_byte[p], first_byte[p + 1]). Both have part_count + 1 elements.
  std::vector<std::size_t> first_entry;
  std::vector<std::uint64_t> first_byte;
  std::unordered_map<std::string_view, std::size_t> by_name;  // Views into entries.
};

namespace {

constexpr std::string_view kPlanRecord = "parts plan";

// Lays out `tensor` at `position` (entries so far named by `namer`); returns where it ends.
std::uint64_t place_entry(PlannedEntry& planned, std::uint64_t position, std::uint32_t alignment,
                          EntryNamer& namer) {
  const std::string label = "parts plan: tensor " + quote(planned.name);
  planned.size = archive_detail::added_payload_size(label, planned.data_type, planned.dims);
  if (!zip::entry_fits_file(position, planned.size)) {
    throw Error(ErrorCode::kInvalidArgument, {.file = label},
                "size " + std::to_string(planned.size) +
                    " would take the archive past the largest size the system allows");
  }
  planned.entry = namer.name_for(planned.name);
  const zip::EntryLayout layout =
      zip::plan_entry(position, planned.entry.size(), planned.size, alignment);
  planned.local_header_offset = layout.local_header_offset;
  planned.offset = layout.data_offset;
  ONNXZIP_DCHECK(planned.offset % alignment == 0);
  return layout.data_offset + layout.size;
}

}  // namespace

PartsPlan PartsPlan::make(const std::vector<std::vector<PartTensor>>& parts,
                          const PartsOptions& options) {
  if (std::string problem = zip::alignment_problem(options.alignment); !problem.empty()) {
    throw Error(ErrorCode::kInvalidArgument, {.file = std::string(kPlanRecord)},
                std::move(problem));
  }
  if (parts.empty() || parts.size() > UINT32_MAX) {
    throw Error(ErrorCode::kInvalidArgument, {.file = std::string(kPlanRecord)},
                "needs 1 to 2^32 - 1 parts, not " + std::to_string(parts.size()));
  }
  auto layout = std::make_shared<Layout>();
  layout->alignment = options.alignment;
  layout->digests = options.digests;
  std::size_t count = 0;
  for (const std::vector<PartTensor>& part : parts) count += part.size();
  layout->entries.reserve(count);
  EntryNamer namer;
  std::uint64_t position = 0;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    layout->first_entry.push_back(layout->entries.size());
    layout->first_byte.push_back(position);
    for (const PartTensor& tensor : parts[p]) {
      PlannedEntry& planned = layout->entries.emplace_back();
      planned.name = tensor.name;
      planned.data_type = tensor.data_type;
      planned.dims = tensor.dims;
      planned.part = static_cast<std::uint32_t>(p);
      position = place_entry(planned, position, options.alignment, namer);
    }
  }
  layout->first_entry.push_back(layout->entries.size());
  layout->first_byte.push_back(position);
  for (std::size_t i = 0; i < layout->entries.size(); ++i) {
    const PlannedEntry& planned = layout->entries[i];
    // A part writer and a model name a tensor by its name: two of one name would be ambiguous.
    const auto [found, inserted] = layout->by_name.try_emplace(planned.name, i);
    if (!inserted) {
      throw Error(ErrorCode::kInvalidArgument, {.file = std::string(kPlanRecord)},
                  "tensor name " + quote(planned.name) + " is given twice (parts " +
                      std::to_string(layout->entries[found->second].part) + " and " +
                      std::to_string(planned.part) + "); tensor names must be unique");
    }
  }
  return PartsPlan(std::move(layout));
}

std::vector<std::uint8_t> PartsPlan::to_bytes() const {
  PartsEncoder out(archive_detail::kPlanMagic);
  out.u32(layout_->alignment);
  out.u8(layout_->digests ? 1 : 0);
  out.u32(static_cast<std::uint32_t>(part_count()));
  for (std::size_t p = 0; p < part_count(); ++p) {
    const std::span<const PlannedEntry> entries = part(p);
    out.u32(static_cast<std::uint32_t>(entries.size()));
    for (const PlannedEntry& planned : entries) {
      out.text(planned.name);
      out.u32(static_cast<std::uint32_t>(planned.data_type));
      out.u32(static_cast<std::uint32_t>(planned.dims.size()));
      for (const std::int64_t dim : planned.dims) out.u64(static_cast<std::uint64_t>(dim));
    }
  }
  return out.take();
}

PartsPlan PartsPlan::from_bytes(ByteSpan bytes, const PartsPlanLimits& limits) {
  PartsDecoder in(bytes, archive_detail::kPlanMagic, kPlanRecord);
  PartsOptions options;
  options.alignment = in.u32("alignment");
  const std::uint64_t flags_at = in.offset();
  const std::uint8_t flags = in.u8("flags");
  if (flags > 1) in.fail(flags_at, "flags " + std::to_string(flags) + " has unknown bits");
  options.digests = flags == 1;
  // A part takes at least its u32 count; a tensor its name length, type and rank.
  const std::uint64_t part_count = in.count("part count", limits.max_parts, 4);
  std::vector<std::vector<PartTensor>> parts(part_count);
  std::uint64_t tensors = 0;
  for (std::vector<PartTensor>& part : parts) {
    const std::uint64_t count =
        in.count("tensor count", limits.max_tensors - std::min(tensors, limits.max_tensors), 12);
    tensors += count;
    part.resize(count);
    for (PartTensor& tensor : part) {
      tensor.name = in.text("tensor name");
      tensor.data_type = static_cast<std::int32_t>(in.u32("data type"));
      tensor.dims.resize(in.count("rank", limits.max_rank, 8));
      for (std::int64_t& dim : tensor.dims) dim = static_cast<std::int64_t>(in.u64("dim"));
    }
  }
  in.expect_end();
  // make() checks the rest: types, dims, sizes, names, the alignment.
  return with_error_context([] { return ErrorContext{.file = "parts plan bytes"}; },
                            [&] { return make(parts, options); });
}

std::uint32_t PartsPlan::alignment() const noexcept { return layout_->alignment; }
bool PartsPlan::digests() const noexcept { return layout_->digests; }
std::size_t PartsPlan::part_count() const noexcept { return layout_->first_entry.size() - 1; }
std::span<const PlannedEntry> PartsPlan::entries() const noexcept { return layout_->entries; }
std::uint64_t PartsPlan::payload_end() const noexcept { return layout_->first_byte.back(); }

std::span<const PlannedEntry> PartsPlan::part(std::size_t part) const {
  if (part >= part_count()) {
    throw Error(ErrorCode::kInvalidArgument, {.file = std::string(kPlanRecord)},
                "part " + std::to_string(part) + " of a plan of " + std::to_string(part_count()) +
                    " parts");
  }
  const std::span<const PlannedEntry> all = layout_->entries;
  return all.subspan(layout_->first_entry[part],
                     layout_->first_entry[part + 1] - layout_->first_entry[part]);
}

std::pair<std::uint64_t, std::uint64_t> PartsPlan::part_range(std::size_t part) const {
  static_cast<void>(this->part(part));  // The range check.
  return {layout_->first_byte[part], layout_->first_byte[part + 1]};
}

const PlannedEntry* PartsPlan::find(std::string_view name) const noexcept {
  const auto found = layout_->by_name.find(name);
  return found == layout_->by_name.end() ? nullptr : &layout_->entries[found->second];
}

TensorRef PartsPlan::ref(std::string_view name) const {
  const PlannedEntry* planned = find(name);
  if (planned == nullptr) {
    throw Error(ErrorCode::kNotFound, {.file = std::string(kPlanRecord)},
                "no tensor " + quote(name) + " in the plan");
  }
  return TensorRef{.location = planned->entry, .length = planned->size};
}

bool PartsPlan::operator==(const PartsPlan& other) const noexcept {
  return layout_->alignment == other.layout_->alignment &&
         layout_->digests == other.layout_->digests &&
         layout_->first_entry == other.layout_->first_entry &&
         layout_->entries == other.layout_->entries;
}

}  // namespace onnxzip
