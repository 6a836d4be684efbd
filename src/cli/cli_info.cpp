// onnxzip info: what a model file holds, as text or JSON: one report gathered per format, then
// rendered.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "cli_common.h"
#include "cli_output.h"
#include "cli_remote.h"
#include "onnxzip/archive.h"
#include "onnxzip/bytes.h"
#include "onnxzip/internal/http_source.h"
#include "onnxzip/internal/json_text.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/legacy.h"
#include "onnxzip/signing.h"
#include "onnxzip/tensor.h"

namespace onnxzip::cli {
namespace {

// Inline tensors below this many bytes are summed up instead of listed in the text table.
constexpr std::uint64_t kListedInlineBytes = 1024;
constexpr std::size_t kDocStringWidth = 100;

struct InfoArgs {
  std::vector<std::string> files;
  bool json = false;
  InflateLimits limits;
};

std::string type_name(std::int32_t data_type) {
  const std::string_view name = data_type_name(data_type);
  return name.empty() ? std::to_string(data_type) : std::string(name);
}

std::string shape_text(const std::vector<std::int64_t>& dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i != 0) text += ", ";
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

std::string first_line(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  if (line.size() > kDocStringWidth) {
    return printable(line.substr(0, kDocStringWidth)) + "...";
  }
  return printable(line);
}

// A graph input's or output's type as info shows it: the element type of a tensor ("FLOAT"),
// "sparse FLOAT", or the kind of a value that is no tensor ("sequence", "map", "optional",
// "opaque"); "" when the type is not given.
std::string value_type_name(const ValueInfoProto& value) {
  if (!value.type) return "";
  const TypeProto& type = *value.type;
  if (type.tensor_type) return type_name(type.tensor_type->elem_type.value_or(0));
  if (type.sparse_tensor_type) {
    return "sparse " + type_name(type.sparse_tensor_type->elem_type.value_or(0));
  }
  if (type.sequence_type) return "sequence";
  if (type.map_type) return "map";
  if (type.optional_type) return "optional";
  if (type.opaque_type) return "opaque";
  return "";
}

// A tensor value's shape, nullptr when it has none (unknown rank, or no tensor).
const TensorShapeProto* value_shape(const ValueInfoProto& value) {
  if (!value.type) return nullptr;
  if (value.type->tensor_type) return value.type->tensor_type->shape.get();
  if (value.type->sparse_tensor_type) return value.type->sparse_tensor_type->shape.get();
  return nullptr;
}

// "[1, 'batch', ?]": a number, a symbolic dimension's name quoted, ? for an unknown one.
std::string value_shape_text(const ValueInfoProto& value) {
  const TensorShapeProto* shape = value_shape(value);
  if (shape == nullptr) return "?";
  std::string text = "[";
  for (const TensorShapeProto::Dimension& dim : shape->dim) {
    if (text.size() > 1) text += ", ";
    if (dim.dim_value) {
      text += std::to_string(*dim.dim_value);
    } else if (dim.dim_param) {
      text += "'" + printable(*dim.dim_param) + "'";
    } else {
      text += "?";
    }
  }
  return text + "]";
}

// The bytes an inline tensor's payload takes (raw_data, or its typed field as raw bytes).
std::uint64_t inline_bytes(const TensorProto& tensor) {
  if (tensor.raw_data) return tensor.raw_data->size();
  if (tensor.data_type.value_or(0) == TensorProto::kString) {
    std::uint64_t total = 0;
    for (const Text& s : tensor.string_data) total += s.size();
    return total;
  }
  return try_tensor_byte_size(tensor).value_or(0);  // info describes, verify judges.
}

// --- What info reports, gathered once and rendered as text or JSON ---

// A tensor's element type and shape.
struct TensorType {
  std::int32_t data_type = 0;
  std::vector<std::int64_t> dims;
};

// An entry of an .onnxz and the tensors whose payload it holds.
struct EntryRow {
  std::string name;
  bool is_model = false;  // The __MODEL_PROTO entry.
  // The tensors referring to the entry (several for tied weights), empty when none does; `type`
  // is the first one's.
  std::vector<std::string> tensor_names;
  TensorType type;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint64_t alignment = 0;
  bool stored = false;
  // Whether offset and alignment are known: an archive read over HTTP has read the local headers
  // of its tail's entries only, and knows the others' from the central directory's layout when it
  // is a conforming one (implied_data_offset).
  bool located = true;
};

// A tensor of an archive, as the TensorInfo record of spec/names.md describes it.
struct TensorRecord {
  std::string name;
  std::string site;
  std::string entry;  // "" for an inline tensor.
  TensorType type;
  std::uint64_t size = 0;
  std::optional<std::uint64_t> offset;  // None for an inline tensor, or one not located.
  std::uint64_t alignment = 0;
  bool zero_copy = false;
};

struct ArchiveContents {
  explicit ArchiveContents(Archive opened) : archive(std::move(opened)) {}

