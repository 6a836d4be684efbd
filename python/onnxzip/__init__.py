"""onnxzip: the ONNX zip container (.onnxz) for Python.

An .onnxz file is one ZIP archive holding an ONNX model and its weights: every large tensor is a
stored entry whose bytes start on a 64-byte boundary of the file, and the last entry,
``__MODEL_PROTO``, is the ModelProto referring to them as external data. Opening an archive maps it;
tensors are numpy views of the mapping, no byte copied.

    import onnxzip
    onnxzip.save(model, "model.onnxz")            # an onnx.ModelProto, any size (even > 2 GiB)
    model = onnxzip.load("model.onnxz")           # onnx.ModelProto, weights inline
    with onnxzip.open("model.onnxz") as archive:  # zero-copy reading
        for name in archive.keys():
            weight = archive.get_tensor(name)     # read-only numpy view of the mapped file
    with onnxzip.ArchiveWriter("out.onnxz") as writer:   # exporters: one tensor at a time
        model.graph.initializer.append(writer.add_tensor("w", numpy_array))
        writer.finish(model)

Functions: save, load, open, convert, verify, repack, write_view_model, replace_model,
export_torch.
Classes: Archive (what open returns), ArchiveWriter, TensorInfo, VerifyReport, Finding.
Errors: Error and its subclasses (see onnxzip.Error).

Data types: get_tensor returns numpy's own dtype for FLOAT, DOUBLE, FLOAT16, the integer types,
BOOL, COMPLEX64 and COMPLEX128, shaped by the tensor's dims. numpy has no type for the others, so
they come as raw views of their storage: BFLOAT16 as uint16 (the bit pattern) shaped by dims; the
8-bit floats (FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ, FLOAT8E8M0) as uint8 shaped
by dims; the packed sub-byte types (INT4, UINT4, FLOAT4E2M1: two per byte; INT2, UINT2: four per
byte, low bits first) as a one-dimensional uint8 array of the packed bytes, ceil(count * bits / 8)
long. TensorInfo.data_type and .dims give the logical type and shape. ArchiveWriter.add_tensor
takes the same raw views back with an explicit data_type (and dims for packed types).
"""

from __future__ import annotations

import builtins
import hashlib
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

import numpy as np
import onnx
from google.protobuf.message import DecodeError

from . import _onnxzip
from ._errors import (BadStateError, CorruptError, Error, InvalidArgumentError, IOFailure,
                      LimitExceededError, NotFoundError, UnsupportedError)
from ._model_walk import model_tensors

__all__ = [
    "save", "load", "open", "convert", "verify", "repack", "write_view_model", "export_torch",
    "replace_model", "edit_model", "Archive", "ArchiveWriter", "TensorInfo", "VerifyReport",
    "Finding", "RepackResult", "EditResult",
    "Error", "CorruptError", "UnsupportedError", "NotFoundError", "IOFailure",
    "InvalidArgumentError", "LimitExceededError", "BadStateError",
]
__version__ = "0.1.0"

PathLike = Union[str, "os.PathLike[str]"]
ModelLike = Union[onnx.ModelProto, bytes, bytearray, memoryview]

# protobuf refuses to serialize a message of 2 GiB or more; above this size save() and
# ArchiveWriter.finish() move the payloads out tensor by tensor instead of serializing the model.
_PROTOBUF_LIMIT = (1 << 31) - 1

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


def _path(path: PathLike) -> str:
    return os.fspath(path)


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


def _finish_streaming(writer: Any, model: onnx.ModelProto, threshold: int, dedupe: bool) -> None:
    """Writes `model` through the C++ writer without ever serializing it whole: each tensor large
    enough is serialized alone, its payload written as an entry, and the tensor turned into a
    reference; then the now small model is serialized and finished. The caller's model is
    restored afterwards (even on failure), so it is modified only during the call."""
    swapped: List[Tuple[onnx.TensorProto, bytes]] = []
    written: Dict[Tuple[int, bytes], Tuple[str, int]] = {}
    try:
        for tensor, _, in_sparse in list(model_tensors(model)):
            # ByteSize() bounds the payload from above for every form but tiny varints; a
            # tensor skipped here is one finish() externalizes itself if it reaches threshold.
            if in_sparse or tensor.data_location == onnx.TensorProto.EXTERNAL:
                continue
            if tensor.ByteSize() < max(threshold, 1):
                continue
            blob = tensor.SerializeToString()
            ref: Optional[Tuple[str, int]] = None
            key = None
            if dedupe and tensor.HasField("raw_data"):
                raw = tensor.raw_data
                key = (len(raw), hashlib.blake2b(raw, digest_size=32).digest())
                ref = written.get(key)
                del raw
            if ref is None:
                ref = writer.add_tensor_proto(blob)
                if ref is None:  # STRING, UNDEFINED or unknown: stays inline, as save() does.
                    continue
                if key is not None:
                    written[key] = ref
            swapped.append((tensor, blob))
            _make_reference(tensor, ref[0], ref[1])
        small = model.SerializeToString()
        writer.finish(small)
    finally:
        # One tensor at a time, each copy dropped once restored: memory stays near the model's
        # own size plus one tensor (ClearField above freed each original payload).
        while swapped:
            tensor, blob = swapped.pop()
            tensor.ParseFromString(blob)
            del blob


