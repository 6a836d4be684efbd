// Tensor references and the model entry: the rules of spec §6.1, §7.2 and §9.4 that the archive
// writer, loader, verifier and view writer share.
#include <cstdio>
#include <limits>
#include <memory>
#include <utility>

#include "archive_internal.h"
#include "onnxzip/tensor.h"
#include "onnxzip/zip_writer.h"

namespace onnxzip::archive_detail {
namespace {

using Severity = VerifyFinding::Severity;

std::string entry_label(std::string_view location) { return "entry " + quote(location); }

}  // namespace

bool parse_decimal(std::string_view text, std::uint64_t& value) noexcept {
  if (text.empty()) return false;
  std::uint64_t result = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (result > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return false;
    result = result * 10 + digit;
  }
  value = result;
  return true;
}

std::string location_problem(std::string_view location) {
  // The path-like forms first, so the message says what the location was trying to be.
  if (location.empty()) return "is empty";
  // ONNX Runtime's "*/_ORT_MEM_ADDR_/*" marker; the bare word is a valid entry name.
  if (location.find("/_ORT_MEM_ADDR_/") != std::string_view::npos) {
    return "is ONNX Runtime's in-memory address marker (_ORT_MEM_ADDR_), not an entry";
  }
  if (location.front() == '#') return "starts with '#' (special external data), not an entry";
  const char first = location.front();
  const bool drive = location.size() >= 2 && location[1] == ':' && detail::is_ascii_letter(first);
  if (first == '/' || first == '\\' || drive) return "is an absolute path, not an entry";
  std::size_t start = 0;
  while (start <= location.size()) {
    const std::size_t end = std::min(location.find_first_of("/\\", start), location.size());
    if (location.substr(start, end - start) == "..") {
      return "is a path out of the archive ('..'), not an entry";
    }
    start = end + 1;
  }
  if (location.find_first_of("/\\") != std::string_view::npos) {
    return "is a path, not an entry name";
  }
  if (location.starts_with("__")) return "is a reserved name (spec §6.2), not a payload entry";
  try {
    ZipWriter::validate_name(location, NameKind::kTensor);
  } catch (const Error& e) {
    // "entry name '...': <reason>" -> the reason.
    const std::string_view message = e.what();
    const std::size_t colon = message.rfind(": ");
    return "is not a payload entry name (spec §6.1): " +
           std::string(colon == std::string_view::npos ? message : message.substr(colon + 2));
  }
  return {};
}

TensorProto make_reference(const TensorProto& tensor, std::string_view location,
                           std::uint64_t length) {
  TensorProto reference;
  reference.dims = tensor.dims;
  reference.data_type = tensor.data_type;
  reference.segment = tensor.segment;
  reference.name = tensor.name;
  reference.doc_string = tensor.doc_string;
  reference.metadata_props = tensor.metadata_props;
  reference.unknown_fields = tensor.unknown_fields;
  TensorRef{std::string(location), length}.apply_to(reference);
  return reference;
}

const Text* external_value(const TensorProto& tensor, std::string_view key) noexcept {
  for (const StringStringEntryProto& entry : tensor.external_data) {
    if (entry.key && *entry.key == key) return entry.value ? &*entry.value : nullptr;
  }
  return nullptr;
}

std::size_t PayloadIndex::add(std::string location, std::uint64_t size) {
  const std::size_t index = entries_.size();
  by_location_.emplace(location, index);
  entries_.push_back({std::move(location), size});
  return index;
}

std::size_t PayloadIndex::find(std::string_view location) const {
  const auto found = by_location_.find(std::string(location));
  return found == by_location_.end() ? npos : found->second;
}

std::size_t check_writer_reference(const TensorProto& tensor, std::string_view site,
                                   const PayloadIndex& index, const std::string& source,
                                   std::string_view unknown_location) {
  // Messages are built only on failure: a model may hold very many tensors.
  const auto fail = [&](const std::string& what) {
    throw Error(ErrorCode::kInvalidArgument,
                source + ": " + tensor_label(tensor, site) + ": " + what);
  };
  const std::int32_t data_type = tensor.data_type.value_or(TensorProto::kUndefined);
  const Text* location = external_value(tensor, kLocationKey);
  if (location == nullptr) fail("data_location is EXTERNAL but external_data has no location");
  const std::size_t found = index.find(location->view());
  if (found == PayloadIndex::npos) {
    fail("refers to external data " + quote(*location) + ", " + std::string(unknown_location));
  }
  const PayloadIndex::Entry& entry = index.entries()[found];
  const std::string at_entry = "refers to entry " + quote(entry.location) + " but ";
  if (const std::string problem = location_problem(entry.location); !problem.empty()) {
    fail(at_entry + "that name " + problem + " (spec §6.1, §9.4 item 3)");
  }
  if (tensor.raw_data || !present_typed_field(tensor).empty()) {
    fail(at_entry + "also carries a payload");
  }
  if (element_bits(data_type) == 0) {
    fail(at_entry + "its data type " + std::to_string(data_type) +
         " has no fixed element size (spec §7.2 item 5)");
  }
  std::uint64_t expected = 0;
  try {
    expected = tensor_byte_size(tensor.dims, data_type, "dims");
  } catch (const Error& e) {
    fail(at_entry + e.what());
  }
  if (expected != entry.size) {
    fail(at_entry + "its dims x element size is " + std::to_string(expected) +
         " bytes and the entry holds " + std::to_string(entry.size));
  }
  for (const StringStringEntryProto& kv : tensor.external_data) {
    const std::string key(kv.key.value_or(""));
    const std::string value(kv.value.value_or(""));
    std::uint64_t number = 0;
    const bool numeric = parse_decimal(value, number);
    if (key == kLocationKey) {
      if (value != entry.location) fail("has several locations");
    } else if (key == kLengthKey) {
      if (!numeric || number != entry.size) {
        fail(at_entry + "its length " + quote(value) + " differs from the entry's " +
             std::to_string(entry.size) + " bytes");
      }
    } else if (key == kOffsetKey) {
      if (!numeric || number != 0) {
        fail(at_entry + "has offset " + quote(value) +
             "; a payload starts at its entry's first byte (spec §7.2 item 4)");
      }
    } else {
      fail(at_entry + "has the external_data key " + quote(key) +
           ", which an .onnxz reference must not have (spec §7.2 item 4)");
    }
  }
  return found;
}

const ZipEntry* find_model_entry(const ZipReader& zip, const IssueSink& report) {
  const std::string name(kModelEntryName);
  const ZipEntry* model = zip.find(kModelEntryName);
  if (model == nullptr) {
    report({Severity::kError, ErrorCode::kCorrupt, name, "", 0,
            "not an .onnxz archive: no entry named " + quote(name) + " (spec §9.4 item 1)"});
    return nullptr;
  }
  const std::vector<ZipEntry>& entries = zip.entries();
  if (model->index + 1 != entries.size()) {
    const ZipEntry& after = entries[model->index + 1];
    report({Severity::kError, ErrorCode::kCorrupt, name, "", model->local_header_offset,
            "not an .onnxz archive: entry " + quote(name) + " at offset " +
                std::to_string(model->local_header_offset) + " is not the last entry: entry " +
                quote(after.name) + " follows at offset " +
                std::to_string(after.local_header_offset) + " (spec §2.4, §9.4 item 1)"});
  }
  if (model->central_index + 1 != entries.size()) {
    report({Severity::kError, ErrorCode::kCorrupt, name, "", model->central_header_offset,
            "not an .onnxz archive: the central directory record of entry " + quote(name) +
                " at offset " + std::to_string(model->central_header_offset) +
                " is not the last one (spec §2.4, §9.4 item 1)"});
  }
  return model;
}

const ZipEntry* check_reference(const TensorProto& tensor, std::string_view site,
                                const ZipReader& zip, const IssueSink& report) {
  const std::string label = tensor_label(tensor, site);
  std::string location;
  const ZipEntry* entry = nullptr;
  const auto issue = [&](Severity severity, ErrorCode code, const std::string& what) {
    const std::string place = location.empty() ? label : label + ", " + entry_label(location);
    report({severity, code, location, label, entry != nullptr ? entry->local_header_offset : 0,
            place + ": " + what});
  };
  const auto error = [&](ErrorCode code, const std::string& what) {
    issue(Severity::kError, code, what);
  };
  const auto warning = [&](const std::string& what) {
    issue(Severity::kWarning, ErrorCode::kCorrupt, what);
  };

  // The location: exactly one, a payload entry name, naming an entry.
  std::size_t locations = 0;
  for (const StringStringEntryProto& kv : tensor.external_data) {
    if (kv.key && *kv.key == kLocationKey) {
      if (locations++ == 0) location = kv.value.value_or("");
    }
  }
  if (locations != 1) {
    error(ErrorCode::kCorrupt, locations == 0
                                   ? "data_location is EXTERNAL but external_data has no 'location'"
                                   : "external_data has " + std::to_string(locations) +
                                         " 'location' keys (spec §9.4 item 3)");
    return nullptr;
  }
  if (const std::string problem = location_problem(location); !problem.empty()) {
    error(ErrorCode::kCorrupt, "the location " + problem + " (spec §9.4 item 3)");
    return nullptr;
  }
  entry = zip.find(location);
  if (entry == nullptr) {
    error(ErrorCode::kCorrupt, "the location names no entry of the archive");
    return nullptr;
  }

  bool failed = false;
  if (tensor.raw_data) {
    error(ErrorCode::kCorrupt, "an external tensor also carries raw_data");
    failed = true;
  } else if (const std::string_view field = present_typed_field(tensor); !field.empty()) {
    error(ErrorCode::kCorrupt, "an external tensor also carries " + std::string(field));
    failed = true;
  }

  const std::int32_t data_type = tensor.data_type.value_or(TensorProto::kUndefined);
  std::uint64_t expected = 0;
  bool sized = false;
  if (data_type == TensorProto::kString || data_type == TensorProto::kUndefined) {
    error(ErrorCode::kCorrupt,
          std::string(data_type == TensorProto::kString ? "a STRING" : "an UNDEFINED") +
              " tensor cannot be external (spec §7.2 item 5)");
    failed = true;
  } else if (element_bits(data_type) == 0) {
    error(ErrorCode::kUnsupported,
          "data type " + std::to_string(data_type) + " is unknown to this reader");
    failed = true;
  } else {
    try {
      expected = tensor_byte_size(tensor.dims, data_type, "dims");
      sized = true;
    } catch (const Error& e) {
      error(ErrorCode::kCorrupt, e.what());
      failed = true;
    }
  }
  if (sized && expected != entry->size) {
    error(ErrorCode::kCorrupt, "the entry holds " + std::to_string(entry->size) +
                                   " bytes, but dims x element size of " +
                                   std::string(data_type_name(data_type)) + " is " +
                                   std::to_string(expected) + " (spec §7.3)");
    failed = true;
  }

  // The other keys: length must match, offset must be 0, the rest are findings (§9.4 item 4).
  bool has_length = false;
  for (const StringStringEntryProto& kv : tensor.external_data) {
    const std::string key(kv.key.value_or(""));
    const std::string value(kv.value.value_or(""));
    if (key == kLocationKey) continue;
    std::uint64_t number = 0;
    const bool numeric = parse_decimal(value, number);
    if (key == kLengthKey) {
      has_length = true;
      if (!numeric || number != entry->size) {
        error(ErrorCode::kCorrupt, "length " + quote(value) + " differs from the entry's " +
                                       std::to_string(entry->size) + " bytes");
        failed = true;
      } else if (value != std::to_string(number)) {
        warning("length " + quote(value) + " is not in canonical decimal form (spec §7.2)");
      }
    } else if (key == kOffsetKey) {
      if (!numeric || number != 0) {
        error(ErrorCode::kCorrupt, "offset " + quote(value) +
                                       ": a payload starts at its entry's first byte, so only "
                                       "offset 0 is allowed (spec §7.2 item 4, §9.4 item 3)");
        failed = true;
      } else {
        warning("an 'offset' key (of 0) is not part of a canonical reference (spec §9.4 item 4)");
      }
    } else {
      warning("external_data key " + quote(key) + " is ignored (spec §7.2 item 4, §9.4 item 4)");
    }
  }
  if (!has_length) warning("external_data has no 'length' (spec §7.2 item 3)");
  const auto& kv = tensor.external_data;
  if (has_length && kv.size() >= 2 &&
      (kv[0].key.value_or("") != kLocationKey || kv[1].key.value_or("") != kLengthKey)) {
    warning("external_data keys are not in the order location, length (spec §7.2 item 3)");
  }
  return failed ? nullptr : entry;
}

IssueSink throwing_sink(const std::string& source) {
  return [source](Issue issue) {
    if (issue.severity == Severity::kError) {
      throw Error(issue.code, source + ": " + issue.message);
    }
  };
}

TensorBytes entry_payload(const ZipReader& zip, const ZipEntry& entry, bool verify_crc) {
  if (entry.is_stored()) {
    if (verify_crc) zip.verify(entry);
    return zip.data(entry);
  }
  // Inflated once; every tensor referring to the entry shares the buffer through the token.
  auto inflated = std::make_shared<const TensorBytes>(zip.verified_data(entry));
  const ByteSpan view = inflated->view();
  return TensorBytes::borrowed(view, std::move(inflated));
}

}  // namespace onnxzip::archive_detail