  Archive archive;  // Owns the model.
  std::vector<EntryRow> entries;
  std::vector<TensorRecord> tensors;  // Every tensor that holds data, in the model's order.
  // The ZipReader's findings (spec §9.3): a ZIP that breaks the .onnxz profile (deflated
  // entries, no alignment...) that another tool made; `onnxzip repack` makes it conform.
  std::size_t zip_findings = 0;
  std::size_t payload_count = 0;  // Entries other than __MODEL_PROTO, and their bytes.
  std::uint64_t payload_bytes = 0;
  std::uint64_t inline_count = 0;  // Tensors whose payload is in the model, and their bytes.
  std::uint64_t inline_bytes = 0;
  IntegrityInfo integrity;  // __DIGESTS and __SIGNATURE (spec §12).

  const ModelProto& model() const { return archive.model(); }
};

// A tensor of a legacy model and where its payload is.
struct LegacyTensor {
  std::string name;
  std::string site;
  TensorType type;
  bool external = false;
  std::string location;
  std::optional<std::uint64_t> offset;
  std::uint64_t size = 0;
};

struct LegacyContents {
  explicit LegacyContents(ModelProto model) : model_proto(std::move(model)) {}

  ModelProto model_proto;
  std::vector<LegacyTensor> tensors;
  std::size_t external_count = 0;
  std::uint64_t external_bytes = 0;
  std::uint64_t inline_bytes = 0;

  const ModelProto& model() const { return model_proto; }
};

// Everything info prints about a file, gathered once (gather_archive, gather_legacy); the two
// renderers (render_text, render_json) only format it.
struct InfoReport {
  std::string file;
  std::uint64_t file_size = 0;
  std::variant<ArchiveContents, LegacyContents> contents;