def _tensor_objects(model: onnx.ModelProto) -> List[onnx.TensorProto]:
    """The tensors whose raw_data the C++ bridge may read in place (python/src/protobuf_bridge.h)."""
    return [found.tensor for found in model_tensors(model)]


def _parse_stored_model(model_bytes: bytes, path: str) -> onnx.ModelProto:
    """The onnx.ModelProto of `__MODEL_PROTO`, which the C++ reader has already validated; onnx's
    parser is stricter in places (e.g. UTF-8 in strings), and its refusal is an onnxzip error."""
    model = onnx.ModelProto()
    try:
        model.ParseFromString(model_bytes)
    except DecodeError as e:
        raise CorruptError(f"{path}: __MODEL_PROTO: the onnx package cannot parse it: {e}") from None
    return model


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


def save(model: ModelLike, path: PathLike, *, threshold: int = 1024, alignment: int = 64,
         dedupe: bool = False) -> None:
    """Writes `model` (an onnx.ModelProto, or its serialized bytes) to `path` as an .onnxz archive.

    Every tensor of a fixed-size data type whose payload has at least `threshold` bytes becomes a
    stored entry whose data starts on a multiple of `alignment` (a power of two in [64, 65536]),
    wherever the tensor sits (initializers, attributes, subgraphs, functions). With `dedupe`,
    identical payloads are stored once. The file appears atomically: complete or not at all.

    The payloads are never serialized with the model, so models of 2 GiB or more (which
    protobuf cannot serialize) work too: each large payload is moved out of `model` while the
    rest is serialized, and put back before save returns (also on error), so that afterwards
    `model` is as before, byte for byte. During the call `model` is therefore modified: do not
    read or change it from another thread meanwhile (save releases the GIL while it writes).
    With protobuf's C++ implementation (Debian's python3-protobuf), raw_data payloads are moved
    as pointers and written from the model's own memory: no payload byte is copied, and saving
    takes about as long as copying the file. With the other implementations every payload is
    copied (protobuf's Python API cannot lend its bytes): models under 2 GiB are serialized
    whole, larger ones tensor by tensor, twice per payload (out of the model and back).

    Raises InvalidArgumentError (a tensor already EXTERNAL, a payload whose size is not dims x
    element size, a bad alignment), IOFailure, and the parser's errors for bad model bytes.
    """
    _check_options("save", alignment=alignment, threshold=threshold, dedupe=dedupe)
    if _is_buffer(model):
        _onnxzip.save_bytes(model, _path(path), alignment, threshold, dedupe)
        return
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"save() takes an onnx.ModelProto or bytes, not {type(model).__name__}")
    if _onnxzip.message_bridge_available() and _onnxzip.save_message(
            model, _tensor_objects(model), _path(path), alignment, threshold, dedupe):
        return
    # protobuf's Python API copies every payload it hands out: the fallback for the pure-Python
    # and upb implementations, and for models that are 2 GiB or more without their raw_data.
    if model.ByteSize() < _PROTOBUF_LIMIT:
        _onnxzip.save_bytes(model.SerializeToString(), _path(path), alignment, threshold, dedupe)
        return
    _save_streaming(model, path, threshold=threshold, alignment=alignment, dedupe=dedupe)


def _save_streaming(model: onnx.ModelProto, path: PathLike, *, threshold: int, alignment: int,
                    dedupe: bool) -> None:
    writer = _onnxzip.ArchiveWriter(_path(path), alignment, threshold, dedupe)
    try:
        _finish_streaming(writer, model, threshold, dedupe)
    finally:
        writer.abort()  # After a successful finish this only closes; else no file is left.


def _location(tensor: onnx.TensorProto) -> str:
    for entry in tensor.external_data:
        if entry.key == "location":
            return entry.value
    return ""


