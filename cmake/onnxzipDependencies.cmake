# The libraries onnxzip links, as imported targets. Shared by the build and by the installed
# package config, so a consumer of the static library finds exactly what the build used.
include_guard(GLOBAL)
include(CMakeFindDependencyMacro)

find_dependency(Boost 1.74 COMPONENTS iostreams)
# Two inflaters: libdeflate (below) inflates whole buffers about twice as fast as zlib but has no
# streaming interface, so entries too large to inflate into memory (zip_reader.h, "Deflated
# entries and memory") go through zlib's inflate() in pieces.
find_dependency(ZLIB)
# SHA-256 and ECDSA P-256 for the integrity entries (__DIGESTS, __SIGNATURE): libcrypto 3.
find_dependency(OpenSSL 3 COMPONENTS Crypto)
# The XML answers of object stores (S3): expat.
find_dependency(EXPAT)

if(NOT TARGET onnxzip::isal)
  find_path(ONNXZIP_ISAL_INCLUDE_DIR isa-l/crc.h)
  find_library(ONNXZIP_ISAL_LIBRARY NAMES isal)
  if(NOT ONNXZIP_ISAL_INCLUDE_DIR OR NOT ONNXZIP_ISAL_LIBRARY)
    message(FATAL_ERROR "ISA-L not found: install libisal-dev")
  endif()
  add_library(onnxzip::isal UNKNOWN IMPORTED)
  set_target_properties(onnxzip::isal PROPERTIES IMPORTED_LOCATION "${ONNXZIP_ISAL_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${ONNXZIP_ISAL_INCLUDE_DIR}")
endif()

if(NOT TARGET onnxzip::deflate)
  find_path(ONNXZIP_DEFLATE_INCLUDE_DIR libdeflate.h)
  find_library(ONNXZIP_DEFLATE_LIBRARY NAMES deflate)
  if(NOT ONNXZIP_DEFLATE_INCLUDE_DIR OR NOT ONNXZIP_DEFLATE_LIBRARY)
    message(FATAL_ERROR "libdeflate not found: install libdeflate-dev")
  endif()
  add_library(onnxzip::deflate UNKNOWN IMPORTED)
  set_target_properties(onnxzip::deflate PROPERTIES IMPORTED_LOCATION "${ONNXZIP_DEFLATE_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${ONNXZIP_DEFLATE_INCLUDE_DIR}")
endif()
