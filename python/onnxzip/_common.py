"""What every part of the package shares: path and model types, option checks."""

from __future__ import annotations

import builtins
import os
from typing import Any, List, Mapping, Optional, Union

import numpy as np
import onnx

from . import _onnxzip
from ._errors import InvalidArgumentError

PathLike = Union[str, "os.PathLike[str]"]

# Where a model is read from: a path, an http(s) URL (a str), or the model's bytes in any object
# with the buffer protocol (bytes, bytearray, memoryview, a numpy array, mmap.mmap...).
Source = Union[PathLike, bytes, bytearray, memoryview, Any]


ModelLike = Union[onnx.ModelProto, bytes, bytearray, memoryview]


def _path(path: PathLike) -> str:
    return os.fspath(path)


def _is_url(path: Any) -> bool:
    """An http(s) URL, or s3://bucket/key (read the same way, each request signed)."""
    return isinstance(path, str) and (_onnxzip.is_url(path) or path[:5].lower() == "s3://")


def _source_kind(source: Any) -> str:
    """"url", "path" or "buffer" (bytes of a model, viewed in place)."""
    if isinstance(source, str):
        return "url" if _is_url(source) else "path"
    if isinstance(source, os.PathLike):
        return "path"
    try:
        memoryview(source).release()
    except TypeError:
        raise TypeError("a model source is a path, an http(s) URL or the model's bytes (a buffer), "
                        f"not {type(source).__name__}") from None
    return "buffer"


def _check_int(function: str, option: str, value: Any, low: int, high: int) -> int:
    # bool is an int to Python, but threshold=True is a mistake, not 1.
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{function}: {option} must be an int, not {type(value).__name__}")
    if not low <= value <= high:
        raise InvalidArgumentError(f"{function}: {option} must be in [{low}, {high}], not {value}")
    return int(value)


def _check_options(function: str, *, alignment: Optional[Any] = None,
                   threshold: Optional[Any] = None, dedupe: Optional[Any] = None) -> None:
    """Checks the writers' options before anything else sees them: pybind11 would refuse a bad
    one with a TypeError that spells out every argument, the whole model's text included."""
    if alignment is not None:
        _check_int(function, "alignment", alignment, 64, 65536)
        if alignment & (alignment - 1):
            raise InvalidArgumentError(
                f"{function}: alignment must be a power of two in [64, 65536], not {alignment}")
    if threshold is not None:
        _check_int(function, "threshold", threshold, 0, (1 << 64) - 1)
    if dedupe is not None and not isinstance(dedupe, bool):
        raise TypeError(f"{function}: dedupe must be a bool, not {type(dedupe).__name__}")


def _is_buffer(model: Any) -> bool:
    return isinstance(model, (bytes, bytearray, memoryview))


def _is_archive_file(path: str) -> bool:
    """Whether `path` holds a ZIP (an .onnxz), as the C++ detect_format tells them apart."""
    with builtins.open(path, "rb") as file:
        head = file.read(4)
    return head in (b"PK\x03\x04", b"PK\x05\x06")


def _check_output_name(function: str, path: str, writes_archive: bool, why: str = "") -> None:
    """One rule for every face's outputs: a ".onnxz" name holds an archive and a ".onnx" name a
    legacy model; other names take either. `why` says where the direction comes from."""
    suffix = os.path.splitext(path)[1].lower()
    if writes_archive and suffix == ".onnx":
        problem = (f"{function} writes an .onnxz archive{why}, which a .onnx name would "
                   "misdescribe: name the output .onnxz")
    elif not writes_archive and suffix == ".onnxz":
        problem = (f"{function} writes a legacy ONNX model{why}, which an .onnxz name would "
                   "misdescribe: name the output .onnx")
    else:
        return
    raise InvalidArgumentError(f"{path}: {problem}", source=path, problem=problem)


# A PEM key: the path of a PEM file, or its bytes.
KeyLike = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]
Headers = Optional[Mapping[str, str]]


def _key(function: str, option: str,
         key: object) -> Union[bytes, bytearray, memoryview, str, None]:
    """`key` as the extension takes it: PEM bytes, a path as str, or None."""
    if key is None or isinstance(key, (bytes, bytearray, memoryview)):
        return key
    if isinstance(key, (str, os.PathLike)):
        return _path(key)
    raise TypeError(f"{function}: {option} must be a PEM file's path or its bytes, not "
                    f"{type(key).__name__}")


def _s3_options(function: str, s3: Any) -> "_onnxzip.S3Options":
    """`s3=` as the extension takes it: an onnxzip.S3Options (its settings override the AWS
    environment's and files' for an s3://bucket/key), or None for the environment's alone."""
    if s3 is None:
        return _onnxzip.S3Options()
    if not isinstance(s3, _onnxzip.S3Options):
        raise TypeError(f"{function}: s3 must be an onnxzip.S3Options, not {type(s3).__name__}")
    return s3


def _header_lines(function: str, headers: Headers) -> List[str]:
    """`headers` as "Name: value" lines, refused (without showing a value) when malformed."""
    if headers is None:
        return []
    if not isinstance(headers, Mapping):
        raise TypeError(f"{function}: headers must be a mapping of str to str, not "
                        f"{type(headers).__name__}")
    lines = []
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"{function}: headers must map str to str")
        if not name or any(c in name for c in ": \t\r\n") or any(c in value for c in "\r\n"):
            # The value is never shown: it is a credential more often than not.
            raise InvalidArgumentError(f"{function}: header {name[:64]!r}: not a valid header "
                                       "name, or a value with a line break")
        lines.append(f"{name}: {value}")
    return lines