def _open_archive(path: str, access: str) -> _onnxzip.Archive:
    """The extension's Archive, with what the C++ message cannot know added: the file's name on
    a NotFoundError (as open() sets it), and a hint when the file is a legacy model or looks
    cut short."""
    try:
        return _onnxzip.Archive(path, access)
    except (NotFoundError, IOFailure) as e:
        e.filename = path
        raise
    except CorruptError as e:
        hint = _corrupt_hint(path)
        if not hint:
            raise
        raise CorruptError(f"{e} ({hint})") from None


def _corrupt_hint(path: str) -> str:
    try:
        if not _is_archive_file(path):
            return ("this is no .onnxz archive but, by its first bytes, a legacy ONNX model: "
                    "onnx.load reads it, onnxzip.convert makes an archive of it")
        with builtins.open(path, "rb") as file:
            file.seek(max(os.fstat(file.fileno()).st_size - 65557, 0))
            tail = file.read()
    except OSError:
        return ""
    if b"PK\x05\x06" not in tail:
        return "no end of central directory record: the file may be truncated"
    return ""


def load(path: PathLike, *, load_external_data: bool = True) -> onnx.ModelProto:
    """Reads the archive at `path` and returns its model, like onnx.load.

    With `load_external_data` (the default) every tensor stored as an entry gets its bytes back in
    raw_data (a copy: protobuf owns its bytes) and loses its reference, so the model is an
    ordinary inline model. With False, the model as stored: tensors refer to entries
    (data_location EXTERNAL, external_data location/length); use open() to read them in place.

    The archive is validated as the C++ loader does (ZIP structure, every reference, sizes);
    problems raise CorruptError / UnsupportedError naming the entry and tensor, a missing file
    NotFoundError.
    """
    archive = _open_archive(_path(path), "map")
    try:
        model = _parse_stored_model(archive.model_bytes(), _path(path))
        if load_external_data:
            index: Dict[str, int] = {}
            for i, record in enumerate(archive.tensors()):
                if record.location:
                    index.setdefault(record.location, i)
            for tensor, _, _ in model_tensors(model):
                if tensor.data_location != onnx.TensorProto.EXTERNAL:
                    continue
                tensor.raw_data = archive.payload(index[_location(tensor)])
                del tensor.external_data[:]
                tensor.ClearField("data_location")
        return model
    finally:
        archive.close()


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of an archive's model: a payload entry, or an inline tensor.

    name: TensorProto.name ("" when unnamed); key: what keys() lists and get_tensor() takes (the
    name; for an unnamed tensor its entry name, or for an unnamed inline one its site);
    location: the entry ("" for an inline tensor, whose payload sits in the model); data_type:
    the ONNX data type number (onnx.TensorProto.FLOAT...); dims: the logical shape; nbytes: the
    payload's size; offset: its file offset (0 when inline); alignment: the largest power of two
    (<= 65536) dividing it (0 when inline); zero_copy: False for an inline tensor (get_tensor
    gives a copy) and for an entry another tool deflated (get_tensor then views inflated
    memory); site: where the tensor sits in the model, e.g. "graph/initializer[3]".
    """

    name: str
    key: str
    location: str
    data_type: int
    dims: Tuple[int, ...]
    nbytes: int
    offset: int
    alignment: int
    zero_copy: bool
    site: str


class Archive:
    """An opened .onnxz archive (see onnxzip.open): the model and zero-copy views of its tensors.

    The file is memory-mapped and validated on opening. Arrays from get_tensor() are read-only
    views of the mapping that keep it alive on their own: they stay valid after close(), after
    the Archive is garbage-collected, and in other threads. Reading views needs no lock.

    The mapping is private (copy-on-write): a write through a view that ignores numpy's
    read-only flag (torch.from_numpy(view).mul_(2), an optimizer step) copies the pages it
    touches into this process's memory and never reaches the file; views stay zero-copy until
    written. With access="read" the file is read into memory instead of mapped: for files that
    others may truncate or rewrite while they are open (a truncated mapping kills the process
    with SIGBUS when touched).
    """

    def __init__(self, path: PathLike, *, access: str = "map") -> None:
        if access not in ("map", "read"):
            raise InvalidArgumentError(f'open: access must be "map" or "read", not {access!r}')
        self.path = _path(path)
        self._archive = _open_archive(self.path, access)
        self._model: Optional[onnx.ModelProto] = None
        # TensorInfo objects are made when asked for: building a frozen dataclass per tensor took
        # longer than opening the archive, and most callers only want keys() and get_tensor().
        self._count = self._archive.tensor_count()
        self._index: Dict[str, int] = self._archive.index()

    @property
    def model(self) -> onnx.ModelProto:
        """The onnx.ModelProto as stored: tensors that are entries refer to them (EXTERNAL)."""
        if self._model is None:
            self._model = _parse_stored_model(self._archive.model_bytes(), self.path)
        return self._model

    def keys(self) -> List[str]:
        """Names of every tensor of the model, in model order: the payload entries and the small
        tensors kept inline (an unnamed tensor by its entry name, an unnamed inline one -- a
        Constant's value -- by its site, "graph/node[3]/attribute[0]/t"; a name used twice
        once). STRING tensors are left out (numpy has no type for them). BadStateError after
        close()."""
        return list(self._open_index())

    def __iter__(self) -> Iterator[str]:
        return iter(self._open_index())

    def __len__(self) -> int:
        return len(self._open_index())

    def __contains__(self, name: object) -> bool:
        return name in self._open_index()

    def _open_index(self) -> Dict[str, int]:
        if self._archive.closed:
            raise BadStateError(f"{self.path}: the archive is closed")
        return self._index

    @property
    def tensors(self) -> List[TensorInfo]:
        """Every tensor of the model, in model order (tied weights share a location): the
        payload entries and the inline ones. BadStateError after close()."""
        return [self._info(i) for i in range(self._archive.tensor_count())]

    def tensor_info(self, name: str) -> TensorInfo:
        """The TensorInfo of keys() entry `name`; KeyError if there is none, BadStateError after
        close()."""
        return self._info(self._lookup(name))

    def _info(self, i: int) -> TensorInfo:
        r = self._archive.tensor(i)
        return TensorInfo(r.name, r.key, r.location, r.data_type, tuple(r.dims), r.nbytes,
                          r.file_offset, r.alignment, r.zero_copy, r.site)

    def get_tensor(self, name: str) -> np.ndarray:
        """Tensor `name` as a read-only numpy array over the mapped file: no byte is copied, and
        its data pointer is the payload's (64-byte aligned) address in the mapping. Shaped by
        dims, dtype per data_type (raw views for types numpy lacks: see help(onnxzip)). The array
        keeps the mapping alive. An inline tensor comes back as a read-only copy. KeyError for an
        unknown name; BadStateError after close()."""
        return self._archive.array(self._lookup(name))

    def _lookup(self, name: str) -> int:
        try:
            return self._open_index()[name]
        except KeyError:
            raise KeyError(f"{self.path}: no tensor named {name!r}") from None

    def close(self) -> None:
        """Releases this object's hold on the mapping (views made before keep theirs)."""
        self._archive.close()

    @property
    def closed(self) -> bool:
        return self._archive.closed

    def __enter__(self) -> "Archive":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._archive.closed:
            return f"<onnxzip.Archive {self.path!r}: closed>"
        return f"<onnxzip.Archive {self.path!r}: {self._count} tensors>"


