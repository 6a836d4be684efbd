// onnxzip._onnxzip: the C++ library as seen from Python. The public package (python/onnxzip/)
// builds the Pythonic API on top: onnx.ModelProto in and out, numpy views, exceptions, docs.
// This layer only moves bytes and calls the library: models cross as serialized bytes
// (parse_model / serialize_model on this side, onnx on the other), payloads as buffers that are
// borrowed, never copied. Every call that reads or writes a file releases the GIL.
//
// Errors: an onnxzip::Error becomes the Python class onnxzip._errors picks for its code (one
// family under onnxzip.Error), with the library's message and the code as `.code`.
#include <fcntl.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "bindings.h"
#include "onnxzip/archive.h"
#include "onnxzip/bytes.h"
#include "onnxzip/convert.h"
#include "onnxzip/edit.h"
#include "onnxzip/error.h"
#include "onnxzip/integrity.h"
#include "onnxzip/internal/byte_source.h"
#include "onnxzip/internal/http_source.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/s3.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/legacy.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/onnx_model.h"
#include "onnxzip/signing.h"
#include "onnxzip/tensor.h"
#include "protobuf_bridge.h"

namespace py = pybind11;

namespace onnxzip_python {

onnxzip::OwnerToken hold_buffer(const py::handle object) {
  auto held = std::make_shared<HeldBuffer>(object);
  return {held.get(), [held](const void*) mutable {
            const py::gil_scoped_acquire locked;
            held.reset();
          }};
}

py::str file_text(const std::string_view text, const char* const errors) {
  PyObject* const decoded =
      PyUnicode_DecodeUTF8(text.data(), static_cast<py::ssize_t>(text.size()), errors);
  if (decoded == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(decoded);
}

}  // namespace onnxzip_python

namespace {

using onnxzip_python::file_text;
using onnxzip_python::HeldBuffer;
using onnxzip_python::hold_buffer;

void translate_error(std::exception_ptr thrown) {
  try {
    if (thrown) std::rethrow_exception(thrown);
  } catch (const onnxzip::Error& e) {
    // The place apart from the problem as plain values (Python's Error attributes): names
    // surrogate-escaped as tensors() gives them, so that they compare equal.
    const py::object make = py::module_::import("onnxzip._errors").attr("_from_code");
    const onnxzip::ErrorContext& place = e.context();
    const auto text = [](const std::string& part) { return file_text(part, "backslashreplace"); };
    const py::object exception =
        make(std::string(onnxzip::to_string(e.code())), text(e.message()), file_text(place.file),
             file_text(place.entry_name), file_text(place.tensor_name), file_text(place.site),
             place.offset ? py::object(py::int_(*place.offset)) : py::object(py::none()),
             text(e.problem()));
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exception.ptr())), exception.ptr());
  }
}

onnxzip::SaveOptions save_options(const std::uint32_t alignment, const std::uint64_t threshold,
                                  const bool dedupe, const bool digests,
                                  const onnxzip::S3Options& s3 = {}) {
  onnxzip::SaveOptions options;
  options.s3 = s3;
  options.alignment = alignment;
  options.threshold = threshold;
  options.dedupe = dedupe;
  options.digests = digests;
  return options;
}

// A key given as PEM bytes (any buffer) or as the path of a PEM file; None is no key.
template <typename Key>
std::optional<Key> pem_key(const py::handle key) {
  if (key.is_none()) return std::nullopt;
  if (PyObject_CheckBuffer(key.ptr())) {
    const HeldBuffer buffer(key);
    return Key::from_pem(buffer.span(), "<key bytes>");
  }
  const auto path = py::cast<std::filesystem::path>(key);
  const py::gil_scoped_release unlocked;
  return Key::load(path);
}

// Parses serialized model bytes that the caller keeps alive for as long as the model is used.
onnxzip::ModelProto parse_borrowed(const onnxzip::ByteSpan bytes) {
  onnxzip::ParseOptions options;
  options.no_copy = true;
  return onnxzip::parse_model(bytes, options, "<model bytes>");
}

void save_bytes(const py::handle model_bytes, const std::filesystem::path& path,
                const std::uint32_t alignment, const std::uint64_t threshold, const bool dedupe,
                const bool digests) {
  const HeldBuffer buffer(model_bytes);
  const py::gil_scoped_release unlocked;
  const onnxzip::ModelProto model = parse_borrowed(buffer.span());
  onnxzip::save(model, path, save_options(alignment, threshold, dedupe, digests));
}

// The numpy dtype that views a payload of `data_type`; types numpy lacks are raw views of their
// storage unit (the Python docs list them).
py::dtype dtype_for(const std::int32_t data_type) {
  using T = onnxzip::TensorProto;
  switch (data_type) {
    case T::kFloat:
      return py::dtype::of<float>();
    case T::kUint8:
      return py::dtype::of<std::uint8_t>();
    case T::kInt8:
      return py::dtype::of<std::int8_t>();
    case T::kUint16:
      return py::dtype::of<std::uint16_t>();
    case T::kInt16:
      return py::dtype::of<std::int16_t>();
    case T::kInt32:
      return py::dtype::of<std::int32_t>();
    case T::kInt64:
      return py::dtype::of<std::int64_t>();
    case T::kBool:
      return py::dtype("?");
    case T::kFloat16:
      return py::dtype("<f2");
    case T::kDouble:
      return py::dtype::of<double>();
    case T::kUint32:
      return py::dtype::of<std::uint32_t>();
    case T::kUint64:
      return py::dtype::of<std::uint64_t>();
    case T::kComplex64:
      return py::dtype("<c8");
    case T::kComplex128:
      return py::dtype("<c16");
    case T::kBfloat16:
      return py::dtype::of<std::uint16_t>();
    default:
      return py::dtype::of<std::uint8_t>();  // 8-bit floats and the packed types.
  }
}

// One tensor of an opened archive, as onnxzip.TensorInfo shows it (spec/names.md).
struct TensorRecord {
  std::string name;
  std::string site;
  std::string entry;  // "" when inline.
  std::int32_t data_type = 0;
  std::vector<std::int64_t> dims;
  std::uint64_t size = 0;
  std::optional<std::uint64_t> offset;  // None when inline, or a remote entry's is unknown.
  std::uint64_t alignment = 0;
  bool is_inline = false;
  bool zero_copy = false;
};

onnxzip::FileAccess file_access(const std::string& access) {
  if (access == "map") return onnxzip::FileAccess::kMapPrivate;
  if (access == "read") return onnxzip::FileAccess::kRead;
  throw onnxzip::Error(onnxzip::ErrorCode::kInvalidArgument,
                       "access must be \"map\" or \"read\", not \"" + access + "\"");
}

