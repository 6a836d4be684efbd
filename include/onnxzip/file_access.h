// How the library gets at the bytes of an input file (internal/mapped_file.h says more of the
// mapping contract). Anyone may use this header.
#ifndef ONNXZIP_FILE_ACCESS_H_
#define ONNXZIP_FILE_ACCESS_H_

#include <cstdint>

namespace onnxzip {

enum class FileAccess : std::uint8_t {
  kMap,   // Memory-map it: nothing is read until used, and payloads are borrowed in place.
  kRead,  // Read it whole into owned memory with pread(): for files that others may change.
  // Map it copy-on-write (MAP_PRIVATE, writable): as kMap, but a write through a borrowed
  // pointer -- which the library never makes -- copies the page it touches into private memory
  // and never reaches the file. For bindings whose users may write to views (torch ignores
  // numpy's read-only flag): a write to a kMap mapping is a SIGSEGV. Writers never copy such
  // bytes from the file by extent, since the pages may differ from it.
  kMapPrivate,
  // Read only the ranges a reader asks for, with pread(), into owned memory: nothing is mapped
  // and nothing is read whole, so a file larger than the address space opens. For what needs an
  // archive's tail only (info, edit); payloads are read when asked for, one read each.
  kRanges,
};

}  // namespace onnxzip

#endif  // ONNXZIP_FILE_ACCESS_H_