def open(path: PathLike, *, access: str = "map") -> Archive:  # noqa: A001 - like safe_open.
    """Opens the .onnxz archive at `path` for zero-copy reading: see Archive.

        with onnxzip.open("model.onnxz") as archive:
            w = archive.get_tensor("encoder.weight")   # numpy view of the mapped file
            model = archive.model                       # onnx.ModelProto with references
    """
    return Archive(path, access=access)


class ArchiveWriter:
    """Writes an archive tensor by tensor, for exporters that produce weights one at a time.

        with onnxzip.ArchiveWriter("model.onnxz") as writer:
            for name, array in weights:
                model.graph.initializer.append(writer.add_tensor(name, array))
            writer.finish(model)

    Each add_tensor() writes its payload as an entry at once, straight from the caller's buffer
    (no copy), and returns the EXTERNAL TensorProto to put in the model. finish(model) checks that
    every reference names an added entry with the right size and every added entry is referred
    to, externalizes the model's other large inline tensors as save() does, writes the model and
    renames the archive into place. Leaving the with-block on an exception, or without finish(),
    leaves no file (the latter raises BadStateError unless abort() was called). Not thread-safe;
    calls release the GIL.
    """

    def __init__(self, path: PathLike, *, alignment: int = 64, threshold: int = 1024,
                 dedupe: bool = False) -> None:
        _check_options("ArchiveWriter", alignment=alignment, threshold=threshold, dedupe=dedupe)
        self.path = _path(path)
        self._threshold = threshold
        self._dedupe = dedupe
        self._writer = _onnxzip.ArchiveWriter(self.path, alignment, threshold, dedupe)
        self._finished = False
        self._aborted = False
        self._names: set = set()

    def add_tensor(self, name: str, array: Any, *, data_type: Optional[int] = None,
                   dims: Optional[List[int]] = None) -> onnx.TensorProto:
        """Writes `array`'s bytes as the payload of tensor `name` and returns its TensorProto
        (name, dims, data_type, data_location EXTERNAL, external_data location/length).

        `array`: a C-contiguous numpy array (a CPU torch.Tensor via .numpy(): shares memory), or
        any buffer (memoryview, bytes, bytearray). Its bytes are written in place, never copied.
        The data type comes from the numpy dtype and the shape from the array, unless given:
        `data_type` (an onnx.TensorProto data type number) for raw views -- e.g. BFLOAT16 from a
        uint16 or int16 array, FLOAT8E4M3FN from uint8, INT4 from packed uint8 bytes -- and `dims`
        (needed for packed types, whose buffer holds the packed bytes). The payload must be
        exactly dims x element size bytes, else InvalidArgumentError.
        """
        if not isinstance(name, str):
            raise TypeError(f"add_tensor: name must be a str, not {type(name).__name__}")
        if name and name in self._names:
            # Two initializers of one name make an invalid model (ONNX IR: names are unique);
            # the second would have been stored as entry "<name>_2" and the model kept both.
            raise InvalidArgumentError(f"{self.path}: tensor {name!r} was added already")
        data, implied_type = _as_array(array)
        if data.dtype.byteorder == ">":
            raise InvalidArgumentError(
                f"{self.path}: tensor {name!r}: big-endian arrays are not accepted "
                "(payloads are little-endian): pass array.astype(array.dtype.newbyteorder('<'))")
        if data.dtype.hasobject or data.dtype.kind in "OUSVMm":
            raise InvalidArgumentError(
                f"{self.path}: tensor {name!r}: numpy dtype {data.dtype} has no ONNX data type")
        if data_type is None:
            data_type = implied_type
        if data_type is None:
            try:
                data_type = _NUMPY_TO_ONNX[data.dtype]
            except KeyError:
                raise InvalidArgumentError(
                    f"{self.path}: tensor {name!r}: numpy dtype {data.dtype} has no ONNX data type; "
                    "pass data_type= for raw views") from None
        else:
            _check_int("add_tensor", "data_type", data_type, 1, (1 << 31) - 1)
            _check_raw_view(self.path, name, data.dtype, data_type)
        if dims is not None and not all(isinstance(d, (int, np.integer)) and
                                        not isinstance(d, bool) for d in dims):
            raise TypeError(f"add_tensor: dims must be a sequence of ints, not {dims!r}"[:200])
        shape = [int(d) for d in (dims if dims is not None else data.shape)]
        if not data.flags.c_contiguous:
            raise InvalidArgumentError(
                f"{self.path}: tensor {name!r}: the array is not C-contiguous "
                "(numpy.ascontiguousarray makes a contiguous copy)")
        location, length = self._writer.add_tensor(name, data_type, shape, data)
        self._names.add(name)
        tensor = onnx.TensorProto()
        tensor.name = name
        tensor.dims.extend(shape)
        _set_data_type(tensor, data_type)
        _make_reference(tensor, location, length)
        return tensor

    def finish(self, model: ModelLike) -> None:
        """Checks `model` against the added entries, externalizes its other inline tensors at or
        above the threshold, writes it as `__MODEL_PROTO` and moves the archive into place. On an
        InvalidArgumentError (a wrong reference) the writer stays usable: fix the model and call
        finish() again. `model` is handled as save() handles it: its raw_data payloads are read in
        place where protobuf allows, and a model of 2 GiB or more works."""
        if _is_buffer(model):
            self._writer.finish(model)
        elif _onnxzip.message_bridge_available() and self._writer.finish_message(
                model, _tensor_objects(model), self._threshold):
            pass  # Payloads read in place, as save() does.
        elif model.ByteSize() < _PROTOBUF_LIMIT:
            self._writer.finish(model.SerializeToString())
        else:
            _finish_streaming(self._writer, model, self._threshold, self._dedupe)
        self._finished = True

    def abort(self) -> None:
        """Discards the archive being written (nothing appears at the path). No-op after finish."""
        self._writer.abort()
        self._aborted = True

    def __enter__(self) -> "ArchiveWriter":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._writer.abort()
        if exc_type is None and not self._finished and not self._aborted:
            raise BadStateError(
                f"{self.path}: ArchiveWriter left without finish(model): nothing was written")


