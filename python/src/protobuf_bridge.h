// save() of an onnx.ModelProto without copying its payloads, when Python's protobuf is its C++
// implementation ("cpp", Debian's python3-protobuf) linked to the libprotobuf this module links.
//
// Why: protobuf's Python API cannot lend bytes. tensor.raw_data and SerializeToString() each copy
// every payload into fresh memory, and fresh memory costs a page fault per 4 KiB, so saving a
// model that way takes many times as long as cp (bench/python_bench.py). The C++ message behind the
// Python object holds each payload in one std::string: this bridge moves those strings out of the
// tensors (a pointer swap), serializes the now small model, and writes the payloads from the
// strings themselves.
#ifndef ONNXZIP_PYTHON_PROTOBUF_BRIDGE_H_
#define ONNXZIP_PYTHON_PROTOBUF_BRIDGE_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <functional>

#include "onnxzip/onnx_model.h"

namespace onnxzip_python {

// True when write_message() can work on this interpreter's messages: built with libprotobuf, and
// Python's protobuf is the "cpp" implementation of the same release. Needs the GIL.
bool message_bridge_available();

// What write_message() hands the model to: onnxzip::save, or ArchiveWriter::finish. Called
// without the GIL; the model's payloads are borrowed for the duration of the call.
using ModelWriter = std::function<void(const onnxzip::ModelProto&)>;

// Hands `write` the onnxzip::ModelProto that parsing `model` (an onnx.ModelProto) would give,
// reading every raw_data payload of at least `threshold` bytes in place instead: what write does
// with it is what it would do with the serialized model. `tensors` lists the model's TensorProto
// objects (the ones whose payloads may move; onnxzip._model_walk.model_tensors). Called with the
// GIL held; releases it around `write`.
//
// Meanwhile those tensors' raw_data payloads are moved out of the model (the model is not to be
// read or changed from another thread during the call); they are moved back before returning,
// also on error, so afterwards the model is as before, byte for byte.
//
// Returns false, having called nothing and left the model as it was, when the bridge cannot be
// used: not available, `model` not a C++ message of this library, the model without its raw_data
// payloads still 2 GiB or more, or a listed tensor that the library's codec does not see (a field
// of a newer onnx). Throws what `write` throws.
bool write_message(pybind11::handle model, const pybind11::list& tensors, std::uint64_t threshold,
                   const ModelWriter& write);

}  // namespace onnxzip_python

#endif  // ONNXZIP_PYTHON_PROTOBUF_BRIDGE_H_