// A read-only numpy array over `bytes`, which the array's base (a capsule) then owns: a payload
// read from a remote archive (owned, 64-byte aligned), or one checked against its digest
// (borrowed from the mapping, with its owner token).
py::array array_owning(onnxzip::TensorBytes bytes, const py::dtype& dtype,
                       const std::vector<py::ssize_t>& shape) {
  auto* const held = new onnxzip::TensorBytes(std::move(bytes));
  const py::capsule base(held, [](void* p) { delete static_cast<onnxzip::TensorBytes*>(p); });
  py::array result(dtype, shape, held->data(), base);
  py::detail::array_proxy(result.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return result;
}

// Remote payloads asked for together are read in groups of about this many bytes, several at
// once: each group one request (adjacent entries merge), as `onnxzip extract` reads.
constexpr std::uint64_t kRemoteGroupBytes = std::uint64_t{64} << 20;
constexpr unsigned kRemoteGroupsInFlight = 4;

// An opened archive, shared with every numpy view made from it: a view of an inflated (deflated
// in the file) payload keeps the whole Archive alive, a view of a stored one only the mapping.
class PyArchive final {
 public:
  // `location`: a path, or with `remote` an http(s) URL read with range requests (`headers` go
  // with each). `access`: "map" maps the file copy-on-write, so that a write through a view
  // (torch ignores numpy's read-only flag) copies a page instead of killing the process with
  // SIGSEGV; "read" reads the file into memory, for files that others may change.
  // `check_digests` / `public_key`: LoadOptions' lazy digest checking; every payload is then
  // handed out through Archive::payload(), which checks it.
  // `kind` "buffer": `location` is the archive's bytes (any buffer object), viewed in place.
  // `s3`: how an s3://bucket/key URL's store is reached.
  PyArchive(const py::handle location, const std::string& access, const std::string& kind,
            const std::vector<std::string>& headers, const bool check_digests,
            const py::handle public_key, const onnxzip::S3Options& s3) {
    // An open archive holds the model's bytes, about its size, and not the library's parse of
    // it (several times that): Python parses the model when asked for it (Archive.model), and
    // every inline payload is borrowed from those bytes.
    onnxzip::LoadOptions options{.parse = {.no_copy = true, .raw_data_threshold = 0}};
    options.keep_model = false;
    options.access = file_access(access);
    options.check_digests = check_digests;
    options.check_digests_name = "check_digests=True";  // Python's name, not the C++ one.
    options.public_key = pem_key<onnxzip::PublicKey>(public_key);
    checked_ = options.check_digests || options.public_key.has_value();
    options.s3 = s3;
    if (kind == "buffer") {
      const onnxzip::OwnerToken owner = hold_buffer(location);
      const onnxzip::ByteSpan bytes = static_cast<const HeldBuffer*>(owner.get())->span();
      const py::gil_scoped_release unlocked;
      archive_ = std::make_shared<const onnxzip::Archive>(
          onnxzip::Archive::from_bytes(bytes, owner, options, "<memory>"));
    } else if (kind == "url") {
      onnxzip::HttpOptions http;
      http.headers = headers;
      const auto url = py::cast<std::string>(location);
      const py::gil_scoped_release unlocked;
      archive_ =
          std::make_shared<const onnxzip::Archive>(onnxzip::Archive::open_url(url, options, http));
    } else {
      // A path may hold bytes that are not UTF-8 (os.fsencode's surrogates).
      const auto path = py::cast<std::filesystem::path>(location);
      const py::gil_scoped_release unlocked;
      archive_ = std::make_shared<const onnxzip::Archive>(onnxzip::Archive::open(path, options));
    }
    ranged_ = archive_->zip().source().access() == onnxzip::ByteSource::Access::kRanges;
  }

  py::bytes model_bytes() const {
    const onnxzip::ByteSpan bytes = archive().model_bytes();
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  }

  // Every tensor of the model that holds data, in for_each_tensor order: Archive::tensors(),
  // external and inline (small initializers save() kept in the model, Constant values...).
  std::vector<TensorRecord> tensors() const {
    std::vector<TensorRecord> result;
    for (std::size_t i = 0; i < archive().tensors().size(); ++i) result.push_back(tensor(i));
    return result;
  }

  // tensors()[index] alone: onnxzip.Archive makes these records only when asked for.
  TensorRecord tensor(const std::size_t index) const {
    const onnxzip::Archive::TensorInfo& t = info(index);
    // A remote entry's data offset is not known before its local header is read.
    return {.name = t.name,
            .site = t.site,
            .entry = t.entry,
            .data_type = t.data_type,
            .dims = t.dims,
            .size = t.size,
            .offset = ranged_ ? std::nullopt : t.offset,
            .alignment = ranged_ ? 0 : t.alignment,
            .is_inline = t.is_inline,
            .zero_copy = t.zero_copy};
  }

  // The model's metadata_props as (key, value) pairs, parsed here from the model's bytes (the
  // Archive keeps no parse): the Python side need not parse the graph for them.
  std::vector<std::pair<py::str, py::str>> metadata() const {
    archive();                                                      // Closed: BadStateError.
    const std::shared_ptr<const onnxzip::Archive> held = archive_;  // Against a close meanwhile.
    onnxzip::ModelProto model;
    {
      const py::gil_scoped_release unlocked;
      model = parse_borrowed(held->model_bytes());
    }
    std::vector<std::pair<py::str, py::str>> result;
    for (const auto& entry : model.metadata_props) {
      result.emplace_back(file_text(entry.key.value_or("")), file_text(entry.value.value_or("")));
    }
    return result;
  }

  std::size_t tensor_count() const { return archive().tensors().size(); }

  // (names, sites, entries) of tensors(), in its order ("" for an unnamed or inline tensor's
  // missing part): what onnxzip.Archive looks tensors up by, without a record per tensor.
  py::tuple columns() const {
    py::list names;
    py::list sites;
    py::list entries;
    for (const onnxzip::Archive::TensorInfo& t : archive().tensors()) {
      names.append(file_text(t.name));
      sites.append(file_text(t.site));
      entries.append(file_text(t.entry));
    }
    return py::make_tuple(names, sites, entries);
  }

  // A read-only numpy array over tensor `index` of tensors(): no byte copied for an external
  // tensor; an inline one's array owns a copy of its payload (Archive::payload).
  py::array array(const std::size_t index) const {
    const onnxzip::Archive::TensorInfo& t = info(index);
    if (t.is_inline || ranged_ || checked_) {
      std::vector<onnxzip::TensorBytes> read = fetch_without_gil({&t});
      return array_of(t, std::move(read.front()));
    }
    const std::vector<py::ssize_t> shape = shape_of(t.data_type, t.dims, t.data.size());
    // The capsule is the array's base: it owns a reference to the memory, so the array outlives
    // this object and the Python Archive.
    py::capsule base;
    if (t.zero_copy) {
      base = py::capsule(new onnxzip::OwnerToken(archive().owner()),
                         [](void* p) { delete static_cast<onnxzip::OwnerToken*>(p); });
    } else {
      base = py::capsule(new std::shared_ptr<const onnxzip::Archive>(archive_), [](void* p) {
        delete static_cast<std::shared_ptr<const onnxzip::Archive>*>(p);
      });
    }
    py::array result(dtype_for(t.data_type), shape, t.data.data(), base);
    py::detail::array_proxy(result.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    return result;
  }

  // arrays of tensors()[indices], the payloads a remote archive holds read together (merged,
  // in parallel), the GIL released meanwhile.
  py::list arrays(const std::vector<std::size_t>& indices) const {
    std::vector<std::size_t> external;  // Positions in `indices` of what fetch() reads.
    std::vector<const onnxzip::Archive::TensorInfo*> infos;
    for (std::size_t k = 0; k < indices.size(); ++k) {
      const onnxzip::Archive::TensorInfo& t = info(indices[k]);
      if (!t.is_inline && (ranged_ || checked_)) {
        external.push_back(k);
        infos.push_back(&t);
      }
    }
    std::vector<onnxzip::TensorBytes> read = fetch_without_gil(infos);
    std::vector<py::object> out(indices.size());
    for (std::size_t j = 0; j < external.size(); ++j) {
      out[external[j]] = array_of(*infos[j], std::move(read[j]));
    }
    py::list result;
    for (std::size_t k = 0; k < indices.size(); ++k) {
      result.append(out[k] ? out[k] : py::object(array(indices[k])));
    }
    return result;
  }

  // Copies of the payloads of tensors()[indices] (for onnx's raw_data, which must own its
  // bytes), read as arrays() reads them; each read buffer is let go once copied.
  py::list payloads(const std::vector<std::size_t>& indices) const {
    std::vector<const onnxzip::Archive::TensorInfo*> infos;
    std::vector<std::size_t> external;
    for (std::size_t k = 0; k < indices.size(); ++k) {
      const onnxzip::Archive::TensorInfo& t = info(indices[k]);
      if (!t.is_inline) {
        external.push_back(k);
        infos.push_back(&t);
      }
    }
    std::vector<onnxzip::TensorBytes> read = fetch_without_gil(infos);
    std::vector<py::object> out(indices.size());
    for (std::size_t j = 0; j < external.size(); ++j) {
      out[external[j]] = copy_to_bytes(read[j].view());
      read[j] = onnxzip::TensorBytes();
    }
    py::list result;
    for (std::size_t k = 0; k < indices.size(); ++k) {
      result.append(out[k] ? out[k] : py::object(payload(indices[k])));
    }
    return result;
  }

  // A copy of tensor `index`'s payload (for onnx's raw_data, which must own its bytes).
  py::bytes payload(const std::size_t index) const {
    const onnxzip::Archive::TensorInfo& t = info(index);
    if (t.is_inline || ranged_ || checked_) {
      std::vector<onnxzip::TensorBytes> read = fetch_without_gil({&t});
      return copy_to_bytes(read.front().view());
    }
    return copy_to_bytes(t.data);
  }

  void close() { archive_.reset(); }
  bool closed() const { return archive_ == nullptr; }
  bool remote() const { return ranged_; }
  // (requests, bytes) the remote archive's source has made and received; (0, 0) for a file.
  std::pair<std::uint64_t, std::uint64_t> http_stats() const {
    const auto* source = dynamic_cast<const onnxzip::HttpSource*>(&archive().zip().source());
    if (source == nullptr) return {0, 0};
    const onnxzip::HttpStats stats = source->stats();
    return {stats.requests, stats.bytes};
  }

 private:
  const onnxzip::Archive& archive() const {
    if (!archive_) throw onnxzip::Error(onnxzip::ErrorCode::kBadState, "the archive is closed");
    return *archive_;
  }
  const onnxzip::Archive::TensorInfo& info(const std::size_t index) const {
    const auto& tensors = archive().tensors();
    if (index >= tensors.size()) throw py::index_error("no tensor " + std::to_string(index));
    return tensors[index];
  }

  static py::bytes copy_to_bytes(const onnxzip::ByteSpan data) {
    PyObject* const bytes =
        PyBytes_FromStringAndSize(nullptr, static_cast<py::ssize_t>(data.size()));
    if (bytes == nullptr) throw py::error_already_set();
    py::bytes result = py::reinterpret_steal<py::bytes>(bytes);
    {
      const py::gil_scoped_release unlocked;
      if (!data.empty()) std::memcpy(PyBytes_AS_STRING(bytes), data.data(), data.size());
    }
    return result;
  }

  py::array array_of(const onnxzip::Archive::TensorInfo& t, onnxzip::TensorBytes bytes) const {
    const std::vector<py::ssize_t> shape = shape_of(t.data_type, t.dims, bytes.size());
    return array_owning(std::move(bytes), dtype_for(t.data_type), shape);
  }

  // fetch() of `infos` with the GIL released. The archive is held meanwhile: a close() from
  // another thread while the GIL is released must not free it.
  std::vector<onnxzip::TensorBytes> fetch_without_gil(
      const std::vector<const onnxzip::Archive::TensorInfo*>& infos) const {
    const std::shared_ptr<const onnxzip::Archive> held = archive_;
    const py::gil_scoped_release unlocked;
    return fetch(*held, infos);
  }

  // a.payloads() of `infos` (called without the GIL, `a` held by the caller). A remote
  // archive's are read in groups of about kRemoteGroupBytes in file order, up to
  // kRemoteGroupsInFlight groups at once: a whole model is not one request of its size, and the
  // requests overlap.
  std::vector<onnxzip::TensorBytes> fetch(
      const onnxzip::Archive& a,
      const std::vector<const onnxzip::Archive::TensorInfo*>& infos) const {
    if (!ranged_) return a.payloads(infos);
    std::vector<std::size_t> order(infos.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    // File order: a remote entry's data offset is known once its local header is read, the
    // header's own offset from the central directory.
    const auto header_offset = [&](std::size_t i) {
      const onnxzip::ZipEntry* const entry = a.zip().find(infos[i]->entry);
      return entry == nullptr ? 0 : entry->local_header_offset;
    };
    std::sort(order.begin(), order.end(),
              [&](std::size_t x, std::size_t y) { return header_offset(x) < header_offset(y); });
    std::vector<std::vector<std::size_t>> groups;
    std::uint64_t group_bytes = 0;
    for (const std::size_t i : order) {
      const std::uint64_t size = infos[i]->size;
      if (groups.empty() || (group_bytes > 0 && group_bytes + size > kRemoteGroupBytes)) {
        groups.emplace_back();
        group_bytes = 0;
      }
      groups.back().push_back(i);
      group_bytes += size;
    }
    std::vector<onnxzip::TensorBytes> out(infos.size());
    const auto read_group = [&](const std::vector<std::size_t>& group) {
      std::vector<const onnxzip::Archive::TensorInfo*> some;
      for (const std::size_t i : group) some.push_back(infos[i]);
      std::vector<onnxzip::TensorBytes> read = a.payloads(some);
      for (std::size_t k = 0; k < group.size(); ++k) out[group[k]] = std::move(read[k]);
    };
    if (groups.size() <= 1) {
      for (const auto& group : groups) read_group(group);
      return out;
    }
    std::atomic<std::size_t> next{0};
    std::mutex failure_lock;
    std::exception_ptr failure;
    const auto work = [&] {
      for (std::size_t g = next++; g < groups.size(); g = next++) {
        try {
          read_group(groups[g]);
        } catch (...) {
          const std::lock_guard<std::mutex> locked(failure_lock);
          if (!failure) failure = std::current_exception();
          next = groups.size();  // The others stop after their current group.
        }
      }
    };
    std::vector<std::thread> threads;
    const std::size_t count = std::min<std::size_t>(kRemoteGroupsInFlight, groups.size());
    for (std::size_t t = 1; t < count; ++t) threads.emplace_back(work);
    work();
    for (std::thread& thread : threads) thread.join();
    if (failure) std::rethrow_exception(failure);
    return out;
  }

  static std::vector<py::ssize_t> shape_of(const std::int32_t data_type,
                                           const std::vector<std::int64_t>& dims,
                                           const std::size_t nbytes) {
    if (onnxzip::is_sub_byte_type(data_type)) return {static_cast<py::ssize_t>(nbytes)};
    return {dims.begin(), dims.end()};
  }

  std::shared_ptr<const onnxzip::Archive> archive_;
  bool ranged_ = false;   // Payloads are read when asked for (a remote archive).
  bool checked_ = false;  // Payloads are checked against `__DIGESTS` when handed out.
};

// ArchiveWriter with an explicit abort(), so that Python's `with` decides when the temporary
// file goes, not the garbage collector.
class PyWriter final {
 public:
  PyWriter(const std::filesystem::path& path, const std::uint32_t alignment,
           const std::uint64_t threshold, const bool dedupe, const bool digests,
           const onnxzip::S3Options& s3) {
    const py::gil_scoped_release unlocked;
    writer_.emplace(path, save_options(alignment, threshold, dedupe, digests, s3));
  }

  std::pair<std::string, std::uint64_t> add_tensor(const std::string& name,
                                                   const std::int32_t data_type,
                                                   const std::vector<std::int64_t>& dims,
                                                   const py::handle data) {
    onnxzip::ArchiveWriter& w = writer();
    const HeldBuffer buffer(data);
    const py::gil_scoped_release unlocked;
    const onnxzip::TensorRef ref = w.add_tensor(name, data_type, dims, buffer.span());
    return {ref.location, ref.length};
  }

  // Adds the payload of a serialized TensorProto (raw_data, or a typed field converted to raw
  // little-endian bytes as save() does), named after the tensor. None for a tensor save() would
  // leave inline whatever its size (STRING, UNDEFINED, a type this library does not know).
  std::optional<std::pair<std::string, std::uint64_t>> add_tensor_proto(
      const py::handle tensor_bytes) {
    onnxzip::ArchiveWriter& w = writer();
    const HeldBuffer buffer(tensor_bytes);
    const py::gil_scoped_release unlocked;
    onnxzip::ParseOptions options;
    options.no_copy = true;
    const auto tensor =
        onnxzip::parse_message<onnxzip::TensorProto>(buffer.span(), options, "<tensor bytes>");
    const std::int32_t data_type = tensor.data_type.value_or(0);
    if (onnxzip::element_bits(data_type) == 0) return std::nullopt;
    const std::string name(tensor.name.value_or(""));
    const std::vector<std::int64_t> dims(tensor.dims.begin(), tensor.dims.end());
    if (tensor.raw_data && !onnxzip::typed_data_to_raw(tensor).empty()) {
      throw onnxzip::Error(onnxzip::ErrorCode::kInvalidArgument,
                           w.path().string() + ": tensor \"" + name +
                               "\": carries both raw_data and a typed field; which one is the "
                               "payload?");
    }
    onnxzip::TensorRef ref;
    if (tensor.raw_data) {
      ref = w.add_tensor(name, data_type, dims, tensor.raw_data->view());
    } else {
      const onnxzip::OwnedBytes raw = onnxzip::typed_data_to_raw(tensor);
      ref = w.add_tensor(name, data_type, dims, raw.span());
    }
    return std::make_pair(ref.location, ref.length);
  }

  void finish(const py::handle model_bytes) {
    onnxzip::ArchiveWriter& w = writer();
    const HeldBuffer buffer(model_bytes);
    const py::gil_scoped_release unlocked;
    w.finish(parse_borrowed(buffer.span()));
  }

  // finish() of an onnx.ModelProto read in place (protobuf_bridge.h); false when the bridge
  // cannot be used, and nothing was done.
  bool finish_message(const py::handle model, const py::list& tensors,
                      const std::uint64_t threshold) {
    onnxzip::ArchiveWriter& w = writer();
    return onnxzip_python::write_message(
        model, tensors, threshold, [&](const onnxzip::ModelProto& parsed) { w.finish(parsed); });
  }

  // Drops the writer: its temporary file is removed, nothing appears at the path (unless
  // finish() succeeded before).
  void abort() {
    const py::gil_scoped_release unlocked;
    writer_.reset();
  }

 private:
  onnxzip::ArchiveWriter& writer() {
    if (!writer_) {
      throw onnxzip::Error(onnxzip::ErrorCode::kBadState, "the writer was aborted or closed");
    }
    return *writer_;
  }

  std::optional<onnxzip::ArchiveWriter> writer_;
};

// The options of convert() that Python passes by keyword.
struct PyConvertOptions {
  std::uint32_t alignment = 64;
  std::uint64_t threshold = 0;
  bool dedupe = false;
  std::optional<bool> external_data;
  std::string data_file_name;
  std::uint64_t max_file_size = 0;
  std::uint64_t data_alignment = 0;
  bool digests = false;
  bool externalize_attributes = false;
  bool externalize_sparse = false;
  onnxzip::S3Options s3;
};

onnxzip::ConvertOptions convert_options(const PyConvertOptions& o) {
  onnxzip::ConvertOptions options;
  options.archive = save_options(o.alignment, o.threshold, o.dedupe, o.digests, o.s3);
  if (o.external_data) {
    options.legacy.mode = *o.external_data ? onnxzip::LegacyWriteOptions::Mode::kExternal
                                           : onnxzip::LegacyWriteOptions::Mode::kInline;
  }
  options.legacy.data_file_name = o.data_file_name;
  options.legacy.max_file_size = o.max_file_size;
  options.legacy.alignment = o.data_alignment;
  options.legacy.threshold = o.threshold;
  options.legacy.externalize_attributes = o.externalize_attributes;
  options.legacy.externalize_sparse = o.externalize_sparse;
  options.load.verify_crc = true;  // As the CLI: a damaged archive must not convert.
  return options;
}

std::string format_name(const onnxzip::ModelFormat format) {
  return format == onnxzip::ModelFormat::kOnnxz ? "onnxz" : "legacy";
}

// A remote file downloaded whole into an unnamed temporary file (O_TMPFILE under TMPDIR, gone
// with its descriptor): verify, repack and a legacy convert read it as a local file at `path`
// ("/proc/self/fd/N"), as the CLI does (src/cli/cli_remote.cpp).
class Download final {
 public:
  // Called without the GIL.
  explicit Download(const onnxzip::HttpSource& source) {
    const char* const tmpdir = std::getenv("TMPDIR");
    const std::string folder = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
    const std::string& shown = source.name();
    fd_ = ::open(folder.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      throw onnxzip::Error(onnxzip::ErrorCode::kIo, {.file = shown},
                           "cannot make a temporary file in " + folder +
                               " to download it into: " + std::strerror(errno));
    }
    try {
      source.fetch(0, source.size(), [&](const std::uint64_t at, const onnxzip::ByteSpan piece) {
        std::size_t done = 0;
        while (done < piece.size()) {
          const ssize_t n = ::pwrite(fd_, piece.data() + done, piece.size() - done,
                                     static_cast<off_t>(at + done));
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) {
            throw onnxzip::Error(
                onnxzip::ErrorCode::kIo, {.file = shown},
                "cannot write its download to " + folder + ": " + std::strerror(errno));
          }
          done += static_cast<std::size_t>(n);
        }
      });
    } catch (...) {
      ::close(fd_);  // The destructor does not run for a constructor that throws.
      throw;
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~Download() {
    if (fd_ >= 0) ::close(fd_);
  }
  Download(const Download&) = delete;
  Download& operator=(const Download&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  int fd_ = -1;
  std::filesystem::path path_;
};

onnxzip::HttpOptions http_options(const std::vector<std::string>& headers) {
  onnxzip::HttpOptions http;
  http.headers = headers;
  return http;
}

// The source of an http(s) URL (with `headers`) or of s3://bucket/key (signed; `s3`'s settings
// over those the AWS tools find).
std::shared_ptr<const onnxzip::HttpSource> remote_source(const std::string& url,
                                                         const std::vector<std::string>& headers,
                                                         const onnxzip::S3Options& s3 = {}) {
  if (onnxzip::is_s3_url(url)) return onnxzip::open_s3_source(url, http_options(headers), s3);
  return onnxzip::HttpSource::open(url, http_options(headers));
}

// convert() of the file at `src` (`kind` "path") or URL (`kind` "url", `headers` with its
// requests) into `dst`; `check_output(format)` runs first, with the input's format, and may
// refuse the output's name. An archive at a URL is written while it downloads (convert_remote);
// a legacy model is downloaded first and converted as a local file, as the CLI does. Returns the
// input's format.
std::string convert(const py::handle src, const std::string& kind, const std::filesystem::path& dst,
                    const PyConvertOptions& py_options, const std::vector<std::string>& headers,
                    const py::function& check_output) {
  const onnxzip::ConvertOptions options = convert_options(py_options);
  if (kind == "path") {
    const auto path = py::cast<std::filesystem::path>(src);
    onnxzip::ModelFormat format;
    {
      const py::gil_scoped_release unlocked;
      format = onnxzip::detect_format(path);
    }
    check_output(format_name(format));
    const py::gil_scoped_release unlocked;
    return format_name(onnxzip::convert(path, dst, options).from);
  }
  const auto url = py::cast<std::string>(src);
  std::shared_ptr<const onnxzip::HttpSource> source;
  onnxzip::ModelFormat format;
  {
    const py::gil_scoped_release unlocked;
    source = remote_source(url, headers);
    format = onnxzip::detect_format(*source);
  }
  check_output(format_name(format));
  const py::gil_scoped_release unlocked;
  if (format == onnxzip::ModelFormat::kOnnxz) {
    onnxzip::convert_remote(source, dst, options);
  } else {
    const Download file(*source);
    onnxzip::convert(file.path(), dst, options);
  }
  return format_name(format);
}

// What verify() reads: a file, a caller's buffer or a URL's download, mapped or borrowed.
struct VerifySource {
  std::optional<std::filesystem::path> path;  // Set for a file (a legacy model's folder counts).
  std::optional<Download> download;
  std::shared_ptr<const onnxzip::MappedFile> mapping;
  std::optional<HeldBuffer> buffer;
  std::string name;  // What findings call it.
};

// ((severity, kind, entry, tensor, offset, message) per finding, digests, signature,
// signature_key_id, checked): the C++ VerifyReport, statuses and kinds as spec/names.md spells
// them; the message is the whole line, its place included (onnxzip::to_string(VerifyFinding)).
// `kind`: "path", "url" (`headers` go with its requests) or "buffer" (`source` is the model's
// bytes).
py::tuple verify(const py::handle source, const std::string& kind, const bool check_crc,
                 const py::handle public_key, const std::vector<std::string>& headers,
                 const onnxzip::S3Options& s3) {
  onnxzip::VerifyOptions options;
  options.check_crc = check_crc;
  options.public_key = pem_key<onnxzip::PublicKey>(public_key);
  options.public_key_term = "public_key=";
  VerifySource from;
  if (kind == "buffer") {
    from.buffer.emplace(source);
    from.name = "<memory>";
  } else if (kind == "path") {
    from.path = py::cast<std::filesystem::path>(source);
    from.name = from.path->string();
  }
  const std::string url = kind == "url" ? py::cast<std::string>(source) : std::string();
  onnxzip::VerifyReport report;
  {
    const py::gil_scoped_release unlocked;
    if (kind == "url") {
      from.download.emplace(*remote_source(url, headers, s3));
      from.mapping = onnxzip::MappedFile::open(from.download->path());
      from.name = onnxzip::display_url(url);
    } else if (from.path && !std::filesystem::is_directory(*from.path)) {
      // Opened once: an archive is verified from this mapping (a legacy model's external
      // data is read by verify_model_file, from its folder).
      from.mapping = onnxzip::MappedFile::open(*from.path);
    }
    const onnxzip::ByteSpan bytes = from.buffer    ? from.buffer->span()
                                    : from.mapping ? from.mapping->bytes()
                                                   : onnxzip::ByteSpan();
    const bool archive = bytes.size() >= 4 && bytes[0] == 'P' && bytes[1] == 'K' &&
                         ((bytes[2] == 3 && bytes[3] == 4) || (bytes[2] == 5 && bytes[3] == 6));
    // What `onnxzip verify` reports.
    report = from.path && !archive ? onnxzip::verify_model_file(*from.path, options)
                                   : onnxzip::verify_model_bytes(bytes, options, from.name);
  }
  py::list findings;
  for (const onnxzip::VerifyFinding& f : report.findings) {
    findings.append(py::make_tuple(std::string(onnxzip::to_string(f.severity)),
                                   std::string(onnxzip::to_string(f.kind)), file_text(f.entry),
                                   file_text(f.tensor), f.offset,
                                   file_text(onnxzip::to_string(f), "backslashreplace")));
  }
  return py::make_tuple(findings, std::string(onnxzip::to_string(report.digests)),
                        std::string(onnxzip::to_string(report.signature)),
                        file_text(report.signature_key_id), file_text(report.checked));
}

// EditOptions::wait and SignOptions::wait from Python's `wait=` seconds.
std::chrono::milliseconds lock_wait(const double seconds) {
  // A day at most, as the CLI's --wait: more is a typo.
  if (!(seconds >= 0 && seconds <= 86400)) {
    throw onnxzip::Error(
        onnxzip::ErrorCode::kInvalidArgument,
        "wait=" + std::to_string(seconds) + ": not a number of seconds from 0 to 86400");
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

// sign_archive() with a key (PEM bytes or a path) or None for `__DIGESTS` alone:
// (entries, key_id, signature_removed, file_size, entries_read).
py::tuple sign(const std::filesystem::path& path, const py::handle key, const bool durable,
               const double wait, const onnxzip::S3Options& s3) {
  onnxzip::SignOptions options;
  options.s3 = s3;
  options.key = pem_key<onnxzip::PrivateKey>(key);
  options.output.durable = durable;
  options.wait = lock_wait(wait);
  onnxzip::SignResult result;
  {
    const py::gil_scoped_release unlocked;
    result = onnxzip::sign_archive(path, options);
  }
  return py::make_tuple(result.entries, result.key_id, result.signature_removed, result.file_size,
                        result.entries_read);
}

// (compacted, dropped_entries, model_offset, model_size, file_size)
// An EditResult as the fields of onnxzip.EditResult, in order.
py::tuple edit_result(const onnxzip::EditResult& result) {
  py::list dropped;
  for (const std::string& entry : result.dropped_entries) dropped.append(file_text(entry));
  return py::make_tuple(result.compacted, dropped, result.model_offset, result.model_size,
                        result.file_size, result.digests_updated, result.signed_again,
                        result.signature_removed, result.digests_removed, result.object_rewritten);
}

py::tuple replace_model(const std::filesystem::path& path, const py::handle model_bytes,
                        const bool compact, const bool durable, const py::handle key,
                        const double wait, const onnxzip::S3Options& s3) {
  onnxzip::EditOptions options;
  options.s3 = s3;
  options.compact = compact;
  options.output.durable = durable;
  options.wait = lock_wait(wait);
  options.signing_key = pem_key<onnxzip::PrivateKey>(key);
  onnxzip::EditResult result;
  {
    const HeldBuffer buffer(model_bytes);
    const py::gil_scoped_release unlocked;
    result = onnxzip::replace_model(path, parse_borrowed(buffer.span()), options);
  }
  return edit_result(result);
}

// edit_model() with `change` a Python callable from the serialized model to the new one
// serialized: it runs, holding the GIL, while the library holds the archive open and locked.
// An exception it raises goes back to Python with the archive left as it was. With
// `properties_only`, edit_model_properties(): `change` gets and gives the model without its
// graph, training_info and functions, which the library keeps as they are.
py::tuple edit_model(const std::filesystem::path& path, const py::function& change,
                     const bool compact, const bool durable, const bool properties_only,
                     const py::handle key, const double wait, const onnxzip::S3Options& s3) {
  onnxzip::EditOptions options;
  options.s3 = s3;
  options.compact = compact;
  options.output.durable = durable;
  options.wait = lock_wait(wait);
  options.signing_key = pem_key<onnxzip::PrivateKey>(key);
  const auto apply = [&](onnxzip::ModelProto& model) {
    const onnxzip::OwnedBytes before = onnxzip::serialize_model_to_owned_bytes(model);
    const py::gil_scoped_acquire locked;
    const py::object after = change(
        py::bytes(reinterpret_cast<const char*>(before.span().data()), before.span().size()));
    const HeldBuffer buffer(after);
    model = onnxzip::parse_model(buffer.span(), onnxzip::ParseOptions{}, "<edited model>");
  };
  onnxzip::EditResult result;
  {
    const py::gil_scoped_release unlocked;
    result = properties_only ? onnxzip::edit_model_properties(path, apply, options)
                             : onnxzip::edit_model(path, apply, options);
  }
  return edit_result(result);
}

// One row of the table of tensor sites (tensor.h), for onnxzip._model_walk, which walks an
// onnx.ModelProto by these field names.
struct SiteField {
  std::string parent;  // onnx.proto's message names: "GraphProto", ... "TensorProto".
  std::uint32_t number;
  std::string name;
  std::string child;
  bool repeated;
};

std::vector<SiteField> tensor_sites() {
  std::vector<SiteField> fields;
  for (const onnxzip::TensorSiteField& field : onnxzip::tensor_site_fields()) {
    fields.push_back({std::string(onnxzip::site_message_name(field.parent)), field.number,
                      std::string(field.name), std::string(onnxzip::site_message_name(field.child)),
                      field.repeated});
  }
  return fields;
}

// The site of every tensor of a serialized model, in for_each_tensor's order.
std::vector<std::string> tensor_site_paths(const py::handle model_bytes) {
  const HeldBuffer buffer(model_bytes);
  std::vector<std::string> paths;
  const py::gil_scoped_release unlocked;
  const onnxzip::ModelProto model = parse_borrowed(buffer.span());
  onnxzip::for_each_tensor(model,
                           [&](const onnxzip::TensorProto&, const onnxzip::TensorSite& site) {
                             paths.emplace_back(site.path);
                           });
  return paths;
}

}  // namespace

namespace onnxzip_python {

// Python's default `wait=` for an edit or a signing, in seconds.
constexpr double kDefaultWait = onnxzip::kDefaultEditWait.count() / 1000.0;

// The module itself: its version, the error translation, and small queries on names and URLs.
void register_common(py::module_& m) {
  m.doc() = "The onnxzip C++ library (internal: use the onnxzip package).";
  m.attr("version") = ONNXZIP_VERSION;  // CMake's project VERSION.
  py::register_exception_translator(&translate_error);

  m.def("http_available", &onnxzip::http_available);
  m.def(
      "is_url", [](const std::string& text) { return onnxzip::is_url(text); }, py::arg("text"));
  m.def("display_url", &onnxzip::display_url, py::arg("url"));
  m.def(
      "data_type_name",
      [](const std::int32_t data_type) { return std::string(onnxzip::data_type_name(data_type)); },
      py::arg("data_type"));
  m.def("element_bits", &onnxzip::element_bits, py::arg("data_type"));
  m.def("tensor_sites", &tensor_sites);
  m.def("tensor_site_paths", &tensor_site_paths, py::arg("model_bytes"));
}

// Reading: Archive, its tensor records, and the table of tensor sites.
void register_archive(py::module_& m) {
  py::class_<SiteField>(m, "TensorSiteField")
      .def_readonly("parent", &SiteField::parent)
      .def_readonly("number", &SiteField::number)
      .def_readonly("name", &SiteField::name)
      .def_readonly("child", &SiteField::child)
      .def_readonly("repeated", &SiteField::repeated)
      .def("__repr__", [](const SiteField& f) {
        return "TensorSiteField(" + f.parent + "." + f.name + " = " + std::to_string(f.number) +
               " -> " + (f.repeated ? "repeated " : "") + f.child + ")";
      });

  // Names from files may not be UTF-8: they cross as str with surrogate escapes (file_text).
  const auto text = [](std::string TensorRecord::*field) {
    return [field](const TensorRecord& r) { return file_text(r.*field); };
  };
  py::class_<TensorRecord>(m, "TensorRecord")
      .def_property_readonly("name", text(&TensorRecord::name))
      .def_property_readonly("site", text(&TensorRecord::site))
      .def_property_readonly("entry", text(&TensorRecord::entry))
      .def_readonly("data_type", &TensorRecord::data_type)
      .def_readonly("dims", &TensorRecord::dims)
      .def_readonly("size", &TensorRecord::size)
      .def_readonly("offset", &TensorRecord::offset)
      .def_readonly("alignment", &TensorRecord::alignment)
      .def_readonly("inline", &TensorRecord::is_inline)
      .def_readonly("zero_copy", &TensorRecord::zero_copy);

  py::class_<PyArchive>(m, "Archive")
      .def(py::init<py::handle, const std::string&, const std::string&,
                    const std::vector<std::string>&, bool, py::handle, const onnxzip::S3Options&>(),
           py::arg("location"), py::arg("access"), py::arg("kind") = "path",
           py::arg("headers") = std::vector<std::string>(), py::arg("check_digests") = false,
           py::arg("public_key") = py::none(), py::arg("s3") = onnxzip::S3Options())
      .def("model_bytes", &PyArchive::model_bytes)
      .def("tensors", &PyArchive::tensors)
      .def("tensor", &PyArchive::tensor, py::arg("index"))
      .def("tensor_count", &PyArchive::tensor_count)
      .def("metadata", &PyArchive::metadata)
      .def("columns", &PyArchive::columns)
      .def("array", &PyArchive::array, py::arg("index"))
      .def("payload", &PyArchive::payload, py::arg("index"))
      .def("arrays", &PyArchive::arrays, py::arg("indices"))
      .def("payloads", &PyArchive::payloads, py::arg("indices"))
      .def("http_stats", &PyArchive::http_stats)
      .def_property_readonly("remote", &PyArchive::remote)
      .def("close", &PyArchive::close)
      .def_property_readonly("closed", &PyArchive::closed);
}

// Where an s3:// destination's store is and how its upload goes (s3_options.h): the keyword
// `s3=` of the writing, reading, editing and signing calls. Its repr never shows the keys.
void register_s3_options(py::module_& m) {
  py::class_<onnxzip::S3Options>(m, "S3Options")
      .def(py::init([](const std::string& region, const std::string& endpoint_url,
                       const std::string& profile, const std::optional<std::string>& access_key_id,
                       const std::optional<std::string>& secret_access_key,
                       const std::string& session_token, const std::uint64_t part_size,
                       const bool fixed_part_size, const unsigned parts_in_flight,
                       const bool overwrite) {
             onnxzip::S3Options options;
             options.region = region;
             options.endpoint_url = endpoint_url;
             options.profile = profile;
             if (access_key_id || secret_access_key) {
               options.credentials = onnxzip::S3Credentials{
                   access_key_id.value_or(""), secret_access_key.value_or(""), session_token};
             }
             options.part_size = part_size;
             options.fixed_part_size = fixed_part_size;
             options.parts_in_flight = parts_in_flight;
             options.overwrite = overwrite;
             return options;
           }),
           py::kw_only(), py::arg("region") = "", py::arg("endpoint_url") = "",
           py::arg("profile") = "", py::arg("access_key_id") = py::none(),
           py::arg("secret_access_key") = py::none(), py::arg("session_token") = "",
           py::arg("part_size") = onnxzip::S3Options{}.part_size,
           py::arg("fixed_part_size") = false,
           py::arg("parts_in_flight") = onnxzip::S3Options{}.parts_in_flight,
           py::arg("overwrite") = false)
      .def_readonly("region", &onnxzip::S3Options::region)
      .def_readonly("endpoint_url", &onnxzip::S3Options::endpoint_url)
      .def_readonly("profile", &onnxzip::S3Options::profile)
      .def_readonly("part_size", &onnxzip::S3Options::part_size)
      .def_readonly("fixed_part_size", &onnxzip::S3Options::fixed_part_size)
      .def_readonly("parts_in_flight", &onnxzip::S3Options::parts_in_flight)
      .def_readonly("overwrite", &onnxzip::S3Options::overwrite)
      .def("__repr__", [](const onnxzip::S3Options& o) {
        return "S3Options(region=" + py::repr(py::str(o.region)).cast<std::string>() +
               ", endpoint_url=" + py::repr(py::str(o.endpoint_url)).cast<std::string>() +
               ", profile=" + py::repr(py::str(o.profile)).cast<std::string>() +
               ", credentials=" + (o.credentials ? "<given>" : "None") +
               ", part_size=" + std::to_string(o.part_size) +
               ", fixed_part_size=" + (o.fixed_part_size ? "True" : "False") +
               ", parts_in_flight=" + std::to_string(o.parts_in_flight) +
               ", overwrite=" + (o.overwrite ? "True" : "False") + ")";
      });
}

// Writing an archive: save() and ArchiveWriter.
void register_writer(py::module_& m) {
  m.def("save_bytes", &save_bytes, py::arg("model_bytes"), py::arg("path"), py::arg("alignment"),
        py::arg("threshold"), py::arg("dedupe"), py::arg("digests") = false);
  m.def(
      "save_message",
      [](const py::handle model, const py::list& tensors, const std::filesystem::path& path,
         const std::uint32_t alignment, const std::uint64_t threshold, const bool dedupe,
         const bool digests) {
        const onnxzip::SaveOptions options = save_options(alignment, threshold, dedupe, digests);
        return onnxzip_python::write_message(
            model, tensors, threshold,
            [&](const onnxzip::ModelProto& parsed) { onnxzip::save(parsed, path, options); });
      },
      py::arg("model"), py::arg("tensors"), py::arg("path"), py::arg("alignment"),
      py::arg("threshold"), py::arg("dedupe"), py::arg("digests") = false);
  m.def("message_bridge_available", &onnxzip_python::message_bridge_available);
  py::class_<PyWriter>(m, "ArchiveWriter")
      .def(py::init<const std::filesystem::path&, std::uint32_t, std::uint64_t, bool, bool,
                    const onnxzip::S3Options&>(),
           py::arg("path"), py::arg("alignment"), py::arg("threshold"), py::arg("dedupe"),
           py::arg("digests") = false, py::arg("s3") = onnxzip::S3Options())
      .def("add_tensor", &PyWriter::add_tensor, py::arg("name"), py::arg("data_type"),
           py::arg("dims"), py::arg("data"))
      .def("add_tensor_proto", &PyWriter::add_tensor_proto, py::arg("tensor_bytes"))
      .def("finish", &PyWriter::finish, py::arg("model_bytes"))
      .def("finish_message", &PyWriter::finish_message, py::arg("model"), py::arg("tensors"),
           py::arg("threshold"))
      .def("abort", &PyWriter::abort);
}

// Conversions between formats and layouts: convert, repack, views.
void register_convert(py::module_& m) {
  py::class_<PyConvertOptions>(m, "ConvertOptions")
      .def(py::init<>())
      .def_readwrite("alignment", &PyConvertOptions::alignment)
      .def_readwrite("threshold", &PyConvertOptions::threshold)
      .def_readwrite("dedupe", &PyConvertOptions::dedupe)
      .def_readwrite("external_data", &PyConvertOptions::external_data)
      .def_readwrite("data_file_name", &PyConvertOptions::data_file_name)
      .def_readwrite("max_file_size", &PyConvertOptions::max_file_size)
      .def_readwrite("data_alignment", &PyConvertOptions::data_alignment)
      .def_readwrite("digests", &PyConvertOptions::digests)
      .def_readwrite("externalize_attributes", &PyConvertOptions::externalize_attributes)
      .def_readwrite("externalize_sparse", &PyConvertOptions::externalize_sparse)
      .def_readwrite("s3", &PyConvertOptions::s3);
  m.def("convert", &convert, py::arg("src"), py::arg("kind"), py::arg("dst"), py::arg("options"),
        py::arg("headers"), py::arg("check_output"));
  m.def(
      "repack",
      // `kind` "url": `src` is downloaded first (with `headers`), as the CLI does.
      [](const py::handle src, const std::string& kind, const std::filesystem::path& out,
         const std::uint32_t alignment, const std::uint64_t threshold, const bool digests,
         const std::vector<std::string>& headers, const onnxzip::S3Options& s3) {
        const onnxzip::SaveOptions options = save_options(alignment, threshold, false, digests, s3);
        onnxzip::RepackResult r;
        if (kind == "url") {
          const auto url = py::cast<std::string>(src);
          const py::gil_scoped_release unlocked;
          const Download file(*remote_source(url, headers));
          r = onnxzip::repack(file.path(), out, {.save = options});
        } else {
          const auto in = py::cast<std::filesystem::path>(src);
          const py::gil_scoped_release unlocked;
          r = onnxzip::repack(in, out, {.save = options});
        }
        const auto names = [](const std::vector<std::string>& entries) {
          py::list list;
          for (const std::string& entry : entries) list.append(file_text(entry));
          return list;
        };
        return py::make_tuple(names(r.kept_entries), names(r.unpacked_entries),
                              names(r.dropped_entries));
      },
      py::arg("src"), py::arg("kind"), py::arg("dst"), py::arg("alignment"), py::arg("threshold"),
      py::arg("digests"), py::arg("headers"), py::arg("s3") = onnxzip::S3Options());
  m.def(
      "write_view_model",
      [](const std::filesystem::path& archive, const std::filesystem::path& view) {
        const py::gil_scoped_release unlocked;
        onnxzip::write_view_model(archive, view);
      },
      py::arg("archive_path"), py::arg("view_path"));
}

// verify and sign.
void register_integrity(py::module_& m) {
  m.def("verify", &verify, py::arg("source"), py::arg("kind"), py::arg("check_crc"),
        py::arg("public_key") = py::none(), py::arg("headers") = std::vector<std::string>(),
        py::arg("s3") = onnxzip::S3Options());
  m.def("sign", &sign, py::arg("path"), py::arg("key"), py::arg("durable") = true,
        py::arg("wait") = kDefaultWait, py::arg("s3") = onnxzip::S3Options());
}

// In-place edits of the model entry.
void register_edit(py::module_& m) {
  m.def("replace_model", &replace_model, py::arg("path"), py::arg("model_bytes"),
        py::arg("compact"), py::arg("durable"), py::arg("key") = py::none(),
        py::arg("wait") = kDefaultWait, py::arg("s3") = onnxzip::S3Options());
  m.def("edit_model", &edit_model, py::arg("path"), py::arg("change"), py::arg("compact"),
        py::arg("durable"), py::arg("properties_only"), py::arg("key") = py::none(),
        py::arg("wait") = kDefaultWait, py::arg("s3") = onnxzip::S3Options());
}

}  // namespace onnxzip_python

// One call per area (bindings.h); register_common first, for the error translator.
PYBIND11_MODULE(_onnxzip, m) {
  onnxzip_python::register_common(m);
  // Before the calls whose `s3=` defaults to an S3Options (pybind11 converts defaults at once).
  onnxzip_python::register_s3_options(m);
  onnxzip_python::register_archive(m);
  onnxzip_python::register_writer(m);
  onnxzip_python::register_convert(m);
  onnxzip_python::register_integrity(m);
  onnxzip_python::register_edit(m);
  onnxzip_python::register_parts(m);
}