def _as_array(array: Any) -> Tuple[np.ndarray, Optional[int]]:
    """`array` as a numpy array sharing its memory, and the ONNX data type it implies when its
    numpy dtype does not say it (a torch bfloat16 tensor comes back as its int16 bits)."""
    if isinstance(array, np.ndarray):
        return array, None
    if isinstance(array, (bytes, bytearray)):
        return np.frombuffer(array, dtype=np.uint8), None
    if isinstance(array, memoryview):
        if array.format in ("B", "b", "c") and array.ndim <= 1:
            return np.frombuffer(array, dtype=np.uint8), None
        return np.asarray(array), None
    if hasattr(array, "detach") and hasattr(array, "numpy"):  # torch.Tensor, without importing torch
        tensor = array.detach()
        if str(tensor.dtype) == "torch.bfloat16":  # numpy has no bfloat16: its bits as int16.
            import torch

            return tensor.view(torch.int16).numpy(), onnx.TensorProto.BFLOAT16
        return tensor.numpy(), None
    return np.asarray(array), None


# The storage unit of each ONNX type numpy has no dtype for: a raw view must be an integer array
# of this many bytes per element (or bytes, uint8).
_RAW_VIEW_ITEMSIZE = {onnx.TensorProto.BFLOAT16: 2}


