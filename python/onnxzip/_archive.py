"""Reading archives: open() (zero-copy views) and load() (an inline onnx.ModelProto)."""

from __future__ import annotations

import builtins
import os
import time
import weakref
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

import numpy as np
import onnx
from google.protobuf.message import DecodeError

from . import _onnxzip
from ._errors import (BadStateError, ChangedError, CorruptError, InvalidArgumentError, IOFailure,
                      NotFoundError, UnsupportedError)
from ._model_walk import model_tensors
from ._common import (Headers, KeyLike, PathLike, Source, _header_lines, _is_archive_file, _key, _path,
                      _s3_options, _source_kind)
from ._dtypes import _location

# Extra request headers for a remote archive (Authorization for a private hub).

def _parse_stored_model(model_bytes: bytes, path: str) -> onnx.ModelProto:
    """The onnx.ModelProto of `__MODEL_PROTO`, which the C++ reader has already validated; onnx's
    parser is stricter in places (e.g. UTF-8 in strings), and its refusal is an onnxzip error."""
    model = onnx.ModelProto()
    try:
        model.ParseFromString(model_bytes)
    except DecodeError as e:
        raise CorruptError(f"{path}: __MODEL_PROTO: the onnx package cannot parse it: {e}") from None
    return model


def _open_archive(source: Source, access: str, *, headers: Headers = None,
                  check_digests: bool = False, public_key: Optional[KeyLike] = None,
                  function: str = "open",
                  s3: Optional[_onnxzip.S3Options] = None) -> _onnxzip.Archive:
    """The extension's Archive, with what the C++ message cannot know added: the file's name on
    a NotFoundError (as open() sets it), and a hint when the file is a legacy model or looks
    cut short. An http(s) URL opens a remote archive (range requests with `headers`), an
    s3://bucket/key one reached with `s3`'s settings over the environment's; a buffer is viewed
    in place."""
    if not isinstance(check_digests, bool):
        raise TypeError(f"{function}: check_digests must be a bool, not "
                        f"{type(check_digests).__name__}")
    key = _key(function, "public_key", public_key)
    s3_options = _s3_options(function, s3)
    kind = _source_kind(source)
    if kind == "url":
        return _onnxzip.Archive(source, access, kind, _header_lines(function, headers),
                                check_digests, key, s3_options)
    if headers is not None:
        raise InvalidArgumentError(f"{function}: headers apply to http(s) URLs only")
    if kind == "buffer":
        return _onnxzip.Archive(source, access, kind, [], check_digests, key)
    path = _path(source)
    try:
        return _open_local(path, access, kind, check_digests, key)
    except (NotFoundError, IOFailure) as e:
        if not e.source:
            e.source = e.filename = path
        raise
    except CorruptError as e:
        hint = _corrupt_hint(path)
        if not hint:
            raise
        raise CorruptError(f"{e} ({hint})", source=e.source or path, entry=e.entry,
                           tensor=e.tensor, site=e.site, offset=e.offset,
                           problem=f"{e.problem} ({hint})") from None


# How often an open that overlapped an in-place edit (ChangedError) is tried again, and the pause
# before each retry (an edit holds its lock for about as long as it writes its tail).
_CHANGED_RETRIES = 4
_CHANGED_PAUSE_SECONDS = 0.02


def _open_local(path: str, access: str, kind: str, check_digests: bool,
                key) -> _onnxzip.Archive:
    """The extension's Archive of a local file; an open that an edit overlapped is tried again a
    few times before its ChangedError is raised."""
    for attempt in range(_CHANGED_RETRIES):
        try:
            return _onnxzip.Archive(path, access, kind, [], check_digests, key)
        except ChangedError:
            if attempt + 1 == _CHANGED_RETRIES:
                raise
            time.sleep(_CHANGED_PAUSE_SECONDS * (attempt + 1))
    raise AssertionError("unreachable")


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


def _location_of(source: Source) -> Any:
    """A URL or a buffer as given, or the path as a str."""
    return _path(source) if _source_kind(source) == "path" else source


