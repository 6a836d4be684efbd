"""Changing an archive's model in place: replace_model, edit_model."""

from __future__ import annotations

import builtins
import os
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple, Union

import numpy as np
import onnx

from . import _onnxzip
from ._model_walk import model_tensors
from ._archive import Archive, _parse_stored_model
from ._common import ModelLike, PathLike, _is_buffer, _path
from ._dtypes import _make_reference
from ._common import KeyLike, _key, _s3_options

@dataclass(frozen=True)
class EditResult:
    """What replace_model() or edit_model() did: compacted (the archive was rewritten without the entries in
    dropped_entries), and the new `__MODEL_PROTO`'s local header offset and size, and the file's
    size afterwards. For an archive with integrity entries (spec §12): digests_updated
    (`__DIGESTS` rewritten with the new model's digest, nothing else hashed), signed_again
    (`__SIGNATURE` written anew with `key`), signature_removed (it went: no key was given, or a
    compaction), digests_removed (`__DIGESTS` went with a compaction). In a bucket
    (s3://bucket/key): object_rewritten (the object was uploaded whole: the bytes before the model
    were under the 5 MiB a part copied inside the store must have)."""

    compacted: bool
    dropped_entries: Tuple[str, ...]
    model_offset: int
    model_size: int
    file_size: int
    digests_updated: bool = False
    signed_again: bool = False
    signature_removed: bool = False
    digests_removed: bool = False
    object_rewritten: bool = False


