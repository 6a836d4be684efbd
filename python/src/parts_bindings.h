// The bindings of parts.h (many writers, one archive) in onnxzip._onnxzip; the package's face is
// python/onnxzip/_parts.py.
#ifndef ONNXZIP_PYTHON_PARTS_BINDINGS_H_
#define ONNXZIP_PYTHON_PARTS_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace onnxzip_python {

// Adds PartsPlan, PartWriter, begin_parts, finish_parts and abort_parts to `m`.
void register_parts(pybind11::module_& m);

}  // namespace onnxzip_python

#endif  // ONNXZIP_PYTHON_PARTS_BINDINGS_H_
