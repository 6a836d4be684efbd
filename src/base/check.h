// ONNXZIP_DCHECK(condition): an internal invariant, stated where it holds. Private to the
// library, its tests and its fuzz targets.
//
// A DCHECK states what the code around it guarantees (a loop bound, an offset the caller has
// already checked, a size one step computes and another relies on), never what the input must
// be: a file, a model or an argument that breaks a rule is an onnxzip::Error (error.h), in every
// build. A failed DCHECK is therefore a bug in this library, not bad input.
//
// On when ONNXZIP_DCHECK_ON is defined: CMake defines it for Debug builds, sanitizer builds
// (ONNXZIP_SANITIZE) and libFuzzer builds (ONNXZIP_LIBFUZZER), where a broken invariant should
// stop the run at once. There a failure prints the condition and its place to stderr and calls
// std::abort -- the one exception to "the library never prints, exits or aborts", allowed in a
// checking build only, as leveldb's and gguf's asserts are. Off (Release, RelWithDebInfo), the
// condition is still compiled, so it cannot rot, but never evaluated: the expression sits in an
// unevaluated sizeof, which costs nothing and has no side effects.
#ifndef ONNXZIP_SRC_CHECK_H_
#define ONNXZIP_SRC_CHECK_H_

#ifdef ONNXZIP_DCHECK_ON
#include <cstdio>
#include <cstdlib>
#endif

namespace onnxzip::detail {

#ifdef ONNXZIP_DCHECK_ON
inline constexpr bool kDchecksOn = true;

[[noreturn]] inline void dcheck_failed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: ONNXZIP_DCHECK(%s) failed: an onnxzip bug\n", file, line, condition);
  std::abort();
}

#define ONNXZIP_DCHECK(condition)     \
  ((condition) ? static_cast<void>(0) \
               : ::onnxzip::detail::dcheck_failed(#condition, __FILE__, __LINE__))
#else
inline constexpr bool kDchecksOn = false;

#define ONNXZIP_DCHECK(condition) static_cast<void>(sizeof(static_cast<bool>(condition)))
#endif

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_CHECK_H_