def replace_model(path: PathLike, model: Union[ModelLike, PathLike], *, compact: bool = False,
                  durable: bool = True, key: Optional[KeyLike] = None,
                  wait: float = 5.0, s3: Optional[_onnxzip.S3Options] = None) -> EditResult:
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

    An archive with `__DIGESTS` keeps it true: the new model is hashed (no other entry) and
    `__DIGESTS` rewritten; its `__SIGNATURE` is signed anew with `key` (a PEM private key's path
    or bytes, as for sign()), or removed without one -- never left untrue (see EditResult).

    The edit locks the file; readers hold its lock for a moment while they read the archive's
    tail, another edit for as long as it takes. `wait` is how long, in seconds, the edit waits for
    it before it gives up with IOFailure "locked by another process" (the archive unchanged).

    `path` may be "s3://bucket/key" (credentials, region and endpoint from `s3`, an
    onnxzip.S3Options, else as the AWS tools take them): the object is edited inside the bucket, byte for byte as a local edit of the same
    bytes -- the store copies the bytes before the model, the new tail is uploaded, and the
    upload completes only if the object is still the one read (ChangedError otherwise, the
    object left as the other client wrote it). `durable` and `wait` do not apply there; an
    object whose bytes before the model are under 5 MiB is uploaded whole
    (EditResult.object_rewritten). The same holds for edit_model() and edit_model_properties().

        with onnxzip.open("model.onnxz") as archive:
            model = archive.model
        model.producer_name = "me"
        onnxzip.replace_model("model.onnxz", model)
    """
    archive_path = _path(path)
    s3_options = _s3_options("replace_model", s3)
    if isinstance(model, (str, os.PathLike)):
        # As the CLI's --model takes it: a file holding a serialized ModelProto.
        with builtins.open(model, "rb") as file:
            model = file.read()
    if _is_buffer(model):
        model_bytes = model
    elif isinstance(model, onnx.ModelProto):
        model_bytes = _serialize_referring(archive_path, model, s3_options)
    else:
        raise TypeError("replace_model: model must be an onnx.ModelProto, its bytes or a path, "
                        f"not {type(model).__name__}")
    return _edit_result(_onnxzip.replace_model(archive_path, model_bytes, compact, durable,
                                               _key("replace_model", "key", key), wait=wait,
                                               s3=s3_options))


def _serialize_referring(archive_path: str, model: onnx.ModelProto,
                         s3: _onnxzip.S3Options) -> bytes:
    """`model` serialized with every inline tensor whose bytes equal the archive's entry of the
    same name turned into a reference to it: the model load() gives goes back without moving a
    payload (and compact then drops nothing). `model` is as before when this returns."""
    swapped: List[Tuple[onnx.TensorProto, bytes, Optional[int]]] = []
    with Archive(archive_path, s3=s3) as archive:
        try:
            for tensor, _, in_sparse in model_tensors(model):
                if in_sparse or tensor.data_location == onnx.TensorProto.EXTERNAL or \
                        not tensor.name or not tensor.HasField("raw_data"):
                    continue
                found = archive._by_name.get(tensor.name, [])
                if len(found) != 1:
                    continue  # A name used twice: which entry it was is not known.
                index = found[0]
                info = archive._info(index)
                if not info.entry or info.data_type != tensor.data_type or \
                        info.dims != tuple(tensor.dims) or info.size != len(tensor.raw_data):
                    continue
                raw = tensor.raw_data
                stored = archive._archive.array(index).reshape(-1).view(np.uint8)
                if not np.array_equal(np.frombuffer(raw, dtype=np.uint8), stored):
                    continue
                location = tensor.data_location if tensor.HasField("data_location") else None
                swapped.append((tensor, raw, location))
                _make_reference(tensor, info.entry, info.size)
            serialized: bytes = model.SerializeToString()
            return serialized
        finally:
            for tensor, raw, location in swapped:
                del tensor.external_data[:]
                tensor.ClearField("data_location")
                if location is not None:
                    tensor.data_location = location
                tensor.raw_data = raw


Change = Callable[[onnx.ModelProto], Optional[onnx.ModelProto]]


def edit_model(path: PathLike, change: Change, *, compact: bool = False,
               durable: bool = True, key: Optional[KeyLike] = None,
               wait: float = 5.0, s3: Optional[_onnxzip.S3Options] = None) -> EditResult:
    """Changes the model of the archive at `path` in place, as replace_model() does, but reads the
    archive's own model and writes the changed one under one open and lock of the file, so that
    no other edit can come in between.

        onnxzip.edit_model("model.onnxz", lambda m: setattr(m, "doc_string", "fine-tuned"))

    Args:
        path: the archive.
        change: called with the onnx.ModelProto as Archive.model shows it (tensors that are
            entries as references); changes it and returns None, or returns a new model to put
            in instead.
        compact, durable, key, wait, s3: as for replace_model().

    Returns:
        What was done (EditResult).

    Raises:
        TypeError: `change` returned something else than None or an onnx.ModelProto.
        InvalidArgumentError: the new model fails replace_model()'s checks.
        Whatever `change` raises. In every case nothing is written: the archive is unchanged.
    """
    return _edit("edit_model", path, change, compact, durable, False, key, wait, s3)


def edit_model_properties(path: PathLike, change: Change, *, compact: bool = False,
                          durable: bool = True, key: Optional[KeyLike] = None,
                          wait: float = 5.0,
                          s3: Optional[_onnxzip.S3Options] = None) -> EditResult:
    """edit_model() for the model's properties alone (the C++ edit_model_properties): `change`
    gets the model without its graph, training_info and functions, and may change everything
    else (metadata_props, producer_name, doc_string, opset_import...). Those three are kept
    byte for byte, neither parsed nor rewritten, so the edit costs the central directory and
    the properties, not the graph. Giving the model one of them raises InvalidArgumentError.

        onnxzip.edit_model_properties(
            "model.onnxz", lambda m: onnx.helper.set_model_props(m, {"license": "MIT"}))

    Args, Returns and Raises: as for edit_model().
    """
    return _edit("edit_model_properties", path, change, compact, durable, True, key, wait, s3)


def _edit(function: str, path: PathLike, change: Change, compact: bool, durable: bool,
          properties_only: bool, key: Optional[KeyLike], wait: float,
          s3: Optional[_onnxzip.S3Options]) -> EditResult:
    archive_path = _path(path)
    s3_options = _s3_options(function, s3)

    def apply(model_bytes: bytes) -> bytes:
        model = _parse_stored_model(model_bytes, archive_path)
        replaced = change(model)
        if replaced is None:
            unchanged: bytes = model.SerializeToString()
            return unchanged
        if not isinstance(replaced, onnx.ModelProto):
            # A lambda that returns what its last call gave (graph.node.add(...), a string) must
            # not become the model: that would overwrite the archive with garbage.
            raise TypeError(f"{function}: change returned a {type(replaced).__name__}, not an "
                            "onnx.ModelProto or None; the archive is unchanged")
        changed: bytes = replaced.SerializeToString()
        return changed

    return _edit_result(_onnxzip.edit_model(archive_path, apply, compact, durable,
                                            properties_only, _key(function, "key", key),
                                            wait=wait, s3=s3_options))


def _edit_result(fields: _onnxzip.EditTuple) -> EditResult:
    (compacted, dropped, model_offset, model_size, file_size, digests_updated, signed_again,
     signature_removed, digests_removed, object_rewritten) = fields
    return EditResult(compacted, tuple(dropped), model_offset, model_size, file_size,
                      digests_updated, signed_again, signature_removed, digests_removed,
                      object_rewritten)