def _check_raw_view(path: str, name: str, dtype: np.dtype, data_type: int) -> None:
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


def convert(src: PathLike, dst: PathLike, *, alignment: int = 64, threshold: int = 1024,
            dedupe: bool = False, external_data: Union[None, bool, str] = None,
            max_file_size: int = 0, data_alignment: int = 4096) -> str:
    """Converts a legacy .onnx model (weights inline or in any external-data layout) to an .onnxz
    archive, or an archive to a legacy model; the direction comes from `src`'s content. Returns
    the input's format, "legacy" or "onnxz". `dst` appears atomically; `src` is never written.

    A `dst` name that contradicts the output's format (an archive converted to "y.onnxz", a
    legacy model to "y.onnx") is an InvalidArgumentError: the direction is the input's, not the
    name's.

    To .onnxz: `alignment`, `threshold`, `dedupe` as for save().
    To legacy: weights inline when the model fits protobuf's 2 GiB, else in "<dst name>.data";
    `external_data` True forces external data, a string also names the data file, False forces
    inline (LimitExceededError past 2 GiB); `max_file_size` (bytes, 0: no limit) splits the data
    into FILE, FILE.1...; `data_alignment` aligns each payload's offset in it; tensors under
    `threshold` bytes stay inline.
    """
    _check_options("convert", alignment=alignment, threshold=threshold, dedupe=dedupe)
    _check_int("convert", "max_file_size", max_file_size, 0, (1 << 64) - 1)
    _check_int("convert", "data_alignment", data_alignment, 1, 1 << 30)
    _check_destination_name(_path(src), _path(dst))
    mode = None if external_data is None else bool(external_data)
    data_file_name = external_data if isinstance(external_data, str) else ""
    return _onnxzip.convert(_path(src), _path(dst), alignment, threshold, dedupe, mode,
                            data_file_name, max_file_size, data_alignment)


def _is_archive_file(path: str) -> bool:
    """Whether `path` holds a ZIP (an .onnxz), as the C++ detect_format tells them apart."""
    with builtins.open(path, "rb") as file:
        head = file.read(4)
    return head in (b"PK\x03\x04", b"PK\x05\x06")


def _check_destination_name(src: str, dst: str) -> None:
    # convert's direction comes from the input's content: converting an archive writes a legacy
    # model, which a ".onnxz" name would misdescribe (and a legacy input an archive named .onnx).
    try:
        archive_input = _is_archive_file(src)
    except OSError:
        return  # The C++ convert names the problem.
    suffix = os.path.splitext(dst)[1].lower()
    if archive_input and suffix == ".onnxz":
        raise InvalidArgumentError(
            f"{dst}: {src} is an .onnxz archive, so convert writes a legacy ONNX model: name "
            "the output .onnx (to rewrite an archive, use repack)")
    if not archive_input and suffix == ".onnx":
        raise InvalidArgumentError(
            f"{dst}: {src} is a legacy ONNX model, so convert writes an .onnxz archive: name "
            "the output .onnxz")


@dataclass(frozen=True)
class Finding:
    """One problem verify() found. severity: "error" (load() refuses the archive for it, or a
    CRC-32 is wrong) or "warning" (a deviation from the spec that load() accepts); entry and
    tensor: what it concerns ("" when nothing in particular); offset: the byte offset in the
    file; message: the description."""

    severity: str
    entry: str
    tensor: str
    offset: int
    message: str


@dataclass(frozen=True)
class VerifyReport:
    """What verify() found. ok: conforms to the spec (no finding at all); loadable: load() would
    succeed and every CRC-32 is right (no "error" finding)."""

    findings: Tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def loadable(self) -> bool:
        return all(f.severity != "error" for f in self.findings)

    def __bool__(self) -> bool:
        return self.ok


