"""The onnxzip exception family: one class per library error code, all under onnxzip.Error."""

from __future__ import annotations

from typing import Any, Optional


class Error(Exception):
    """Any failure reported by onnxzip.

    ``str(error)`` is its message, "<place>: <problem>"; the parts are attributes too:

    - ``code``: the library's error code ("corrupt", "unsupported", "not_found", "io",
      "invalid_argument", "limit_exceeded", "bad_state", "changed");
    - ``source``: the file path, URL (without its query) or "<memory>" ("" when none);
    - ``entry``: the archive entry's name ("" when none);
    - ``tensor``: the tensor's name ("" when none, or unnamed);
    - ``site``: the tensor's site, "graph/initializer[0]" ("" when none);
    - ``offset``: the byte offset in the source the message names (an entry's local header),
      or None;
    - ``problem``: what is wrong, without the place.

    The fields are plain values, not phrases: ``error.entry`` equals a ``TensorInfo.entry``.

    Each code has a subclass that also derives from the matching built-in exception, so
    ``except ValueError`` or ``except OSError`` catch what they would catch from the standard
    library. The OSError ones keep ``errno`` and ``strerror`` None and ``filename`` the source,
    but print the message, never ``[Errno None] None: 'file'``.
    """

    code: str = "error"

    def __init__(self, message: str = "", *, source: str = "", entry: str = "", tensor: str = "",
                 site: str = "", offset: Optional[int] = None,
                 problem: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.entry = entry
        self.tensor = tensor
        self.site = site
        self.offset = offset
        self.problem = message if problem is None else problem
        if isinstance(self, OSError) and source:
            self.filename = source

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> Any:
        # OSError's own reduce would rebuild from (errno, strerror, filename); the message and
        # the place are what this class is made of.
        return (_rebuild, (type(self), self.code, self.message, self.__dict__.copy()))


def _rebuild(cls: type, code: str, message: str, state: dict) -> "Error":
    error = cls(message)
    error.__dict__.update(state)
    if cls is Error:
        error.code = code
    return error


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
    """The operating system, the network or the store refused a read, write, map or rename."""

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
    """The file changed while it was being read (another process rewrote it): retrying may
    succeed. onnxzip.open retries a few times by itself before raising it."""

    code = "changed"


_BY_CODE = {cls.code: cls for cls in (CorruptError, UnsupportedError, NotFoundError, IOFailure,
                                      InvalidArgumentError, LimitExceededError, BadStateError,
                                      ChangedError)}


def _from_code(code: str, message: str, source: str = "", entry: str = "", tensor: str = "",
               site: str = "", offset: Optional[int] = None,
               problem: Optional[str] = None) -> Error:
    """The exception for a library error (called by the extension module)."""
    cls = _BY_CODE.get(code, Error)
    error = cls(message, source=source, entry=entry, tensor=tensor, site=site, offset=offset,
                problem=problem)
    if cls is Error:
        error.code = code
    return error


# Tracebacks and repr() show the public names (onnxzip.CorruptError), not this private module.
for _cls in (Error, *_BY_CODE.values()):
    _cls.__module__ = "onnxzip"
del _cls
