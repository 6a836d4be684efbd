// save() of an onnx.ModelProto without copying its payloads, when Python's protobuf is its C++
// implementation ("cpp", Debian's python3-protobuf) linked to the libprotobuf this module links.
//
// Why: protobuf's Python API cannot lend bytes. tensor.raw_data and SerializeToString() each copy
// every payload into fresh memory, and fresh memory costs a page fault per 4 KiB, so saving a
// 1 GiB model that way took 20x as long as cp. The C++ message behind the Python object holds each
// payload in one std::string: this bridge moves those strings out of the tensors (a pointer swap),
// serializes the now small model, and writes the payloads from the strings themselves.
#ifndef ONNXZIP_PYTHON_PROTOBUF_BRIDGE_H_
#define ONNXZIP_PYTHON_PROTOBUF_BRIDGE_H_

#include <pybind11/pybind11.h>

#include <filesystem>

#include "onnxzip/archive.h"

namespace onnxzip_python {

// True when save_message() can work on this interpreter's messages: built with libprotobuf, and
// Python's protobuf is the "cpp" implementation of the same release. Needs the GIL.
bool message_bridge_available();

// Writes `model` (an onnx.ModelProto) to `path` as onnxzip::save() would write its serialized
// bytes, reading every raw_data payload in place. `tensors` lists the model's TensorProto objects
// (the ones whose payloads may move; onnxzip._model_walk.model_tensors). Called with the GIL held;
// releases it while writing.
//
// While the file is written, those tensors' raw_data payloads are moved out of the model (the
// model is not to be read or changed from another thread during the call); they are moved back
// before returning, also on error, so afterwards the model is as before, byte for byte.
//
// Returns false, having written nothing and left the model as it was, when the bridge cannot be
// used: not available, `model` not a C++ message of this library, or the model without its
// raw_data payloads still 2 GiB or more. Throws the onnxzip::Error of save().
bool save_message(pybind11::handle model, const pybind11::list& tensors,
                  const std::filesystem::path& path, const onnxzip::SaveOptions& options);

}  // namespace onnxzip_python

#endif  // ONNXZIP_PYTHON_PROTOBUF_BRIDGE_H_
