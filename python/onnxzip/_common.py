"""What every part of the package shares: path and model types, option checks."""

from __future__ import annotations

import builtins
import os
from typing import Any, Optional, Union

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
