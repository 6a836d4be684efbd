#include "protobuf_bridge.h"

#if ONNXZIP_PYTHON_WITH_LIBPROTOBUF
#include <dlfcn.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/stubs/common.h>
#endif

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "onnxzip/bytes.h"
#include "onnxzip/error.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/onnx_model.h"
#include "onnxzip/tensor.h"

namespace py = pybind11;

namespace onnxzip_python {

#if !ONNXZIP_PYTHON_WITH_LIBPROTOBUF

bool message_bridge_available() { return false; }

bool write_message(py::handle, const py::list&, std::uint64_t, const ModelWriter&) { return false; }

#else

namespace gp = google::protobuf;

// The start of protobuf's PyProto_API (python/google/protobuf/proto_api.h, which Debian does not
// install), the C++ API that the "cpp" implementation exports as a capsule for extension modules.
// Every release up to 25.x begins with these two virtual functions; later ones moved
// GetMessagePointer, which is why the release is checked before the capsule is used. Visible and
// outside the anonymous namespace: implemented in another library, so the compiler must not
// conclude (with link-time optimization, it did) that no class here implements it.
struct __attribute__((visibility("default"))) PyProtoApiStart {
  virtual ~PyProtoApiStart() = default;
  // The C++ message of a Python message object; nullptr with a Python exception set otherwise.
  virtual const gp::Message* GetMessagePointer(PyObject* message) const = 0;
};

namespace {

constexpr char kProtoApiCapsule[] = "google.protobuf.pyext._message.proto_API";

// "4.21.12" (Python) names the release of C++ "3.21.12": minor and patch must equal those of the
// headers this module was built with, whose library the "cpp" implementation must then also use.
bool same_release(const std::string& python_version) {
  unsigned major = 0;
  unsigned minor = 0;
  unsigned patch = 0;
  if (std::sscanf(python_version.c_str(), "%u.%u.%u", &major, &minor, &patch) != 3) return false;
  return minor == GOOGLE_PROTOBUF_VERSION / 1000 % 1000 && patch == GOOGLE_PROTOBUF_VERSION % 1000;
}

const PyProtoApiStart* find_proto_api() {
  try {
    const py::object type =
        py::module_::import("google.protobuf.internal.api_implementation").attr("Type")();
    if (type.cast<std::string>() != "cpp") return nullptr;
    const py::object version = py::module_::import("google.protobuf").attr("__version__");
    if (!same_release(version.cast<std::string>())) return nullptr;
  } catch (const py::error_already_set&) {
    return nullptr;  // No protobuf package: the caller's model is then no protobuf message.
  } catch (const py::cast_error&) {
    return nullptr;
  }
  void* const api = PyCapsule_Import(kProtoApiCapsule, 0);
  if (api == nullptr) PyErr_Clear();
  return static_cast<const PyProtoApiStart*>(api);
}

// Looked up once, under the GIL. Not a function-local static: the lookup imports modules, which
// may release the GIL, and a thread waiting on a static's guard while holding the GIL deadlocks.
bool proto_api_looked_up = false;
const PyProtoApiStart* proto_api_found = nullptr;

const PyProtoApiStart* proto_api() {
  if (!proto_api_looked_up) {
    proto_api_found = find_proto_api();
    proto_api_looked_up = true;
  }
  return proto_api_found;
}

// True when `message` belongs to the libprotobuf instance this module calls: it is either a
// DynamicMessage of that library (its virtual table lies in the same loaded object as a
// libprotobuf function), or an instance of a generated class registered in that library's
// generated pool (Debian's onnx links libonnx_proto, whose classes the "cpp" implementation uses).
// A protobuf wheel carrying its own copy of the library fails both: its messages are not touched.
bool made_by_our_library(const gp::Message& message) {
  Dl_info ours{};
  Dl_info theirs{};
  const void* const our_function = reinterpret_cast<const void*>(&gp::ShutdownProtobufLibrary);
  const void* const their_vtable = *reinterpret_cast<const void* const*>(&message);
  if (dladdr(our_function, &ours) != 0 && dladdr(their_vtable, &theirs) != 0 &&
      ours.dli_fbase == theirs.dli_fbase) {
    return true;
  }
  return message.GetDescriptor()->file()->pool() == gp::DescriptorPool::generated_pool();
}

onnxzip::ByteSpan bytes_of(const std::string& text) noexcept {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

// The C++ message behind a Python message object, nullptr (no Python error left) if there is none.
// The object keeps it alive; a removed sub-message stays owned by its Python object.
gp::Message* message_of(const PyProtoApiStart& api, const py::handle object) {
  const gp::Message* const message = api.GetMessagePointer(object.ptr());
  if (message == nullptr) PyErr_Clear();
  // The cpp implementation hands out const pointers for reading; mutating through one is safe
  // while no Python code runs, which the GIL ensures wherever this file does it.
  return const_cast<gp::Message*>(message);
}

// What a moved payload leaves in its tensor while the model is serialized: kSize bytes, a random
// nonce and the payload's index, so that it can be told from any real payload in the parsed model.
// Only payloads of at least kSize bytes are moved, so no unmoved payload of a Python-visible
// tensor can equal a marker; one the bridge does not see (an unknown field) would have to guess
// the nonce.
class PayloadMarker final {
 public:
  static constexpr std::size_t kNonceSize = 32;
  static constexpr std::size_t kSize = kNonceSize + 8;

  PayloadMarker() {
    std::random_device random;
    for (std::uint8_t& byte : nonce_) byte = static_cast<std::uint8_t>(random());
  }

  std::string for_index(const std::uint64_t index) const {
    std::string marker(reinterpret_cast<const char*>(nonce_.data()), nonce_.size());
    for (int shift = 0; shift < 64; shift += 8) {
      marker.push_back(static_cast<char>((index >> shift) & 0xFF));
    }
    return marker;
  }

  // The index in `bytes` when they are a marker of this nonce.
  std::optional<std::uint64_t> index_in(const onnxzip::ByteSpan bytes) const {
    if (bytes.size() != kSize || std::memcmp(bytes.data(), nonce_.data(), kNonceSize) != 0) {
      return std::nullopt;
    }
    std::uint64_t index = 0;
    for (std::size_t i = 0; i < 8; ++i) {
      index |= static_cast<std::uint64_t>(bytes[kNonceSize + i]) << (8 * i);
    }
    return index;
  }

 private:
  std::array<std::uint8_t, kNonceSize> nonce_{};
};

// raw_data payloads moved out of the caller's tensors into messages of our own, each a swap of
// string pointers (no byte copied). The destructor moves every payload back into the tensor its
// Python object refers to then (looked up again: another thread may have detached the tensor from
// the model meanwhile), so the model leaves the call as it came. Construct and destroy with the
// GIL held.
class MovedPayloads final {
 public:
  MovedPayloads(const PyProtoApiStart& api, const gp::FieldDescriptor& raw_data)
      : api_(api), raw_data_{&raw_data} {}
  ~MovedPayloads() {
    // Last in, first out: undoes every swap even if one tensor object came twice.
    for (auto moved = moved_.rbegin(); moved != moved_.rend(); ++moved) {
      gp::Message* const tensor = message_of(api_, moved->tensor_object);
      if (tensor == nullptr || tensor->GetDescriptor() != moved->holder->GetDescriptor()) continue;
      tensor->GetReflection()->SwapFields(tensor, moved->holder.get(), raw_data_);
    }
  }
  MovedPayloads(const MovedPayloads&) = delete;
  MovedPayloads& operator=(const MovedPayloads&) = delete;

  // Moves `tensor`'s raw_data out and leaves `marker`'s mark for it in its place. False, with
  // `tensor` untouched, when the library keeps the bytes in a form it cannot lend as one string.
  bool take(const py::handle tensor_object, gp::Message& tensor, const PayloadMarker& marker) {
    Moved moved{py::reinterpret_borrow<py::object>(tensor_object),
                std::unique_ptr<gp::Message>(tensor.New())};
    const gp::Reflection& reflection = *tensor.GetReflection();
    reflection.SwapFields(&tensor, moved.holder.get(), raw_data_);
    std::string scratch;
    if (&reflection.GetStringReference(*moved.holder, raw_data_.front(), &scratch) == &scratch) {
      reflection.SwapFields(&tensor, moved.holder.get(), raw_data_);
      return false;
    }
    reflection.SetString(&tensor, raw_data_.front(), marker.for_index(moved_.size()));
    moved_.push_back(std::move(moved));
    return true;
  }

  // Removes the marks: while the payloads are written, their tensors hold none.
  void clear_marks() {
    for (const Moved& moved : moved_) {
      gp::Message* const tensor = message_of(api_, moved.tensor_object);
      if (tensor != nullptr) tensor->GetReflection()->ClearField(tensor, raw_data_.front());
    }
  }

  std::size_t size() const noexcept { return moved_.size(); }

  // Payload `index`, which stays where it is until the destructor (take() checked that it is the
  // message's own string, never `scratch`).
  onnxzip::ByteSpan payload(const std::size_t index) const {
    const gp::Message& holder = *moved_[index].holder;
    std::string scratch;
    const std::string& bytes =
        holder.GetReflection()->GetStringReference(holder, raw_data_.front(), &scratch);
    return bytes_of(bytes);
  }

 private:
  struct Moved {
    py::object tensor_object;
    std::unique_ptr<gp::Message> holder;  // A TensorProto with only the payload.
  };
  const PyProtoApiStart& api_;
  const std::vector<const gp::FieldDescriptor*> raw_data_;
  std::vector<Moved> moved_;
};

// Gives each tensor of `model` (parsed from the serialization with markers) the payload its marker
// stands for, borrowed. False when some payload found no tensor: a tensor Python sees that the C++
// codec does not (a field of a newer onnx), which the caller must not save without its payload.
bool put_back_payloads(onnxzip::ModelProto& model, const PayloadMarker& marker,
                       const MovedPayloads& moved) {
  std::vector<bool> found(moved.size(), false);
  std::size_t found_count = 0;
  onnxzip::for_each_tensor(model, [&](onnxzip::TensorProto& tensor, const onnxzip::TensorSite&) {
    if (!tensor.raw_data) return;
    const std::optional<std::uint64_t> index = marker.index_in(tensor.raw_data->view());
    if (!index || *index >= moved.size() || found[*index]) return;
    found[*index] = true;
    ++found_count;
    tensor.raw_data = onnxzip::TensorBytes::borrowed(moved.payload(*index), onnxzip::kNoOwner);
  });
  return found_count == moved.size();
}

}  // namespace

bool message_bridge_available() { return proto_api() != nullptr; }

bool write_message(const py::handle model, const py::list& tensors, const std::uint64_t threshold,
                   const ModelWriter& write) {
  const PyProtoApiStart* const api = proto_api();
  if (api == nullptr) return false;
  gp::Message* const root = message_of(*api, model);
  if (root == nullptr || !made_by_our_library(*root)) return false;
  const gp::Descriptor* const model_type = root->GetDescriptor();
  const gp::Descriptor* const tensor_type =
      model_type->file()->pool()->FindMessageTypeByName("onnx.TensorProto");
  if (model_type->full_name() != "onnx.ModelProto" || tensor_type == nullptr) return false;
  const gp::FieldDescriptor* const raw_data = tensor_type->FindFieldByName("raw_data");
  if (raw_data == nullptr || raw_data->type() != gp::FieldDescriptor::TYPE_BYTES ||
      raw_data->is_repeated()) {
    return false;
  }

  const PayloadMarker marker;
  // Declared before anything can fail: its destructor restores the model on every way out.
  MovedPayloads moved(*api, *raw_data);
  const std::uint64_t smallest_moved = std::max<std::uint64_t>(threshold, PayloadMarker::kSize);
  std::string scratch;
  for (const py::handle object : tensors) {
    gp::Message* const tensor = message_of(*api, object);
    if (tensor == nullptr || tensor->GetDescriptor() != tensor_type) return false;
    const gp::Reflection& reflection = *tensor->GetReflection();
    // A tensor without raw_data may be protobuf's shared default instance: never written to.
    if (!reflection.HasField(*tensor, raw_data)) continue;
    if (reflection.GetStringReference(*tensor, raw_data, &scratch).size() < smallest_moved) {
      continue;  // Serialized with the model; `write` externalizes it from there if need be.
    }
    moved.take(object, *tensor, marker);  // If it cannot, the payload is serialized.
  }
  if (root->ByteSizeLong() > static_cast<std::size_t>(INT_MAX)) return false;
  std::string model_bytes;
  if (!root->SerializeToString(&model_bytes)) return false;
  moved.clear_marks();

  const py::gil_scoped_release unlocked;
  const onnxzip::ParseOptions parse_options{.no_copy = true};
  onnxzip::ModelProto parsed =
      onnxzip::parse_model(bytes_of(model_bytes), parse_options, "<model bytes>");
  if (!put_back_payloads(parsed, marker, moved)) return false;
  write(parsed);
  return true;
}

#endif

}  // namespace onnxzip_python
