"""Many writers, one archive (spec §13): ranks of a training job write one .onnxz together.

    plan = onnxzip.plan_parts(parts, alignment=64, digests=False)   # every rank, or one + broadcast
    token = onnxzip.begin_parts("model.onnxz", plan)                # one rank; broadcast the token
    with onnxzip.PartWriter(token, part=rank) as w:                 # every rank, its own tensors
        for name, array in my_tensors:
            w.add_tensor(name, array)
    receipt = w.receipt()                                           # gather to one rank
    onnxzip.finish_parts(token, model, receipts, key=None)          # the archive appears
    onnxzip.abort_parts(token)                                      # or: nothing appears

Plans, tokens and receipts are small bytes for the caller's own engine (torch.distributed, MPI,
Ray) to carry. The archive is byte for byte what one ArchiveWriter writes for the same tensors
in plan order with the same options.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np
import onnx

from . import _onnxzip
from ._common import ModelLike, PathLike, _check_int, _path
from ._dtypes import _NUMPY_TO_ONNX, _make_reference, _set_data_type
from ._errors import BadStateError, InvalidArgumentError
from ._writer import _check_model, _payload_of


@dataclass(frozen=True)
class PlannedEntry:
    """Where one tensor goes (the TensorInfo words of spec/names.md)."""

    name: str
    entry: str
    data_type: int
    dims: Tuple[int, ...]
    part: int
    size: int
    local_header_offset: int
    offset: int


def _data_type_of(dtype: Any, where: str) -> int:
    """An ONNX data type from what ArchiveWriter.add_tensor accepts: an ONNX type number, a numpy
    dtype or its name, or a torch dtype (bfloat16 too)."""
    if isinstance(dtype, bool):
        raise TypeError(f"{where}: dtype must be a dtype or an ONNX data type, not a bool")
    if isinstance(dtype, (int, np.integer)):
        return int(dtype)
    if str(dtype).startswith("torch."):  # Without importing torch: torch.float32 -> float32.
        dtype = str(dtype)[len("torch."):]
        if dtype == "bfloat16":
            return onnx.TensorProto.BFLOAT16
    try:
        return _NUMPY_TO_ONNX[np.dtype(dtype)]
    except (TypeError, KeyError):
        raise InvalidArgumentError(f"{where}: dtype {dtype!r} has no ONNX data type") from None


class PartsPlan:
    """Where every entry of an archive written in parts goes. Immutable; equal lists give equal
    plans and equal bytes (to_bytes), so every rank may compute it, or one broadcasts it."""

    def __init__(self, plan: Any) -> None:
        self._plan = plan
        self._entries: Optional[List[PlannedEntry]] = None

    @classmethod
    def from_bytes(cls, data: bytes) -> "PartsPlan":
        """The plan to_bytes() wrote. CorruptError for anything malformed."""
        return cls(_onnxzip.PartsPlan.from_bytes(data))

    def to_bytes(self) -> bytes:
        return bytes(self._plan.to_bytes())

    @property
    def alignment(self) -> int:
        return int(self._plan.alignment)

    @property
    def digests(self) -> bool:
        return bool(self._plan.digests)

    @property
    def part_count(self) -> int:
        return int(self._plan.part_count)

    @property
    def entries(self) -> List[PlannedEntry]:
        """Every entry in file order."""
        if self._entries is None:
            self._entries = [PlannedEntry(n, e, t, tuple(d), p, s, h, o)
                             for n, e, t, d, p, s, h, o in self._plan.entries()]
        return self._entries

    def part(self, part: int) -> List[PlannedEntry]:
        """The entries part `part` writes."""
        _check_int("PartsPlan.part", "part", part, 0, self.part_count - 1)
        return [e for e in self.entries if e.part == part]

    def reference(self, name: str) -> onnx.TensorProto:
        """The TensorProto the model holds for tensor `name`: name, dims, data type and the
        reference to its entry (what ArchiveWriter.add_tensor returns). NotFoundError (KeyError
        too) when the plan has no such tensor."""
        for entry in self.entries:
            if entry.name == name:
                tensor = onnx.TensorProto()
                tensor.name = name
                tensor.dims.extend(entry.dims)
                _set_data_type(tensor, entry.data_type)
                _make_reference(tensor, entry.entry, entry.size)
                return tensor
        raise KeyError(f"no tensor {name!r} in the plan")

    def references(self) -> List[onnx.TensorProto]:
        """reference() of every tensor, in plan order: a model's initializers."""
        return [self.reference(e.name) for e in self.entries]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartsPlan) and bool(self._plan == other._plan)

    def __repr__(self) -> str:
        return (f"PartsPlan({self.part_count} parts, {len(self.entries)} tensors, "
                f"alignment={self.alignment}, digests={self.digests})")