def verify(path: PathLike, *, check_crc: bool = True) -> VerifyReport:
    """Checks the model file at `path` and returns every finding instead of raising: the same
    findings as `onnxzip verify` prints, one a line (the same C++ function makes both).

    An .onnxz archive is checked against the .onnxz specification (ZIP structure, alignment,
    CRC-32 of every entry unless check_crc=False, references, names); a legacy .onnx is read
    with its external data. Both get the payload check of every inline tensor and the ONNX IR
    rules (ir_version, opset imports, single assignment, topological order, unique names...);
    those are "warning" findings, as load() accepts such a model.

    Raises only when the file cannot be read (NotFoundError, IOFailure)."""
    return VerifyReport(tuple(Finding(*f) for f in _onnxzip.verify(_path(path), check_crc)))


class RepackResult(NamedTuple):
    """What repack() did with the input's entries (see help(onnxzip.repack))."""

    kept_entries: List[str]
    unpacked_entries: List[str]
    dropped_entries: List[str]


def repack(src: PathLike, dst: PathLike, *, alignment: int = 64,
           threshold: int = 1024) -> RepackResult:
    """Writes a conforming .onnxz at `dst` from a ZIP archive of an ONNX model that another tool
    made (deflated or unaligned entries, data descriptors, the model entry anywhere). Entries
    referred to whole are kept (kept_entries), others resolved per tensor (unpacked_entries),
    unreferenced ones dropped (dropped_entries)."""
    _check_options("repack", alignment=alignment, threshold=threshold)
    return RepackResult(*_onnxzip.repack(_path(src), _path(dst), alignment, threshold))


class EditResult(NamedTuple):
    """What replace_model() or edit_model() did: compacted (the archive was rewritten without the entries in
    dropped_entries), and the new `__MODEL_PROTO`'s local header offset and size, and the file's
    size afterwards."""

    compacted: bool
    dropped_entries: List[str]
    model_offset: int
    model_size: int
    file_size: int


def replace_model(path: PathLike, model: Union[ModelLike, PathLike], *, compact: bool = False,
                  durable: bool = True) -> EditResult:
    """Replaces the model of the archive at `path` in place, without moving or rewriting a payload
    byte: only `__MODEL_PROTO`, the central directory and the end records are rewritten, so the
    cost is the model's size, whatever the weights weigh. Crash-safe: the file always reads as the
    archive with the old model or the new one (with `durable`, also across a power loss).

    `model` (an onnx.ModelProto, its bytes, or the path of a file holding them, as the CLI's
    --model) refers to the archive's entries as Archive.model does (edit archive.model, or a
    loaded model's references); every EXTERNAL tensor must name an entry with the right size,
    and every entry must be referred to -- unless `compact`, which rewrites the archive without
    the unreferenced entries (O(archive)). An inline tensor of an onnx.ModelProto whose bytes
    equal the archive's entry of the same name refers to that entry, so the model load() gives
    goes back as it came, payloads where they were; other inline tensors stay inline. Views from open() stay valid (payload bytes do not change); reopen the
    archive for its new model. Raises InvalidArgumentError naming the tensor or entry (the
    archive is then unchanged), CorruptError for a broken archive, IOFailure (the message says
    which model the file holds).

        with onnxzip.open("model.onnxz") as archive:
            model = archive.model
        model.producer_name = "me"
        onnxzip.replace_model("model.onnxz", model)
    """
    archive_path = _path(path)
    if isinstance(model, (str, os.PathLike)):
        # As the CLI's --model takes it: a file holding a serialized ModelProto.
        with builtins.open(model, "rb") as file:
            model = file.read()
    if _is_buffer(model):
        model_bytes = model
    elif isinstance(model, onnx.ModelProto):
        model_bytes = _serialize_referring(archive_path, model)
    else:
        raise TypeError("replace_model: model must be an onnx.ModelProto, its bytes or a path, "
                        f"not {type(model).__name__}")
    return EditResult(*_onnxzip.replace_model(archive_path, model_bytes, compact, durable))


