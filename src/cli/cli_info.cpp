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
#include "onnxzip/legacy.h"
#include "onnxzip/signing.h"
#include "onnxzip/tensor.h"

namespace onnxzip::cli {
namespace {

// Inline tensors below this many bytes are summed up instead of listed in the text table.
constexpr std::uint64_t kListedInlineBytes = 1024;
constexpr std::size_t kDocStringWidth = 100;

struct InfoArgs {
  std::string file;
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

struct ArchiveContents {
  explicit ArchiveContents(Archive opened) : archive(std::move(opened)) {}

  Archive archive;  // Owns the model.
  std::vector<EntryRow> entries;
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
    by_location[info.entry].push_back(&info);
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

InfoReport gather_archive(const InfoArgs& args, const GlobalOptions& global) {
  // The table needs the entries' sizes, which the ZIP records hold: no payload is inflated (a
  // deflated __MODEL_PROTO is, within the limits).
  LoadOptions options;
  options.inflate_payloads = false;
  options.zip = args.limits.zip_options();
  options.access = global.access();
  // A URL costs the request(s) for its tail: the model and the ZIP records.
  const bool remote = is_remote(args.file);
  ArchiveContents contents(remote ? Archive::open_url(args.file, options, http_options(global))
                                  : Archive::open(args.file, options));
  contents.entries = entry_rows(contents.archive);
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
  return {remote ? display_url(args.file) : args.file, size, std::move(contents)};
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

InfoReport gather_legacy(const InfoArgs& args, FileAccess access) {
  LegacyReadOptions options;
  options.load_external_data = false;  // Describe the references; verify follows them.
  options.access = access;
  LegacyContents contents(read_legacy_model(args.file, options));
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
  return {args.file, file_size(args.file), std::move(contents)};
}

// --- JSON ---

void optional_string_json(JsonWriter& json, const char* key, const std::optional<Text>& value) {
  json.key(key);
  if (value) {
    json.string(*value);
  } else {
    json.null();
  }
}

void optional_number_json(JsonWriter& json, const char* key,
                          const std::optional<std::uint64_t>& value) {
  json.key(key);
  if (value) {
    json.number(*value);
  } else {
    json.null();
  }
}

void optional_number_json(JsonWriter& json, const char* key,
                          const std::optional<std::int64_t>& value) {
  json.key(key);
  if (value) {
    json.number(*value);
  } else {
    json.null();
  }
}

// What describes a tensor in both formats.
void write_tensor_type_json(JsonWriter& json, const TensorType& type) {
  json.key("data_type");
  json.string(type_name(type.data_type));
  json.key("shape");
  json.begin_array();
  for (const std::int64_t d : type.dims) json.number(d);
  json.end_array();
}

void write_opsets_json(JsonWriter& json, const ModelProto& model) {
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

void write_metadata_json(JsonWriter& json, const ModelProto& model) {
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

void write_graph_json(JsonWriter& json, const ModelProto& model) {
  json.key("graph");
  if (!model.graph) {
    json.null();
    return;
  }
  const GraphProto& graph = *model.graph;
  json.begin_object();
  optional_string_json(json, "name", graph.name);
  json.key("inputs");
  json.number(std::uint64_t{graph.input.size()});
  json.key("outputs");
  json.number(std::uint64_t{graph.output.size()});
  json.key("nodes");
  json.number(std::uint64_t{graph.node.size()});
  json.key("initializers");
  json.number(std::uint64_t{graph.initializer.size()});
  json.end_object();
}

void write_model_json(JsonWriter& json, const ModelProto& model) {
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

void write_entry_json(JsonWriter& json, const EntryRow& row) {
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

void write_contents_json(JsonWriter& json, const ArchiveContents& contents) {
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

void write_legacy_tensor_json(JsonWriter& json, const LegacyTensor& t) {
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

void write_contents_json(JsonWriter& json, const LegacyContents& contents) {
  json.key("tensors");
  json.begin_array();
  for (const LegacyTensor& t : contents.tensors) write_legacy_tensor_json(json, t);
  json.end_array();
}

std::string render_json(const InfoReport& report) {
  JsonWriter json;
  json.begin_object();
  json.key("file");
  json.string(report.file);
  json.key("format");
  json.string(std::holds_alternative<ArchiveContents>(report.contents) ? "onnxz" : "onnx");
  json.key("file_size");
  json.number(report.file_size);
  write_model_json(json, report.model());
  std::visit([&](const auto& contents) { write_contents_json(json, contents); }, report.contents);
  json.end_object();
  return json.str();
}

// --- Text ---

// "" and "ai.onnx" are the same domain.
std::string domain_label(const std::optional<Text>& domain) {
  const std::string name(domain.value_or(""));
  return name.empty() ? "ai.onnx" : printable(name);
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
  return "format          .onnxz, " + human_bytes(report.file_size) + ", " +
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

int run_info(const InfoArgs& args, const GlobalOptions& global) {
  const InfoReport report = is_remote(args.file) || detect_format(args.file) == ModelFormat::kOnnxz
                                ? gather_archive(args, global)
                                : gather_legacy(args, global.access());
  std::fputs((args.json ? render_json(report) : render_text(report)).c_str(), stdout);
  return kExitOk;
}

}  // namespace

Command add_info_command(CLI::App& app, const GlobalOptions& global) {
  CLI::App* sub = app.add_subcommand(
      "info", "Describe a model file: metadata, opsets, and a table of its weights");
  auto args = std::make_shared<InfoArgs>();
  sub->add_option("FILE", args->file,
                  "An .onnxz archive (a path or an http(s) URL) or a legacy .onnx model")
      ->required();
  sub->add_flag("--json", args->json, "Print one JSON object instead of text");
  add_inflate_limit_options(*sub, args->limits);
  sub->footer(
      "Prints the model's metadata, opset imports and graph size, then for an .onnxz every\n"
      "entry with its tensor(s), data type, shape, data offset, size and alignment (the\n"
      "largest power of two dividing the offset, at most 64K); for a legacy .onnx its tensors\n"
      "and where their data is (inline, or an external file and offset).\n\n"
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