def plan_parts(parts: Sequence[Sequence[Tuple[str, Any, Sequence[int]]]], alignment: int = 64,
               digests: bool = False) -> PartsPlan:
    """Lays out an archive written by len(parts) writers: `parts` holds one list per part of
    (name, dtype, shape), in the order the archive holds them (part 0's first). dtype: an ONNX
    data type number, a numpy dtype or its name, or a torch dtype. Deterministic.

    Raises InvalidArgumentError for a dtype without a fixed size, a bad shape, a name given
    twice, or an alignment that is not a power of two in [64, 65536]."""
    _check_int("plan_parts", "alignment", alignment, 64, 65536)
    if not isinstance(digests, bool):
        raise TypeError(f"plan_parts: digests must be a bool, not {type(digests).__name__}")
    lists = []
    for p, part in enumerate(parts):
        rows = []
        for row in part:
            name, dtype, shape = row
            if not isinstance(name, str):
                raise TypeError(f"plan_parts: part {p}: name must be a str, not {name!r}"[:200])
            rows.append((name, _data_type_of(dtype, f"plan_parts: tensor {name!r}"),
                         [int(d) for d in shape]))
        lists.append(rows)
    return PartsPlan(_onnxzip.PartsPlan(lists, alignment, digests))


def begin_parts(target: PathLike, plan: PartsPlan, *, durable: bool = False) -> bytes:
    """Creates the archive's temporary next to `target` (hidden, preallocated) and returns the
    token every PartWriter and finish_parts take. Nothing appears at `target` before finish.
    `durable`: the receipts and the finish fsync, as a crash-proof save does.

    `target` may be "s3://bucket/key" (credentials, region and endpoint from the environment, as
    open() finds them): one multipart upload, each writer's range one or more of its parts,
    finish_parts uploads the tail and completes it, abort_parts aborts it. Every writer's part
    must then hold at least 5 MiB (InvalidArgumentError saying how to regroup, before any
    request), and a PartWriter adds its tensors in plan order."""
    if not isinstance(plan, PartsPlan):
        raise TypeError(f"begin_parts: plan must be a PartsPlan, not {type(plan).__name__}")
    return bytes(_onnxzip.begin_parts(_path(target), plan._plan, durable))


class PartWriter:
    """Writes one part's tensors into the file begin_parts made, each at its planned offset.

        with onnxzip.PartWriter(token, part=rank) as w:
            w.add_tensor("layer.0.weight", array)
        receipt = w.receipt()

    add_tensor takes what ArchiveWriter.add_tensor takes (numpy arrays, CPU torch tensors,
    buffers; data_type= for raw views) and checks its type and shape against the plan. Leaving
    the with-block without error and without every tensor written raises BadStateError."""

    def __init__(self, token: bytes, part: int) -> None:
        _check_int("PartWriter", "part", part, 0, (1 << 32) - 1)
        self._writer = _onnxzip.PartWriter(token, part)
        self.plan = PartsPlan(self._writer.plan)
        self.part = part
        self._planned = {e.name: e for e in self.plan.part(part)}

    def add_tensor(self, name: str, array: Any, *, data_type: Optional[int] = None) -> None:
        """Writes tensor `name`'s payload. InvalidArgumentError for a tensor of another part or
        none, one written already, or a type or shape other than planned."""
        planned = self._planned.get(name)
        where = f"part {self.part}"
        # A raw view (data_type given: packed types, bfloat16 bits) has no shape of its own.
        dims = list(planned.dims) if planned is not None and data_type is not None else None
        data, data_type, shape = _payload_of(where, name, array, data_type, dims)
        if planned is not None and data_type != planned.data_type:
            raise InvalidArgumentError(
                f"{where}: tensor {name!r}: {_onnxzip.data_type_name(data_type)} given, the plan "
                f"has {_onnxzip.data_type_name(planned.data_type)}")
        if planned is not None and tuple(shape) != planned.dims:
            raise InvalidArgumentError(
                f"{where}: tensor {name!r}: shape {tuple(shape)} given, the plan has "
                f"{planned.dims}")
        self._writer.add_tensor(name, data)

    def receipt(self) -> bytes:
        """What finish_parts needs of this part. BadStateError naming tensors not written."""
        return bytes(self._writer.receipt())

    def __enter__(self) -> "PartWriter":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.receipt()  # Raises for a tensor not written.


def finish_parts(token: bytes, model: ModelLike, receipts: Sequence[bytes], key: Any = None, *,
                 threshold: int = 1024) -> None:
    """Writes the archive's tail (`__DIGESTS`, `__SIGNATURE` with `key`, `__MODEL_PROTO`, the
    directory) and moves it into place. `model` refers to the planned tensors
    (PartsPlan.reference); its inline tensors of `threshold` bytes or more are externalized as
    ArchiveWriter.finish does. `receipts`: every part's, in any order. `key`: a PEM private key,
    its path or bytes (needs digests=True in the plan).

    Raises InvalidArgumentError for a receipt missing, repeated, of another archive, or
    disagreeing with the plan, and ArchiveWriter.finish's errors; nothing is published then and
    abort_parts(token) removes the temporary."""
    _check_model("finish_parts", model)
    _check_int("finish_parts", "threshold", threshold, 0, (1 << 64) - 1)
    model_bytes = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    key_pem = None
    if key is not None:
        if isinstance(key, (str, os.PathLike)):
            with open(key, "rb") as f:
                key_pem = f.read()
        else:
            key_pem = bytes(key)
    _onnxzip.finish_parts(token, model_bytes, list(receipts), key_pem, threshold)


def abort_parts(token: bytes) -> None:
    """Removes the temporary the token names: nothing is published. Safe to call twice, or after a
    failed finish."""
    _onnxzip.abort_parts(token)
