// Internal: writing a large buffer of this process to a file without the kernel reading it
// through this process's page tables.
#ifndef ONNXZIP_MEMORY_SPLICE_H_
#define ONNXZIP_MEMORY_SPLICE_H_

#include <cstddef>
#include <cstdint>

#include "onnxzip/bytes.h"

namespace onnxzip::detail {

// Writes a prefix of `bytes` to `fd` at `offset` through a pipe: vmsplice(2) lends the pages to
// the pipe and splice(2) copies them into the file, through the kernel's own mapping of memory.
// write(2) instead copies from this process's addresses, and on virtual machines that shadow
// page tables (this project's CI machines) the kernel's first touch of each 4 KiB page costs a
// trap to the hypervisor: writing a 1 GiB onnx.ModelProto from Python's memory took 9 s that
// way and under 1 s this way, as long as cp's in-kernel copy.
// Returns how many bytes reached the file: all of them, or fewer when the kernel refused a step
// (no vmsplice, memory it cannot lend, a file system without splice, a write error); the caller
// writes the rest with write(2), which then reports any real error. `bytes` must not change
// during the call; afterwards the file holds its own copy.
std::size_t splice_from_memory(int fd, ByteSpan bytes, std::uint64_t offset) noexcept;

}  // namespace onnxzip::detail

#endif  // ONNXZIP_MEMORY_SPLICE_H_
