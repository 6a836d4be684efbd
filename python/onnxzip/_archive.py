"""Reading archives: open() (zero-copy views) and load() (an inline onnx.ModelProto)."""

from __future__ import annotations

import builtins
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np
import onnx
from google.protobuf.message import DecodeError

from . import _onnxzip
from ._errors import (BadStateError, CorruptError, InvalidArgumentError, IOFailure, NotFoundError,
                      UnsupportedError)
from ._model_walk import model_tensors
from ._common import PathLike, _is_archive_file, _path
from ._dtypes import _location

def _parse_stored_model(model_bytes: bytes, path: str) -> onnx.ModelProto:
    """The onnx.ModelProto of `__MODEL_PROTO`, which the C++ reader has already validated; onnx's
    parser is stricter in places (e.g. UTF-8 in strings), and its refusal is an onnxzip error."""
    model = onnx.ModelProto()
    try:
        model.ParseFromString(model_bytes)
    except DecodeError as e:
        raise CorruptError(f"{path}: __MODEL_PROTO: the onnx package cannot parse it: {e}") from None
    return model


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
    payload's size; file_offset: its offset in the file (0 when inline); alignment: the largest power of two
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
    file_offset: int
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

    def __init__(self, path: PathLike, *, framework: str = "np", access: str = "map") -> None:
        if access not in ("map", "read"):
            raise InvalidArgumentError(f'open: access must be "map" or "read", not {access!r}')
        if framework not in _FRAMEWORKS:
            raise InvalidArgumentError(
                f'open: framework must be "np" (numpy) or "pt" (torch), not {framework!r}')
        self.framework = _FRAMEWORKS[framework]
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

    def get_tensor(self, name: str) -> Any:
        """Tensor `name` as a read-only numpy array over the mapped file: no byte is copied, and
        its data pointer is the payload's (64-byte aligned) address in the mapping. Shaped by
        dims, dtype per data_type (raw views for types numpy lacks: see help(onnxzip)). The array
        keeps the mapping alive. An inline tensor comes back as a read-only copy. KeyError for an
        unknown name; BadStateError after close().

        With framework="pt", a torch.Tensor sharing the same memory (BFLOAT16 as torch.bfloat16;
        a write to it copies the pages it touches, never reaching the file: see Archive).
        UnsupportedError for the unsigned types torch lacks (UINT16, UINT32, UINT64)."""
        index = self._lookup(name)
        array = self._archive.array(index)
        if self.framework == "pt":
            return _as_torch(array, self._archive.tensor(index).data_type, self.path, name)
        return array

    def metadata(self) -> Dict[str, str]:
        """The model's metadata_props as a dict (the last value of a key given twice), read
        without parsing the graph. BadStateError after close()."""
        return dict(self._archive.metadata())

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


def open(path: PathLike, *, framework: str = "np",  # noqa: A001 - like safetensors' safe_open.
         access: str = "map") -> Archive:
    """Opens the .onnxz archive at `path` for zero-copy reading: see Archive.

        with onnxzip.open("model.onnxz") as archive:
            w = archive.get_tensor("encoder.weight")   # numpy view of the mapped file
            model = archive.model                       # onnx.ModelProto with references
    """
    return Archive(path, framework=framework, access=access)


def load_file(path: PathLike, *, framework: str = "np", access: str = "map") -> Dict[str, Any]:
    """Every tensor of the archive at `path` by its key (see Archive.keys), as safetensors'
    load_file gives them: numpy arrays, or torch tensors with framework="pt". Zero-copy views of
    the mapping (inline tensors copied), which stays mapped while any of them lives."""
    with Archive(path, framework=framework, access=access) as archive:
        return {name: archive.get_tensor(name) for name in archive.keys()}


_FRAMEWORKS = {"np": "np", "numpy": "np", "pt": "pt", "torch": "pt"}


def _as_torch(array: Any, data_type: int, path: str, name: str) -> Any:
    import warnings

    import torch

    if data_type in (onnx.TensorProto.UINT16, onnx.TensorProto.UINT32, onnx.TensorProto.UINT64):
        raise UnsupportedError(f"{path}: tensor {name!r}: torch has no "
                               f"{onnx.TensorProto.DataType.Name(data_type)} type; open the "
                               "archive with framework=\"np\"")
    bfloat16 = data_type == onnx.TensorProto.BFLOAT16
    with warnings.catch_warnings():
        # The view is read-only to numpy; torch may write it, which the private mapping allows.
        warnings.simplefilter("ignore", UserWarning)
        tensor = torch.from_numpy(array.view(np.int16) if bfloat16 else array)
    return tensor.view(torch.bfloat16) if bfloat16 else tensor
