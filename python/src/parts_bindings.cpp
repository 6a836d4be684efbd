// The bindings of parts.h: plans, tokens and receipts cross as bytes; payloads as buffers, read
// in place with the GIL released. Errors are onnxzip::Error, translated by the module.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.h"
#include "onnxzip/bytes.h"
#include "onnxzip/integrity.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/parts.h"

namespace py = pybind11;

namespace onnxzip_python {
namespace {

py::bytes to_py_bytes(const std::vector<std::uint8_t>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// A copy of a bytes-like object's bytes (tokens, receipts, plans, models: small).
std::vector<std::uint8_t> bytes_of(const py::handle object) {
  const HeldBuffer buffer(object);
  return {buffer.span().begin(), buffer.span().end()};
}

using PlanTensor = std::tuple<std::string, std::int32_t, std::vector<std::int64_t>>;

onnxzip::PartsPlan make_plan(const std::vector<std::vector<PlanTensor>>& parts,
                             const std::uint32_t alignment, const bool digests) {
  std::vector<std::vector<onnxzip::PartTensor>> lists(parts.size());
  for (std::size_t p = 0; p < parts.size(); ++p) {
    for (const auto& [name, data_type, dims] : parts[p]) {
      lists[p].push_back({.name = name, .data_type = data_type, .dims = dims});
    }
  }
  return onnxzip::PartsPlan::make(lists, {.alignment = alignment, .digests = digests});
}

// (name, entry, data_type, dims, part, size, local_header_offset, offset) per entry.
py::list plan_entries(const onnxzip::PartsPlan& plan) {
  py::list out;
  for (const onnxzip::PlannedEntry& e : plan.entries()) {
    out.append(py::make_tuple(e.name, e.entry, e.data_type, e.dims, e.part, e.size,
                              e.local_header_offset, e.offset));
  }
  return out;
}

void finish(const py::handle token, const py::handle model_bytes, const py::list& receipts,
            const py::object& key_pem, const std::uint64_t threshold) {
  const std::vector<std::uint8_t> token_bytes = bytes_of(token);
  const std::vector<std::uint8_t> model = bytes_of(model_bytes);
  std::vector<std::vector<std::uint8_t>> receipt_bytes;
  for (const py::handle receipt : receipts) {
    receipt_bytes.push_back(bytes_of(receipt));
  }
  std::optional<onnxzip::PrivateKey> key;
  if (!key_pem.is_none()) {
    key = onnxzip::PrivateKey::from_pem(bytes_of(key_pem), "<key>");
  }
  const py::gil_scoped_release unlocked;
  const onnxzip::ModelProto parsed = onnxzip::parse_model(model, {}, "<model bytes>");
  const std::vector<onnxzip::ByteSpan> spans(receipt_bytes.begin(), receipt_bytes.end());
  onnxzip::SaveOptions options;
  options.threshold = threshold;
  onnxzip::finish_parts(token_bytes, parsed, spans, key, options);
}

void register_plan(py::module_& m) {
  py::class_<onnxzip::PartsPlan>(m, "PartsPlan")
      .def(py::init(&make_plan), py::arg("parts"), py::arg("alignment"), py::arg("digests"))
      .def_static(
          "from_bytes",
          [](const py::handle bytes) { return onnxzip::PartsPlan::from_bytes(bytes_of(bytes)); },
          py::arg("bytes"))
      .def("to_bytes", [](const onnxzip::PartsPlan& plan) { return to_py_bytes(plan.to_bytes()); })
      .def_property_readonly("alignment", &onnxzip::PartsPlan::alignment)
      .def_property_readonly("digests", &onnxzip::PartsPlan::digests)
      .def_property_readonly("part_count", &onnxzip::PartsPlan::part_count)
      .def_property_readonly("payload_end", &onnxzip::PartsPlan::payload_end)
      .def("part_range", &onnxzip::PartsPlan::part_range, py::arg("part"))
      .def("entries", &plan_entries)
      .def("__eq__",
           [](const onnxzip::PartsPlan& a, const onnxzip::PartsPlan& b) { return a == b; });
}

}  // namespace

void register_parts(py::module_& m) {
  register_plan(m);
  py::class_<onnxzip::PartWriter>(m, "PartWriter")
      .def(py::init([](const py::handle token, const std::uint32_t part) {
             const std::vector<std::uint8_t> bytes = bytes_of(token);
             const py::gil_scoped_release unlocked;
             return onnxzip::PartWriter(bytes, part);
           }),
           py::arg("token"), py::arg("part"))
      .def(
          "add_tensor",
          [](onnxzip::PartWriter& writer, const std::string& name, const py::handle data) {
            const HeldBuffer buffer(data);
            const py::gil_scoped_release unlocked;
            writer.add_tensor(name, buffer.span());
          },
          py::arg("name"), py::arg("data"))
      .def_property_readonly("plan", &onnxzip::PartWriter::plan)
      .def("receipt", [](const onnxzip::PartWriter& writer) {
        std::vector<std::uint8_t> receipt;
        {
          const py::gil_scoped_release unlocked;
          receipt = writer.receipt();
        }
        return to_py_bytes(receipt);
      });

  m.def(
      "begin_parts",
      [](const std::string& target, const onnxzip::PartsPlan& plan, const bool durable) {
        std::vector<std::uint8_t> token;
        {
          const py::gil_scoped_release unlocked;
          token = onnxzip::begin_parts(target, plan, {.durable = durable});
        }
        return to_py_bytes(token);
      },
      py::arg("target"), py::arg("plan"), py::arg("durable"));
  m.def("finish_parts", &finish, py::arg("token"), py::arg("model_bytes"), py::arg("receipts"),
        py::arg("key_pem"), py::arg("threshold"));
  m.def(
      "abort_parts",
      [](const py::handle token) {
        const std::vector<std::uint8_t> bytes = bytes_of(token);
        const py::gil_scoped_release unlocked;
        onnxzip::abort_parts(bytes);
      },
      py::arg("token"));
}

}  // namespace onnxzip_python
