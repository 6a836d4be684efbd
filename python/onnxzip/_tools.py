"""Whole-file tools: convert, verify, repack, write_view_model."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import List, NamedTuple, Optional, Tuple, Union


from . import _onnxzip
from ._errors import InvalidArgumentError
from ._common import PathLike, _check_int, _check_options, _is_archive_file, _path

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
class VerifyFinding:
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

    findings: Tuple[VerifyFinding, ...]

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
    return VerifyReport(tuple(VerifyFinding(*f) for f in _onnxzip.verify(_path(path), check_crc)))


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
