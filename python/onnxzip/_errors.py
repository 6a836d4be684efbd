"""The onnxzip exception family: one class per library error code, all under onnxzip.Error."""

from __future__ import annotations


class Error(Exception):
    """Any failure reported by onnxzip.

    ``code`` is the library's error code ("corrupt", "unsupported", "not_found", "io",
    "invalid_argument", "limit_exceeded", "bad_state", "changed"); ``str(error)`` is its message, which names
    the file and, where there is one, the entry, tensor and byte offset. Each code has a subclass
    that also derives from the matching built-in exception, so ``except ValueError`` or
    ``except OSError`` catch what they would catch from the standard library.
    """

    code: str = "error"

    def __str__(self) -> str:
        # The message alone, also when a subclass of OSError has its filename set (OSError would
        # show "[Errno None] None: '<path>'": the library's errors carry no errno).
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class CorruptError(Error, ValueError):
    """The input breaks its format: truncated, contradictory, out of bounds."""

    code = "corrupt"


class UnsupportedError(Error, ValueError):
    """Valid for its format, but a feature onnxzip does not implement."""

    code = "unsupported"


class NotFoundError(Error, FileNotFoundError):
    """A named file does not exist (a missing tensor name in an archive raises KeyError)."""

    code = "not_found"


class IOFailure(Error, OSError):
    """The operating system refused a read, write, map or rename."""

    code = "io"


class InvalidArgumentError(Error, ValueError):
    """The caller passed something the API does not accept."""

    code = "invalid_argument"


class LimitExceededError(Error, ValueError):
    """A safety limit (nesting depth, element count, size) was exceeded."""

    code = "limit_exceeded"


class BadStateError(Error, RuntimeError):
    """The call is not allowed in the object's current state (e.g. after close or finish)."""

    code = "bad_state"


class ChangedError(Error, OSError):
    """The file changed while it was being read (an edit overlapped the read): retrying may
    succeed. onnxzip.open retries a few times by itself before raising it."""

    code = "changed"


_BY_CODE = {cls.code: cls for cls in (CorruptError, UnsupportedError, NotFoundError, IOFailure,
                                      InvalidArgumentError, LimitExceededError, BadStateError,
                                      ChangedError)}


def _from_code(code: str, message: str) -> Error:
    """The exception for a library error (called by the extension module)."""
    cls = _BY_CODE.get(code, Error)
    error = cls(message)
    if cls is Error:
        error.code = code
    return error


# Tracebacks and repr() show the public names (onnxzip.CorruptError), not this private module.
for _cls in (Error, *_BY_CODE.values()):
    _cls.__module__ = "onnxzip"
del _cls
