"""numpy dtypes and ONNX data types, and TensorProto references to archive entries."""

from __future__ import annotations


from typing import Any

import numpy as np
import onnx

from . import _onnxzip
from ._errors import InvalidArgumentError

_NUMPY_TO_ONNX = {
    np.dtype("float32"): onnx.TensorProto.FLOAT,
    np.dtype("uint8"): onnx.TensorProto.UINT8,
    np.dtype("int8"): onnx.TensorProto.INT8,
    np.dtype("uint16"): onnx.TensorProto.UINT16,
    np.dtype("int16"): onnx.TensorProto.INT16,
    np.dtype("int32"): onnx.TensorProto.INT32,
    np.dtype("int64"): onnx.TensorProto.INT64,
    np.dtype("bool"): onnx.TensorProto.BOOL,
    np.dtype("float16"): onnx.TensorProto.FLOAT16,
    np.dtype("float64"): onnx.TensorProto.DOUBLE,
    np.dtype("uint32"): onnx.TensorProto.UINT32,
    np.dtype("uint64"): onnx.TensorProto.UINT64,
    np.dtype("complex64"): onnx.TensorProto.COMPLEX64,
    np.dtype("complex128"): onnx.TensorProto.COMPLEX128,
}


def _set_data_type(tensor: onnx.TensorProto, data_type: int) -> None:
    """Sets data_type even when this onnx release does not know the value (onnx 1.12 predates
    the 8-bit floats and 4-/2-bit integers): the field then travels as an unknown field, which
    serializes to the same bytes."""
    try:
        tensor.data_type = data_type
    except ValueError:
        tensor.MergeFromString(bytes([0x10]) + _varint(data_type))


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _make_reference(tensor: onnx.TensorProto, location: str, length: int) -> None:
    """Makes `tensor` refer to an archive entry (spec §7.2): payload fields cleared."""
    for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data",
                  "uint64_data"):
        tensor.ClearField(field)
    tensor.data_location = onnx.TensorProto.EXTERNAL
    del tensor.external_data[:]
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", location
    entry = tensor.external_data.add()
    entry.key, entry.value = "length", str(length)


def _location(tensor: onnx.TensorProto) -> str:
    for entry in tensor.external_data:
        if entry.key == "location":
            return str(entry.value)
    return ""


# The storage unit of each ONNX type numpy has no dtype for: a raw view must be an integer array
# of this many bytes per element (or bytes, uint8).
_RAW_VIEW_ITEMSIZE = {onnx.TensorProto.BFLOAT16: 2}


def _check_raw_view(path: str, name: str, dtype: np.dtype[Any], data_type: int) -> None:
    """Refuses a buffer whose numpy dtype contradicts `data_type`: an array of float64 declared
    FLOAT would store its 8-byte values as pairs of garbage floats."""
    native = {v: k for k, v in _NUMPY_TO_ONNX.items()}.get(data_type)
    if native is not None and dtype == native:
        return
    if dtype.kind in "iu" and dtype.itemsize == 1:
        return  # Raw bytes: any type's payload (the size is checked against dims).
    bits = _onnxzip.element_bits(data_type)
    if native is None and bits and dtype.kind in "iu" and \
            dtype.itemsize == _RAW_VIEW_ITEMSIZE.get(data_type, max(bits // 8, 1)):
        return
    raise InvalidArgumentError(
        f"{path}: tensor {name!r}: numpy dtype {dtype} does not hold "
        f"{_onnxzip.data_type_name(data_type)} values"
        + (f" (pass an array of {native})" if native is not None else ""))