def _display(source: Source) -> str:
    """What messages and repr() call `source`: a URL without its user, query and fragment (a
    presigned URL's credentials), "<memory>" for bytes, else the path."""
    kind = _source_kind(source)
    if kind == "buffer":
        return "<memory>"
    return _onnxzip.display_url(source) if kind == "url" else _path(source)


def load(path: Source, *, load_external_data: bool = True, check_digests: bool = False,
         public_key: Optional[KeyLike] = None, headers: Headers = None,
         s3: Optional[_onnxzip.S3Options] = None) -> onnx.ModelProto:
    """Reads the archive at `path` (or an http(s) URL) and returns its model, like onnx.load.

    With `load_external_data` (the default) every tensor stored as an entry gets its bytes back in
    raw_data (a copy: protobuf owns its bytes) and loses its reference, so the model is an
    ordinary inline model. With False, the model as stored: tensors refer to entries
    (data_location EXTERNAL, external_data location/length); use open() to read them in place.

    The archive is validated as the C++ loader does (ZIP structure, every reference, sizes);
    problems raise CorruptError / UnsupportedError naming the entry and tensor, a missing file
    NotFoundError.

    A URL is read with HTTP range requests (see open()): the model with the first request, the
    payloads in requests of up to 64 MiB, several at once. `check_digests`, `public_key`,
    `headers` and `s3` as for open(); with check_digests every payload is checked.
    """
    archive = _open_archive(_location_of(path), "map", headers=headers,
                            check_digests=check_digests, public_key=public_key,
                            function="load", s3=s3)
    try:
        model = _parse_stored_model(archive.model_bytes(), _display(path))
        if load_external_data:
            index: Dict[str, int] = {}
            for i, entry in enumerate(archive.columns()[2]):
                if entry:
                    index.setdefault(entry, i)
            external = [tensor for tensor, _, _ in model_tensors(model)
                        if tensor.data_location == onnx.TensorProto.EXTERNAL]
            # One call for all: a remote archive reads them merged and in parallel.
            payloads = archive.payloads([index[_location(tensor)] for tensor in external])
            for tensor, payload in zip(external, payloads):
                tensor.raw_data = payload
                del tensor.external_data[:]
                tensor.ClearField("data_location")
            del payloads
        return model
    finally:
        archive.close()


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of an archive's model: a payload entry, or an inline tensor (spec/names.md).

    name: TensorProto.name ("" when unnamed; a name may be used twice, by two branches of an If);
    site: where the tensor sits in the model, "graph/initializer[3]", unique; entry: its payload
    entry ("" for an inline tensor, whose payload sits in the model); data_type: the ONNX data type
    number (onnx.TensorProto.FLOAT...); dims: the logical shape; size: the payload's bytes;
    offset: the payload's offset in the file (None for an inline tensor, and for a remote archive,
    whose local headers are read with the data); alignment: the largest power of two (<= 65536)
    dividing it (0 when offset is None); inline: the payload sits in the model; zero_copy: reading
    it lends the archive's bytes (False for an inline tensor, whose array is a copy, and for an
    entry another tool deflated, whose array views inflated memory).

    Archive.get_tensor() takes a TensorInfo to read exactly that tensor.
    """

    name: str
    site: str
    entry: str
    data_type: int
    dims: Tuple[int, ...]
    size: int
    offset: Optional[int]
    alignment: int
    inline: bool
    zero_copy: bool


# What get_tensor() takes: a TensorInfo, or a str that is a name, a site or an entry name.
TensorKey = Union[TensorInfo, str]

_KEYINGS = ("name", "site")


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

    A remote archive (an http:// or https:// URL) is read with HTTP range requests: opening
    makes one request (two when the model and central directory do not fit its 1 MiB), which
    gives keys(), tensors and model; each get_tensor() is one request for that tensor, and
    get_tensors() reads the tensors asked for together, adjacent ones in one request, several
    requests at once. Its arrays own their 64-byte aligned buffers. `path` is then the URL as
    messages show it (no user, query or fragment). Transfers release the GIL.

    With check_digests (or a public_key), the archive's `__DIGESTS` is read at open and the
    model checked against it; each tensor is checked the first time get_tensor() or
    get_tensors() hands it out (CorruptError naming the entry on a mismatch), later ones cost
    nothing. Arrays are then still views of the mapping, checked.
    """

    def __init__(self, path: Source, *, framework: str = "np", access: str = "map",
                 check_digests: bool = False, public_key: Optional[KeyLike] = None,
                 headers: Headers = None, s3: Optional[_onnxzip.S3Options] = None) -> None:
        if access not in ("map", "read"):
            raise InvalidArgumentError(f'open: access must be "map" or "read", not {access!r}')
        if framework not in _FRAMEWORKS:
            raise InvalidArgumentError(
                f'open: framework must be "np" (numpy) or "pt" (torch), not {framework!r}')
        self.framework = _FRAMEWORKS[framework]
        self.path = _display(path)
        self._archive = _open_archive(_location_of(path), access,
                                      headers=headers, check_digests=check_digests,
                                      public_key=public_key, s3=s3)
        # The model, parsed when asked for and held weakly: an open archive keeps the model's
        # bytes (read at open), not a parsed copy several times their size that a caller may
        # no longer use.
        self._model: Optional["weakref.ReferenceType[onnx.ModelProto]"] = None
        # TensorInfo objects are made when asked for: building a frozen dataclass per tensor took
        # longer than opening the archive, and most callers only want keys() and get_tensor().
        self._count = self._archive.tensor_count()
        self._names, self._sites, self._entries = self._archive.columns()
        self._by_name: Dict[str, List[int]] = {}
        for i, name in enumerate(self._names):
            self._by_name.setdefault(name or self._sites[i], []).append(i)
        self._by_site: Optional[Dict[str, int]] = None
        self._by_entry: Optional[Dict[str, List[int]]] = None

    @property
    def model(self) -> onnx.ModelProto:
        """The onnx.ModelProto as stored: tensors that are entries refer to them (EXTERNAL).
        Parsed from the model's bytes read at open (a later change of the file does not show),
        and held only while the caller holds it: the same object while it lives, a new parse
        after that."""
        model = self._model() if self._model is not None else None
        if model is None:
            model = _parse_stored_model(self._archive.model_bytes(), self.path)
            self._model = weakref.ref(model)
        return model

    def keys(self, key: str = "name") -> List[str]:
        """Every tensor of the model in model order (the payload entries and the small tensors
        kept inline), by name (an unnamed tensor -- a Constant's value -- by its site), or with
        key="site" by site. A name that two tensors use (two branches of an If may) raises
        InvalidArgumentError naming their sites: key="site" lists them apart, and archive.tensors
        gives every record. STRING tensors are left out (numpy has no type for them).
        BadStateError after close()."""
        self._check_open()
        if key not in _KEYINGS:
            raise InvalidArgumentError(f'keys: key must be "name" or "site", not {key!r}')
        if key == "site":
            return list(self._sites)
        for name, found in self._by_name.items():
            if len(found) > 1:
                raise self._ambiguous(name, found, 'keys(key="site") lists every tensor by site')
        return list(self._by_name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        self._check_open()
        return self._count

    def __contains__(self, name: object) -> bool:
        """Whether get_tensor(name) finds a tensor (a name, site or entry, or a TensorInfo)."""
        if not isinstance(name, (str, TensorInfo)):
            return False
        return bool(self._matches(name))

    def _check_open(self) -> None:
        if self._archive.closed:
            raise BadStateError(f"{self.path}: the archive is closed")

    @property
    def tensors(self) -> List[TensorInfo]:
        """Every tensor of the model, in model order (tied weights share an entry): the payload
        entries and the inline ones, each by its TensorInfo, which get_tensor() takes.
        BadStateError after close()."""
        return [self._info(i) for i in range(self._archive.tensor_count())]

    def tensor_info(self, tensor: TensorKey) -> TensorInfo:
        """The TensorInfo of `tensor` (a name, site or entry name, as get_tensor() takes it);
        KeyError if there is none, BadStateError after close()."""
        return self._info(self._lookup(tensor))

    def _info(self, i: int) -> TensorInfo:
        r = self._archive.tensor(i)
        return TensorInfo(r.name, r.site, r.entry, r.data_type, tuple(r.dims), r.size, r.offset,
                          r.alignment, r.inline, r.zero_copy)

    def get_tensor(self, tensor: TensorKey) -> Any:
        """`tensor` as a read-only numpy array over the mapped file: no byte is copied, and its
        data pointer is the payload's (64-byte aligned) address in the mapping. Shaped by dims,
        dtype per data_type (raw views for types numpy lacks: see help(onnxzip)). The array keeps
        the mapping alive. An inline tensor comes back as a read-only copy.

        `tensor`: a TensorInfo (from archive.tensors), a site ("graph/node[0]/then_branch/
        initializer[1]"), a tensor name, or an entry name. A name two tensors use raises
        InvalidArgumentError naming their sites (give the site or the TensorInfo); KeyError for
        an unknown one; BadStateError after close().

        With framework="pt", a torch.Tensor sharing the same memory (BFLOAT16 as torch.bfloat16;
        a write to it copies the pages it touches, never reaching the file: see Archive).
        UnsupportedError for the unsigned types torch lacks (UINT16, UINT32, UINT64)."""
        index = self._lookup(tensor)
        array = self._archive.array(index)
        if self.framework == "pt":
            return _as_torch(array, self._archive.tensor(index).data_type, self.path,
                             self._sites[index])
        return array

    def get_tensors(self, tensors: Iterable[TensorKey]) -> Dict[Any, Any]:
        """{tensor: get_tensor(tensor)} for each of `tensors` (keyed as given), read together: for
        a remote archive, tensors adjacent in the file come with one request and the requests run
        in parallel (in groups of up to 64 MiB); locally the same views get_tensor() gives.
        KeyError or InvalidArgumentError as get_tensor() raises them, before anything is read."""
        wanted = list(dict.fromkeys(tensors))
        indices = [self._lookup(tensor) for tensor in wanted]
        arrays = self._archive.arrays(indices)
        if self.framework == "pt":
            return {tensor: _as_torch(array, self._archive.tensor(index).data_type, self.path,
                                      self._sites[index])
                    for tensor, index, array in zip(wanted, indices, arrays)}
        return dict(zip(wanted, arrays))

    def metadata(self) -> Dict[str, str]:
        """The model's metadata_props as a dict (the last value of a key given twice), read
        without parsing the graph. BadStateError after close()."""
        return dict(self._archive.metadata())

    def _matches(self, tensor: TensorKey) -> List[int]:
        """The tensors `tensor` may mean: by TensorInfo or site exactly one; by name every one of
        that name; else by entry name every one referring to it."""
        self._check_open()
        if self._by_site is None:
            self._by_site = {site: i for i, site in enumerate(self._sites)}
        if isinstance(tensor, TensorInfo):
            i = self._by_site.get(tensor.site)
            return [] if i is None or self._entries[i] != tensor.entry else [i]
        found = self._by_name.get(tensor)
        if found:
            return found
        if tensor in self._by_site:
            return [self._by_site[tensor]]
        if self._by_entry is None:
            self._by_entry = {}
            for i, entry in enumerate(self._entries):
                if entry:
                    self._by_entry.setdefault(entry, []).append(i)
        found = self._by_entry.get(tensor, [])
        # Tied weights (one entry, several tensors of one type and shape) read the same array.
        shapes = {(self._archive.tensor(i).data_type, tuple(self._archive.tensor(i).dims))
                  for i in found}
        return found[:1] if len(shapes) == 1 else found

    def _lookup(self, tensor: TensorKey) -> int:
        if not isinstance(tensor, (str, TensorInfo)):
            raise TypeError(f"{self.path}: a tensor is named by a str or a TensorInfo, not "
                            f"{type(tensor).__name__}")
        found = self._matches(tensor)
        if not found:
            what = f"site {tensor.site!r}" if isinstance(tensor, TensorInfo) else repr(tensor)
            raise KeyError(f"{self.path}: no tensor {what} (no name, site or entry name)")
        if len(found) > 1:
            raise self._ambiguous(str(tensor), found,
                                  "give the site or the TensorInfo (archive.tensors)")
        return found[0]

    def _ambiguous(self, name: str, found: List[int], fix: str) -> InvalidArgumentError:
        sites = ", ".join(self._sites[i] for i in found)
        return InvalidArgumentError(
            f"{self.path}: {len(found)} tensors are named {name!r} ({sites}): {fix}",
            source=self.path, problem=f"{len(found)} tensors are named {name!r} ({sites}): {fix}")

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


def open(path: Source, *, framework: str = "np",  # noqa: A001 - like safetensors' safe_open.
         access: str = "map", check_digests: bool = False, public_key: Optional[KeyLike] = None,
         headers: Headers = None, s3: Optional[_onnxzip.S3Options] = None) -> Archive:
    """Opens the .onnxz archive at `path` for zero-copy reading, at an http(s) URL for reading
    tensors on demand, or in memory (bytes, bytearray, memoryview, any buffer: viewed in place,
    kept alive by the archive and by every array from it; do not change it meanwhile): see
    Archive.

        with onnxzip.open("model.onnxz") as archive:
            w = archive.get_tensor("encoder.weight")   # numpy view of the mapped file
            model = archive.model                       # onnx.ModelProto with references
        with onnxzip.open("https://hub.example/m.onnxz", headers={"Authorization": "Bearer t"}) as a:
            w = a.get_tensor("encoder.weight")          # one range request

    Args:
        framework: "np" (numpy arrays) or "pt" (torch tensors).
        access: "map" (the file mapped) or "read" (read into memory); files only.
        check_digests: check the model at open and each tensor when first handed out against
            the archive's `__DIGESTS` (an archive without one is a CorruptError).
        public_key: also require a valid `__SIGNATURE` by this key at open (a PEM file's path or
            bytes; implies check_digests).
        headers: extra HTTP request headers for a URL ({"Authorization": "Bearer ..."}); never
            shown in messages or repr().
        s3: for an s3://bucket/key URL, an onnxzip.S3Options whose credentials, profile, region
            and endpoint_url override the AWS environment's and files' (each one left empty is
            found there).

    Raises:
        CorruptError: a broken archive, a digest mismatch, a signature that does not verify.
        NotFoundError: a missing file. IOFailure: a failed request (its HTTP status).
        UnsupportedError: a URL when the extension was built without libcurl.
    """
    return Archive(path, framework=framework, access=access, check_digests=check_digests,
                   public_key=public_key, headers=headers, s3=s3)


def load_file(path: Source, *, framework: str = "np", access: str = "map",
              check_digests: bool = False, headers: Headers = None,
              key: str = "name", s3: Optional[_onnxzip.S3Options] = None) -> Dict[str, Any]:
    """Every tensor of the archive at `path` (or an http(s) URL) by name, as safetensors'
    load_file gives them: numpy arrays, or torch tensors with framework="pt". Zero-copy views of
    the mapping (inline tensors copied), which stays mapped while any of them lives; a remote
    archive's are read as get_tensors() reads them. check_digests, headers and s3 as for open().

    key="name" (the default) keys the dict by tensor name (an unnamed tensor by its site), and
    refuses a name two tensors use (InvalidArgumentError naming their sites) rather than drop
    one; key="site" keys it by site, which is unique: every tensor, always."""
    if key not in _KEYINGS:
        raise InvalidArgumentError(f'load_file: key must be "name" or "site", not {key!r}')
    with Archive(path, framework=framework, access=access, check_digests=check_digests,
                 headers=headers, s3=s3) as archive:
        if key == "name":
            for name, found in archive._by_name.items():
                if len(found) > 1:
                    raise archive._ambiguous(
                        name, found, 'load_file(..., key="site") keys the dict by site')
        return archive.get_tensors(archive.keys(key))


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
