"""Writing archives: ArchiveWriter, and save() through it (one path for both)."""

from __future__ import annotations

import hashlib
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

import numpy as np
import onnx
import onnx.helper

from . import _onnxzip
from ._onnxzip import S3Options
from ._errors import BadStateError, InvalidArgumentError
from ._model_walk import model_tensors
from ._common import (ModelLike, PathLike, _check_int, _check_options, _check_output_name,
                      _is_buffer, _path)
from ._dtypes import _NUMPY_TO_ONNX, _check_raw_view, _make_reference, _set_data_type

# protobuf refuses to serialize a message of 2 GiB or more; above this size save() and
# ArchiveWriter.finish() move the payloads out tensor by tensor instead of serializing the model.
_PROTOBUF_LIMIT = (1 << 31) - 1


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


def save(model: ModelLike, path: PathLike, *, threshold: int = 1024, alignment: int = 64,
         dedupe: bool = False, digests: bool = False, s3: Optional[S3Options] = None) -> None:
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

    With `digests`, the archive also gets `__DIGESTS` (spec §12): the SHA-256 of every entry,
    computed as it is written (nothing is read back). sign() then signs it; verify() and
    open(check_digests=True) check it.

    `path` may be "s3://bucket/key": the archive is uploaded as it is written (one multipart
    upload, no local file), with the store's settings from `s3` (an onnxzip.S3Options: region,
    endpoint_url, keys, part_size, parts_in_flight, overwrite) and else from the AWS variables
    and files. An existing object is kept unless S3Options(overwrite=True); a failure aborts the
    upload.
    """
    _check_options("save", alignment=alignment, threshold=threshold, dedupe=dedupe)
    _check_output_name("save", _path(path), True)
    _check_flag("save", "digests", digests)
    _check_model("save", model)
    # An ArchiveWriter with no tensor added: finish() is save()'s one path (the C++ writer
    # externalizes exactly as the C++ save does).
    writer = ArchiveWriter(path, alignment=alignment, threshold=threshold, dedupe=dedupe,
                           digests=digests, s3=s3)
    try:
        writer.finish(model)
    finally:
        writer.abort()  # After a successful finish this only closes; else no file is left.


def _check_s3(function: str, s3: Any) -> None:
    if s3 is not None and not isinstance(s3, S3Options):
        raise TypeError(f"{function}: s3 must be an onnxzip.S3Options, not {type(s3).__name__}")


def _check_flag(function: str, option: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{function}: {option} must be a bool, not {type(value).__name__}")


def _check_model(function: str, model: Any) -> None:
    if not isinstance(model, onnx.ModelProto) and not _is_buffer(model):
        raise TypeError(f"{function}: model must be an onnx.ModelProto or its bytes, not "
                        f"{type(model).__name__}")


def _save_streaming(model: onnx.ModelProto, path: PathLike, *, threshold: int, alignment: int,
                    dedupe: bool) -> None:
    writer = _onnxzip.ArchiveWriter(_path(path), alignment, threshold, dedupe)
    try:
        _finish_streaming(writer, model, threshold, dedupe)
    finally:
        writer.abort()  # After a successful finish this only closes; else no file is left.


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
    calls release the GIL. With `digests`, every entry is hashed as it is written and finish()
    adds `__DIGESTS` (see save()).
    """

    def __init__(self, path: PathLike, *, alignment: int = 64, threshold: int = 1024,
                 dedupe: bool = False, digests: bool = False,
                 s3: Optional[S3Options] = None) -> None:
        _check_options("ArchiveWriter", alignment=alignment, threshold=threshold, dedupe=dedupe)
        _check_output_name("ArchiveWriter", _path(path), True)
        _check_flag("ArchiveWriter", "digests", digests)
        self.path = _path(path)
        self._threshold = threshold
        self._dedupe = dedupe
        _check_s3("ArchiveWriter", s3)
        self._writer = _onnxzip.ArchiveWriter(self.path, alignment, threshold, dedupe, digests,
                                              s3 or S3Options())
        self._finished = False
        self._aborted = False
        self._names: Set[str] = set()

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
        data, data_type, shape = _payload_of(self.path, name, array, data_type, dims)
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
        _check_model("finish", model)
        if isinstance(model, (bytes, bytearray, memoryview)):
            self._writer.finish(model)
        elif _onnxzip.message_bridge_available() and self._writer.finish_message(
                model, _tensor_objects(model), self._threshold):
            pass  # Payloads read in place, without a copy.
        # protobuf's Python API copies every payload it hands out: the fallback for the
        # pure-Python and upb implementations, and for models of 2 GiB or more without raw_data.
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