  const ModelProto& model() const {
    return std::visit([](const auto& c) -> const ModelProto& { return c.model(); }, contents);
  }
};

// --- Gathering: .onnxz ---

std::map<std::string, std::vector<const Archive::TensorInfo*>> tensors_by_location(
    const Archive& archive) {
  std::map<std::string, std::vector<const Archive::TensorInfo*>> by_location;
  for (const Archive::TensorInfo& info : archive.tensors()) {
    if (!info.is_inline) by_location[info.entry].push_back(&info);
  }
  return by_location;
}

// The data offset of an entry whose local header was not read (an archive read over HTTP reads
// the tail's only): its data ends where the next entry's local header, or the central directory,
// starts, since a conforming archive has no other bytes (spec §2.3). That is a claim the central
// directory makes, not a checked fact -- the reads of the entry check its header -- so it is given
// only when it is one a conforming archive could make: a stored entry without a data descriptor,
// its data 64-byte aligned, after a header whose extra field fits. A §4.4 gap before the next
// header makes the offset unaligned, and it stays unknown.
std::optional<std::uint64_t> implied_data_offset(const ZipReader& zip, const ZipEntry& entry) {
  const std::vector<ZipEntry>& entries = zip.entries();
  if (!entry.is_stored() || entry.has_data_descriptor) return std::nullopt;
  const std::uint64_t data_end = entry.index + 1 < entries.size()
                                     ? entries[entry.index + 1].local_header_offset
                                     : zip.central_directory_offset();
  if (data_end < entry.compressed_size) return std::nullopt;
  const std::uint64_t data_offset = data_end - entry.compressed_size;
  constexpr std::uint64_t kLocalHeaderSize = 30;
  constexpr std::uint64_t kMaxExtraField = 65535;
  if (data_offset % 64 != 0 || data_offset < entry.local_header_offset) return std::nullopt;
  const std::uint64_t header_and_extra = data_offset - entry.local_header_offset;
  const std::uint64_t header = kLocalHeaderSize + entry.name.size();
  if (header_and_extra < header || header_and_extra - header > kMaxExtraField) return std::nullopt;
  return data_offset;
}

std::vector<EntryRow> entry_rows(const Archive& archive) {
  const auto by_location = tensors_by_location(archive);
  std::vector<EntryRow> rows;
  for (const ZipEntry& entry : archive.zip().entries()) {
    EntryRow row;
    row.name = entry.name;
    row.is_model = entry.name == kModelEntryName;
    const auto found = by_location.find(entry.name);
    if (found != by_location.end()) {
      for (const Archive::TensorInfo* info : found->second) {
        row.tensor_names.push_back(info->name);
      }
      row.type = {found->second.front()->data_type, found->second.front()->dims};
    }
    row.size = entry.size;
    if (entry.local_header_read) {
      row.offset = entry.data_offset;
      row.alignment = entry.alignment();
    } else if (const std::optional<std::uint64_t> implied =
                   implied_data_offset(archive.zip(), entry)) {
      ZipEntry located = entry;
      located.data_offset = *implied;
      row.offset = located.data_offset;
      row.alignment = located.alignment();
    } else {
      row.located = false;
    }
    row.stored = entry.is_stored();
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<TensorRecord> tensor_records(const ModelProto& model,
                                         const std::vector<EntryRow>& entries) {
  std::map<std::string_view, const EntryRow*> by_name;
  for (const EntryRow& row : entries) by_name.emplace(row.name, &row);
  std::vector<TensorRecord> records;
  for_each_tensor(model, [&](const TensorProto& tensor, const TensorSite& site) {
    TensorRecord& record = records.emplace_back();
    record.name = tensor.name.value_or("");
    record.site = std::string(site.path);
    record.type = {tensor.data_type.value_or(0), tensor.dims};
    if (tensor.data_location != TensorProto::kExternal) {
      record.size = inline_bytes(tensor);
      return;
    }
    // Archive::open checked every reference: its location names an entry.
    for (const StringStringEntryProto& kv : tensor.external_data) {
      if (kv.key == "location") record.entry = std::string(kv.value.value_or(""));
    }
    const auto found = by_name.find(record.entry);
    if (found == by_name.end()) return;
    const EntryRow& row = *found->second;
    record.size = row.size;
    if (row.located) record.offset = row.offset;
    record.alignment = row.located ? row.alignment : 0;
    record.zero_copy = row.stored;
  });
  return records;
}

InfoReport gather_archive(const std::string& file, const InfoArgs& args,
                          const GlobalOptions& global) {
  // The table needs the entries' sizes, which the ZIP records hold: no payload is inflated (a
  // deflated __MODEL_PROTO is, within the limits).
  LoadOptions options;
  options.inflate_payloads = false;
  options.limits = args.limits.zip_options();
  // A local file is read with pread, never mapped nor read whole (whatever --no-mmap says):
  // info reads the tail and the local headers, and a file larger than the address space is
  // described all the same. A URL costs the request(s) for its tail: the model and the ZIP
  // records.
  options.access = FileAccess::kRanges;
  const bool remote = is_remote(file);
  ArchiveContents contents(remote ? Archive::open_url(file, options, http_options(global))
                                  : Archive::open(file, options));
  contents.entries = entry_rows(contents.archive);
  contents.tensors = tensor_records(contents.model(), contents.entries);
  contents.zip_findings = contents.archive.zip().findings().size();
  contents.integrity = read_integrity_info(contents.archive.zip());
  for (const EntryRow& row : contents.entries) {
    if (row.is_model || row.name == kDigestsEntryName || row.name == kSignatureEntryName) continue;
    ++contents.payload_count;
    contents.payload_bytes += row.size;
  }
  for_each_tensor(contents.model(), [&](const TensorProto& tensor, const TensorSite&) {
    if (tensor.data_location == TensorProto::kExternal) return;
    ++contents.inline_count;
    contents.inline_bytes += inline_bytes(tensor);
  });
  const std::uint64_t size = contents.archive.zip().size();
  return {remote ? display_url(file) : file, size, std::move(contents)};
}

// --- Gathering: legacy .onnx ---

// Where an external tensor's payload is, as far as its external_data says (info describes even
// references verify would refuse).
void describe_reference(const TensorProto& tensor, LegacyTensor& t) {
  for (const StringStringEntryProto& kv : tensor.external_data) {
    const std::string value(kv.value.value_or(""));
    if (kv.key == "location") t.location = value;
    const std::optional<std::uint64_t> number = parse_decimal(value);
    if (kv.key == "offset" && number) t.offset = *number;
    if (kv.key == "length" && number) t.size = *number;
  }
  if (t.size == 0) t.size = try_tensor_byte_size(tensor).value_or(0);
}

LegacyTensor legacy_tensor(const TensorProto& tensor, const TensorSite& site) {
  LegacyTensor t;
  t.name = tensor.name.value_or("");
  t.site = std::string(site.path);
  t.type = {tensor.data_type.value_or(0), tensor.dims};
  t.external = tensor.data_location == TensorProto::kExternal;
  if (t.external) {
    describe_reference(tensor, t);
  } else {
    t.size = inline_bytes(tensor);
  }
  return t;
}

std::uint64_t file_size(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<std::uint64_t>(size);
}

InfoReport gather_legacy(const std::string& file, FileAccess access) {
  LegacyReadOptions options;
  options.load_external_data = false;  // Describe the references; verify follows them.
  options.access = access;
  LegacyContents contents(read_legacy_model(file, options));
  for_each_tensor(contents.model(), [&](const TensorProto& tensor, const TensorSite& site) {
    contents.tensors.push_back(legacy_tensor(tensor, site));
  });
  for (const LegacyTensor& t : contents.tensors) {
    if (t.external) {
      ++contents.external_count;
      contents.external_bytes += t.size;
    } else {
      contents.inline_bytes += t.size;
    }
  }
  return {file, file_size(file), std::move(contents)};
}

// --- JSON ---

void optional_string_json(JsonText& json, const char* key, const std::optional<Text>& value) {
  json.key(key);
  if (value) {
    json.string(*value);
  } else {
    json.null();
  }
}

void optional_number_json(JsonText& json, const char* key,
                          const std::optional<std::uint64_t>& value) {
  json.key(key);
  if (value) {
    json.number(*value);
  } else {
    json.null();
  }
}

void optional_number_json(JsonText& json, const char* key,
                          const std::optional<std::int64_t>& value) {
  json.key(key);
  if (value) {
    json.number(*value);
  } else {
    json.null();
  }
}

// What describes a tensor in both formats.
void write_tensor_type_json(JsonText& json, const TensorType& type) {
  json.key("data_type");
  json.string(type_name(type.data_type));
  json.key("shape");
  json.begin_array();
  for (const std::int64_t d : type.dims) json.number(d);
  json.end_array();
}

void write_opsets_json(JsonText& json, const ModelProto& model) {
  json.key("opset_import");
  json.begin_array();
  for (const OperatorSetIdProto& opset : model.opset_import) {
    json.begin_object();
    json.key("domain");
    json.string(opset.domain.value_or(""));
    optional_number_json(json, "version", opset.version);
    json.end_object();
  }
  json.end_array();
}

void write_metadata_json(JsonText& json, const ModelProto& model) {
  json.key("metadata_props");
  json.begin_array();
  for (const StringStringEntryProto& kv : model.metadata_props) {
    json.begin_object();
    optional_string_json(json, "key", kv.key);
    optional_string_json(json, "value", kv.value);
    json.end_object();
  }
  json.end_array();
}

// A graph input or output: {"name", "data_type", "shape"}; data_type null when the type is not
// given, shape null when unknown, each dimension a number, a symbolic name or null.
void write_value_json(JsonText& json, const ValueInfoProto& value) {
  json.begin_object();
  optional_string_json(json, "name", value.name);
  json.key("data_type");
  const std::string type = value_type_name(value);
  if (type.empty()) {
    json.null();
  } else {
    json.string(type);
  }
  json.key("shape");
  const TensorShapeProto* shape = value_shape(value);
  if (shape == nullptr) {
    json.null();
  } else {
    json.begin_array();
    for (const TensorShapeProto::Dimension& dim : shape->dim) {
      if (dim.dim_value) {
        json.number(*dim.dim_value);
      } else if (dim.dim_param) {
        json.string(*dim.dim_param);
      } else {
        json.null();
      }
    }
    json.end_array();
  }
  json.end_object();
}

void write_values_json(JsonText& json, const char* key, const std::vector<ValueInfoProto>& values) {
  json.key(key);
  json.begin_array();
  for (const ValueInfoProto& value : values) write_value_json(json, value);
  json.end_array();
}

void write_graph_json(JsonText& json, const ModelProto& model) {
  json.key("graph");
  if (!model.graph) {
    json.null();
    return;
  }
  const GraphProto& graph = *model.graph;
  json.begin_object();
  optional_string_json(json, "name", graph.name);
  write_values_json(json, "inputs", graph.input);
  write_values_json(json, "outputs", graph.output);
  json.key("nodes");
  json.number(std::uint64_t{graph.node.size()});
  json.key("initializers");
  json.number(std::uint64_t{graph.initializer.size()});
  json.end_object();
}

void write_model_json(JsonText& json, const ModelProto& model) {
  json.key("model");
  json.begin_object();
  optional_number_json(json, "ir_version", model.ir_version);
  optional_string_json(json, "producer_name", model.producer_name);
  optional_string_json(json, "producer_version", model.producer_version);
  optional_string_json(json, "domain", model.domain);
  optional_number_json(json, "model_version", model.model_version);
  optional_string_json(json, "doc_string", model.doc_string);
  write_opsets_json(json, model);
  write_metadata_json(json, model);
  write_graph_json(json, model);
  json.key("functions");
  json.number(std::uint64_t{model.functions.size()});
  json.end_object();
}

void write_entry_json(JsonText& json, const EntryRow& row) {
  json.begin_object();
  json.key("name");
  json.string(row.name);
  json.key("tensors");
  json.begin_array();
  for (const std::string& name : row.tensor_names) json.string(name);
  json.end_array();
  if (!row.tensor_names.empty()) write_tensor_type_json(json, row.type);
  optional_number_json(json, "offset",
                       row.located ? std::optional<std::uint64_t>(row.offset) : std::nullopt);
  json.key("size");
  json.number(row.size);
  optional_number_json(json, "alignment",
                       row.located ? std::optional<std::uint64_t>(row.alignment) : std::nullopt);
  json.key("stored");
  json.boolean(row.stored);
  json.end_object();
}

void write_tensor_record_json(JsonText& json, const TensorRecord& t) {
  json.begin_object();
  json.key("name");
  json.string(t.name);
  json.key("site");
  json.string(t.site);
  json.key("entry");
  json.string(t.entry);
  write_tensor_type_json(json, t.type);
  json.key("size");
  json.number(t.size);
  optional_number_json(json, "offset", t.offset);
  json.key("alignment");
  json.number(t.alignment);
  json.key("inline");
  json.boolean(t.entry.empty());
  json.key("zero_copy");
  json.boolean(t.zero_copy);
  json.end_object();
}

void write_contents_json(JsonText& json, const ArchiveContents& contents) {
  json.key("zip_findings");
  json.number(std::uint64_t{contents.zip_findings});
  json.key("tensors");
  json.begin_array();
  for (const TensorRecord& t : contents.tensors) write_tensor_record_json(json, t);
  json.end_array();
  json.key("entries");
  json.begin_array();
  for (const EntryRow& row : contents.entries) write_entry_json(json, row);
  json.end_array();
  json.key("inline_tensors");
  json.begin_object();
  json.key("count");
  json.number(contents.inline_count);
  json.key("bytes");
  json.number(contents.inline_bytes);
  json.end_object();
  const IntegrityInfo& integrity = contents.integrity;
  json.key("integrity");
  json.begin_object();
  json.key("digests");
  json.boolean(integrity.has_digests);
  json.key("digested_entries");
  json.number(integrity.digested_entries);
  json.key("signature");
  json.boolean(integrity.has_signature);
  json.key("key_id");
  json.string(integrity.key_id);
  json.key("problem");
  json.string(integrity.problem);
  json.end_object();
}

void write_legacy_tensor_json(JsonText& json, const LegacyTensor& t) {
  json.begin_object();
  json.key("name");
  json.string(t.name);
  json.key("site");
  json.string(t.site);
  write_tensor_type_json(json, t.type);
  json.key("location");
  if (t.external) {
    json.string(t.location);
  } else {
    json.null();
  }
  optional_number_json(json, "offset", t.offset);
  json.key("size");
  json.number(t.size);
  json.end_object();
}

void write_contents_json(JsonText& json, const LegacyContents& contents) {
  json.key("tensors");
  json.begin_array();
  for (const LegacyTensor& t : contents.tensors) write_legacy_tensor_json(json, t);
  json.end_array();
}

// "onnxz", "zip" (a ZIP of a model that breaks the .onnxz profile), or "onnx".
std::string_view format_name(const InfoReport& report) {
  const auto* archive = std::get_if<ArchiveContents>(&report.contents);
  if (archive == nullptr) return "onnx";
  return archive->zip_findings == 0 ? "onnxz" : "zip";
}

void write_report_json(JsonText& json, const InfoReport& report) {
  json.begin_object();
  json.key("file");
  json.string(report.file);
  json.key("format");
  json.string(format_name(report));
  json.key("file_size");
  json.number(report.file_size);
  write_model_json(json, report.model());
  std::visit([&](const auto& contents) { write_contents_json(json, contents); }, report.contents);
  json.end_object();
}

// --- Text ---

// "" and "ai.onnx" are the same domain.
std::string domain_label(const std::optional<Text>& domain) {
  const std::string name(domain.value_or(""));
  return name.empty() ? "ai.onnx" : printable(name);
}

// "x: FLOAT [1, 'batch', 80]".
std::string value_text(const ValueInfoProto& value) {
  const std::string type = value_type_name(value);
  return printable(value.name.value_or("")) + ": " + (type.empty() ? "?" : type) + " " +
         value_shape_text(value);
}

std::string model_text(const ModelProto& model) {
  std::string out;
  const auto line = [&](const char* label, const std::string& value) {
    out += label;
    out.append(16 - std::string_view(label).size(), ' ');
    out += value + "\n";
  };
  const auto or_dash = [](const std::optional<Text>& value) {
    return value && !value->empty() ? printable(*value) : std::string("-");
  };
  line("ir_version", model.ir_version ? std::to_string(*model.ir_version) : "-");
  std::string producer = or_dash(model.producer_name);
  if (model.producer_version && !model.producer_version->empty()) {
    producer += " " + printable(*model.producer_version);
  }
  line("producer", producer);
  line("domain", or_dash(model.domain));
  line("model_version", model.model_version ? std::to_string(*model.model_version) : "-");
  line("doc_string", model.doc_string && !model.doc_string->empty() ? first_line(*model.doc_string)
                                                                    : std::string("-"));
  std::string opsets;
  for (const OperatorSetIdProto& opset : model.opset_import) {
    if (!opsets.empty()) opsets += ", ";
    opsets += domain_label(opset.domain) + " " +
              (opset.version ? std::to_string(*opset.version) : std::string("?"));
  }
  line("opset_import", opsets.empty() ? "-" : opsets);
  for (const StringStringEntryProto& kv : model.metadata_props) {
    line("metadata", printable(kv.key.value_or("")) + " = " + first_line(kv.value.value_or("")));
  }
  if (model.graph) {
    const GraphProto& graph = *model.graph;
    const auto count = [](std::size_t n, const char* noun) {
      return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
    };
    line("graph", (graph.name ? "'" + printable(*graph.name) + "': " : std::string()) +
                      count(graph.input.size(), "input") + ", " +
                      count(graph.output.size(), "output") + ", " +
                      count(graph.node.size(), "node") + ", " +
                      count(graph.initializer.size(), "initializer"));
    for (const ValueInfoProto& value : graph.input) line("input", value_text(value));
    for (const ValueInfoProto& value : graph.output) line("output", value_text(value));
  } else {
    line("graph", "-");
  }
  if (!model.functions.empty()) line("functions", std::to_string(model.functions.size()));
  return out;
}

std::string integrity_text(const IntegrityInfo& integrity) {
  if (!integrity.has_digests && !integrity.has_signature) return "none";
  std::string text = integrity.has_digests
                         ? "digests of " + std::to_string(integrity.digested_entries) + " entries"
                         : "no digests";
  if (integrity.has_signature) {
    text += ", signed by key " + (integrity.key_id.empty() ? "?" : printable(integrity.key_id));
  } else {
    text += ", not signed";
  }
  if (!integrity.problem.empty()) text += " (unreadable: " + printable(integrity.problem) + ")";
  return text;
}

std::string format_text(const InfoReport& report, const ArchiveContents& contents) {
  const std::size_t payloads = contents.payload_count;
  const std::string format =
      contents.zip_findings == 0
          ? ".onnxz"
          : "ZIP archive, not a conforming .onnxz (" + std::to_string(contents.zip_findings) +
                " ZIP findings: 'onnxzip verify' lists them, 'onnxzip repack' makes one)";
  return "format          " + format + ", " + human_bytes(report.file_size) + ", " +
         std::to_string(payloads) + " payload entr" + (payloads == 1 ? "y" : "ies") + " (" +
         human_bytes(contents.payload_bytes) + ")\n" + "integrity       " +
         integrity_text(contents.integrity) + "\n";
}

std::string format_text(const InfoReport& report, const LegacyContents& contents) {
  return "format          legacy .onnx, " + human_bytes(report.file_size) + ", " +
         std::to_string(contents.tensors.size() - contents.external_count) + " inline tensors (" +
         human_bytes(contents.inline_bytes) + "), " + std::to_string(contents.external_count) +
         " external (" + human_bytes(contents.external_bytes) + ")\n";
}

std::string entry_table(const ArchiveContents& contents) {
  Table table({{"ENTRY"},
               {"TENSOR"},
               {"TYPE"},
               {"SHAPE"},
               {"OFFSET", Table::Align::kRight},
               {"SIZE", Table::Align::kRight},
               {"ALIGN", Table::Align::kRight}});
  for (const EntryRow& row : contents.entries) {
    std::string tensors = row.is_model ? "(the model)" : "-";
    std::string type = "-";
    std::string shape = "-";
    if (!row.tensor_names.empty()) {
      tensors.clear();
      for (const std::string& name : row.tensor_names) {
        if (!tensors.empty()) tensors += ", ";
        tensors += printable(name);
      }
      type = type_name(row.type.data_type);
      shape = shape_text(row.type.dims);
    }
    table.add_row({printable(row.name), tensors, type, shape,
                   row.located ? std::to_string(row.offset) : "-", std::to_string(row.size),
                   row.located ? std::to_string(row.alignment) : "-"});
  }
  return table.render();
}

std::string contents_text(const ArchiveContents& contents) {
  return "inline tensors  " + std::to_string(contents.inline_count) + " (" +
         human_bytes(contents.inline_bytes) + ")\n\n" + entry_table(contents);
}

// Inline tensors under kListedInlineBytes are summed up in one line instead of listed.
std::string contents_text(const LegacyContents& contents) {
  std::uint64_t small_count = 0;
  std::uint64_t small_bytes = 0;
  Table table({{"TENSOR"},
               {"TYPE"},
               {"SHAPE"},
               {"LOCATION"},
               {"OFFSET", Table::Align::kRight},
               {"SIZE", Table::Align::kRight}});
  for (const LegacyTensor& t : contents.tensors) {
    if (!t.external && t.size < kListedInlineBytes) {
      ++small_count;
      small_bytes += t.size;
      continue;
    }
    table.add_row({printable(t.name.empty() ? t.site : t.name), type_name(t.type.data_type),
                   shape_text(t.type.dims), t.external ? printable(t.location) : "(inline)",
                   t.offset ? std::to_string(*t.offset) : "-", std::to_string(t.size)});
  }
  std::string out;
  if (small_count != 0) {
    out += "not listed      " + std::to_string(small_count) + " inline tensors under " +
           human_bytes(kListedInlineBytes) + " (" + human_bytes(small_bytes) + ")\n";
  }
  if (!table.empty()) out += "\n" + table.render();
  return out;
}

std::string render_text(const InfoReport& report) {
  std::string out = "file            " + printable(report.file) + "\n";
  out += std::visit([&](const auto& contents) { return format_text(report, contents); },
                    report.contents);
  out += model_text(report.model());
  out += std::visit([](const auto& contents) { return contents_text(contents); }, report.contents);
  return out;
}

InfoReport gather(const std::string& file, const InfoArgs& args, const GlobalOptions& global) {
  return is_remote(file) || detect_format(file) == ModelFormat::kOnnxz
             ? gather_archive(file, args, global)
             : gather_legacy(file, global.access());
}

// Each file described in turn; one that cannot be read is an error line (as verify's), and the
// next is described all the same. JSON: one object for one file, an array of them for several.
int run_info(const InfoArgs& args, const GlobalOptions& global) {
  int status = kExitOk;
  const bool several = args.files.size() > 1;
  JsonText json;
  if (several) json.begin_array();
  for (std::size_t i = 0; i < args.files.size(); ++i) {
    const std::string& file = args.files[i];
    try {
      const InfoReport report = gather(file, args, global);
      if (args.json) {
        write_report_json(json, report);
      } else {
        std::fputs(((i == 0 ? "" : "\n") + render_text(report)).c_str(), stdout);
      }
    } catch (const Error& e) {
      if (!several) throw;
      status = kExitFailure;
      const std::string shown = is_remote(file) ? display_url(file) : file;
      std::fprintf(stderr, "onnxzip: error: %s\n", printable(with_file(shown, e)).c_str());
    }
    std::fflush(stdout);
  }
  if (several) json.end_array();
  if (args.json) std::fputs(std::move(json).finish().c_str(), stdout);
  return status;
}

}  // namespace

Command add_info_command(CLI::App& app, const GlobalOptions& global) {
  CLI::App* sub = app.add_subcommand(
      "info", "Describe a model file: metadata, opsets, and a table of its weights");
  auto args = std::make_shared<InfoArgs>();
  sub->add_option("FILE", args->files,
                  "The .onnxz archives (paths or http(s) URLs) or legacy .onnx models")
      ->required();
  sub->add_flag("--json", args->json,
                "Print JSON instead of text: one object, or for several files an array of them");
  add_inflate_limit_options(*sub, args->limits);
  sub->footer(
      "Prints the model's metadata, opset imports, graph size and its inputs and outputs\n"
      "(name, element type, shape), then for an .onnxz every entry with its tensor(s), data\n"
      "type, shape, data offset, size and alignment (the largest power of two dividing the\n"
      "offset, at most 64K); for a legacy .onnx its tensors and where their data is (inline,\n"
      "or an external file and offset). A ZIP that breaks the .onnxz profile (deflated or\n"
      "unaligned entries: another tool made it) is shown as a ZIP archive ('onnxzip repack'\n"
      "makes a conforming one). --json adds every tensor's record (name, site, entry, size,\n"
      "offset...). Several files are described in turn.\n\n"
      "Examples:\n"
      "  onnxzip info model.onnxz\n"
      "  onnxzip info --json model.onnxz | python3 -m json.tool\n"
      "  onnxzip info https://example.com/models/model.onnxz\n\n"
      "For a URL, info reads the archive's tail only (one range request when the model and\n"
      "the ZIP records fit in its first MiB, else two); the data offset of an entry whose\n"
      "local header lies before that tail is where the central directory implies it is (its\n"
      "data ends where the next entry starts), or '-' (null in JSON) when the archive breaks\n"
      "that layout.");
  return {sub, [args, &global] { return run_info(*args, global); }};
}

}  // namespace onnxzip::cli
