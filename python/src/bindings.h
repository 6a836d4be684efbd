// What the areas of onnxzip._onnxzip share (module.cpp): each area registers its classes and
// functions in one register_<area>(m) function, which PYBIND11_MODULE calls in order. A new area
// adds its function here and one call line there.
#ifndef ONNXZIP_PYTHON_BINDINGS_H_
#define ONNXZIP_PYTHON_BINDINGS_H_

#include <pybind11/pybind11.h>

#include <string_view>

#include "onnxzip/bytes.h"

namespace onnxzip_python {

void register_common(pybind11::module_& m);
void register_archive(pybind11::module_& m);
void register_writer(pybind11::module_& m);
void register_convert(pybind11::module_& m);
void register_integrity(pybind11::module_& m);
void register_edit(pybind11::module_& m);
// Many writers, one archive (parts.h): parts_bindings.cpp.
void register_parts(pybind11::module_& m);

// A C-contiguous buffer of any Python object (bytes, bytearray, memoryview, numpy array...),
// held for the lifetime of this object. Acquire and release need the GIL; the bytes may be read
// without it.
class HeldBuffer final {
 public:
  explicit HeldBuffer(const pybind11::handle object) {
    if (PyObject_GetBuffer(object.ptr(), &view_, PyBUF_C_CONTIGUOUS) != 0) {
      throw pybind11::error_already_set();
    }
  }
  ~HeldBuffer() { PyBuffer_Release(&view_); }
  HeldBuffer(const HeldBuffer&) = delete;
  HeldBuffer& operator=(const HeldBuffer&) = delete;

  onnxzip::ByteSpan span() const noexcept {
    return {static_cast<const std::uint8_t*>(view_.buf), static_cast<std::size_t>(view_.len)};
  }

 private:
  Py_buffer view_{};
};

// An owner token over a caller's buffer (bytes, bytearray, memoryview, numpy array...): the
// archive views it in place, and it and every array made from it keep the object alive (a
// bytearray cannot be resized meanwhile). The last holder may let go without the GIL.
onnxzip::OwnerToken hold_buffer(pybind11::handle object);

// Text from a file (entry and tensor names) need not be UTF-8: undecodable bytes become lone
// surrogates, as os.fsdecode does, so names still round-trip; messages get backslash escapes.
pybind11::str file_text(std::string_view text, const char* errors = "surrogateescape");

}  // namespace onnxzip_python

#endif  // ONNXZIP_PYTHON_BINDINGS_H_