def _payload_of(where: str, name: str, array: Any, data_type: Optional[int],
                dims: Optional[List[int]]) -> Tuple[np.ndarray[Any, Any], int, List[int]]:
    """What add_tensor writes for `array`: its bytes as a contiguous numpy array, its ONNX data
    type (`data_type`, else the dtype's) and its shape (`dims`, else the array's), each checked;
    InvalidArgumentError naming `where` and the tensor otherwise. Shared with PartWriter."""
    data, implied_type = _as_array(array)
    if data.dtype.byteorder == ">":
        raise InvalidArgumentError(
            f"{where}: tensor {name!r}: big-endian arrays are not accepted "
            "(payloads are little-endian): pass array.astype(array.dtype.newbyteorder('<'))")
    if data.dtype.hasobject or data.dtype.kind in "OUSVMm":
        raise InvalidArgumentError(
            f"{where}: tensor {name!r}: numpy dtype {data.dtype} has no ONNX data type")
    if data_type is None:
        data_type = implied_type
    if data_type is None:
        try:
            data_type = _NUMPY_TO_ONNX[data.dtype]
        except KeyError:
            raise InvalidArgumentError(
                f"{where}: tensor {name!r}: numpy dtype {data.dtype} has no ONNX data type; "
                "pass data_type= for raw views") from None
    else:
        _check_int("add_tensor", "data_type", data_type, 1, (1 << 31) - 1)
        _check_raw_view(where, name, data.dtype, data_type)
    if dims is not None and not all(isinstance(d, (int, np.integer)) and
                                    not isinstance(d, bool) for d in dims):
        raise TypeError(f"add_tensor: dims must be a sequence of ints, not {dims!r}"[:200])
    shape = [int(d) for d in (dims if dims is not None else data.shape)]
    if not data.flags.c_contiguous:
        raise InvalidArgumentError(
            f"{where}: tensor {name!r}: the array is not C-contiguous "
            "(numpy.ascontiguousarray makes a contiguous copy)")
    return data, data_type, shape


def _as_array(array: Any) -> Tuple[np.ndarray[Any, Any], Optional[int]]:
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


def save_file(tensors: Mapping[str, Any], path: PathLike,
              metadata: Optional[Mapping[str, str]] = None, *, alignment: int = 64,
              digests: bool = False, s3: Optional[S3Options] = None) -> None:
    """Writes named tensors with no graph to build, as safetensors' save_file does: an archive
    whose model is a graph of initializers only (spec §7.6), every tensor a payload entry.

        onnxzip.save_file({"w": np.ones((2, 3), np.float32)}, "weights.onnxz", {"step": "100"})
        weights = onnxzip.load_file("weights.onnxz")

    Args:
        tensors: name -> numpy array, torch tensor (bfloat16 too) or buffer, as add_tensor takes
            them; written in the mapping's order, straight from their memory.
        path: the archive to write (appears atomically).
        metadata: string pairs for the model's metadata_props (Archive.metadata reads them).
        alignment, digests, s3: as for save().

    Raises:
        TypeError: a metadata key or value that is not a str.
        InvalidArgumentError: what add_tensor refuses (a dtype without an ONNX type...).
    """
    _check_output_name("save_file", _path(path), True)
    pairs = list((metadata or {}).items())
    for key, value in pairs:
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"save_file: metadata must map str to str, not {key!r}: {value!r}"[:200])
    with ArchiveWriter(path, alignment=alignment, threshold=0, digests=digests, s3=s3) as writer:
        initializers = [writer.add_tensor(name, tensor) for name, tensor in tensors.items()]
        graph = onnx.helper.make_graph([], "tensors", [], [], initializer=initializers)
        model = onnx.helper.make_model(graph, producer_name="onnxzip.save_file")
        onnx.helper.set_model_props(model, dict(pairs))
        writer.finish(model)