def _serialize_referring(archive_path: str, model: onnx.ModelProto) -> bytes:
    """`model` serialized with every inline tensor whose bytes equal the archive's entry of the
    same name turned into a reference to it: the model load() gives goes back without moving a
    payload (and compact then drops nothing). `model` is as before when this returns."""
    swapped: List[Tuple[onnx.TensorProto, bytes, Optional[int]]] = []
    with Archive(archive_path) as archive:
        try:
            for tensor, _, in_sparse in model_tensors(model):
                if in_sparse or tensor.data_location == onnx.TensorProto.EXTERNAL or \
                        not tensor.name or not tensor.HasField("raw_data"):
                    continue
                index = archive._index.get(tensor.name)
                if index is None:
                    continue
                info = archive._info(index)
                if not info.location or info.data_type != tensor.data_type or \
                        info.dims != tuple(tensor.dims) or info.nbytes != len(tensor.raw_data):
                    continue
                raw = tensor.raw_data
                stored = archive._archive.array(index).reshape(-1).view(np.uint8)
                if not np.array_equal(np.frombuffer(raw, dtype=np.uint8), stored):
                    continue
                location = tensor.data_location if tensor.HasField("data_location") else None
                swapped.append((tensor, raw, location))
                _make_reference(tensor, info.location, info.nbytes)
            return model.SerializeToString()
        finally:
            for tensor, raw, location in swapped:
                del tensor.external_data[:]
                tensor.ClearField("data_location")
                if location is not None:
                    tensor.data_location = location
                tensor.raw_data = raw


def edit_model(path: PathLike, change: Callable[[onnx.ModelProto], Optional[onnx.ModelProto]], *,
               compact: bool = False, durable: bool = True,
               properties_only: bool = False) -> EditResult:
    """Changes the model of the archive at `path` in place, as replace_model() does, but reads the
    archive's own model and writes the changed one under one open and lock of the file, so that
    no other edit can come in between. `change(model)` gets the onnx.ModelProto as Archive.model
    shows it (tensors that are entries as references) and changes it, or returns a new model to
    put in instead. If it raises, nothing is written and the exception propagates; the archive is
    unchanged. The new model is checked as replace_model() checks it.

    With `properties_only`, `change` gets the model without its graph, training_info and
    functions, and may change everything else (metadata_props, producer_name, doc_string,
    opset_import...): those three are kept byte for byte, neither parsed nor rewritten, so the
    edit costs the central directory and the properties, not the graph. Giving the model one of
    them raises InvalidArgumentError.

        onnxzip.edit_model("model.onnxz", lambda m: setattr(m, "doc_string", "fine-tuned"),
                           properties_only=True)
    """
    archive_path = _path(path)

    def apply(model_bytes: bytes) -> bytes:
        model = _parse_stored_model(model_bytes, archive_path)
        replaced = change(model)
        if replaced is None:
            return model.SerializeToString()
        if not isinstance(replaced, onnx.ModelProto):
            # A lambda that returns what its last call gave (graph.node.add(...), a string) must
            # not become the model: that would overwrite the archive with garbage.
            raise TypeError(f"edit_model: change returned a {type(replaced).__name__}, not an "
                            "onnx.ModelProto or None; the archive is unchanged")
        return replaced.SerializeToString()

    return EditResult(*_onnxzip.edit_model(archive_path, apply, compact, durable,
                                           properties_only))


def write_view_model(archive_path: PathLike, view_path: Optional[PathLike] = None) -> str:
    """Writes a small legacy .onnx next to the archive whose initializers point into the archive
    file itself (location, offset, length), so runtimes that know only ONNX external data load it
    in place. Default path: "<archive stem>.view.onnx" in the archive's folder. Returns it."""
    archive_path = _path(archive_path)
    if view_path is None:
        stem, _ = os.path.splitext(archive_path)
        view_path = stem + ".view.onnx"
    _onnxzip.write_view_model(archive_path, _path(view_path))
    return _path(view_path)


def export_torch(module: Any, args: Any, path: PathLike, *, alignment: int = 64,
                 **export_kwargs: Any) -> onnx.ModelProto:
    """Exports a torch.nn.Module to an .onnxz archive without ever building a protobuf that holds
    the weights (so models over 2 GiB export): torch.onnx.export writes the graph only
    (export_params=False; do_constant_folding=False and training=TrainingMode.PRESERVE unless
    given, so that no parameter is computed by the exporter -- a module in eval() still exports
    in eval mode, Conv and BatchNormalization unfused -- and parameters keep their state_dict
    names), then every parameter and buffer the graph takes as an input is streamed into an
    ArchiveWriter straight from the tensor's memory and becomes an initializer (and stops being
    a graph input).

    `args` and `export_kwargs` are torch.onnx.export's (input_names, opset_version,
    dynamic_axes...). Parameters must be on the CPU. bfloat16 tensors are written as BFLOAT16.
    Returns the model as written (tensors referring to entries).
    """
    from ._torch_export import export_torch as _export

    return _export(module, args, path, alignment=alignment, **export_kwargs)
