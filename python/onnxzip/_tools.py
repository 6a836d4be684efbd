"""Whole-file tools: convert, verify, repack, write_view_model."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import List, NamedTuple, Optional, Tuple, Union


from . import _onnxzip
from ._errors import InvalidArgumentError
from ._common import PathLike, _check_int, _check_options, _is_archive_file, _path

# A PEM key: the path of a PEM file, or its bytes.
KeyLike = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]


def convert(src: PathLike, dst: PathLike, *, alignment: int = 64, threshold: int = 1024,
            dedupe: bool = False, external_data: Union[None, bool, str] = None,
            max_file_size: int = 0, data_alignment: int = 4096, digests: bool = False) -> str:
    """Converts a legacy .onnx model (weights inline or in any external-data layout) to an .onnxz
    archive, or an archive to a legacy model; the direction comes from `src`'s content. Returns
    the input's format, "legacy" or "onnxz". `dst` appears atomically; `src` is never written.

    A `dst` name that contradicts the output's format (an archive converted to "y.onnxz", a
    legacy model to "y.onnx") is an InvalidArgumentError: the direction is the input's, not the
    name's.

    To .onnxz: `alignment`, `threshold`, `dedupe`, `digests` as for save().
    To legacy: weights inline when the model fits protobuf's 2 GiB, else in "<dst name>.data";
    `external_data` True forces external data, a string also names the data file, False forces
    inline (LimitExceededError past 2 GiB); `max_file_size` (bytes, 0: no limit) splits the data
    into FILE, FILE.1...; `data_alignment` aligns each payload's offset in it; tensors under
    `threshold` bytes stay inline.
    """
    _check_options("convert", alignment=alignment, threshold=threshold, dedupe=dedupe)
    _check_int("convert", "max_file_size", max_file_size, 0, (1 << 64) - 1)
    _check_int("convert", "data_alignment", data_alignment, 1, 1 << 30)
    _check_bool("convert", "digests", digests)
    _check_destination_name(_path(src), _path(dst))
    mode = None if external_data is None else bool(external_data)
    data_file_name = external_data if isinstance(external_data, str) else ""
    return _onnxzip.convert(_path(src), _path(dst), alignment, threshold, dedupe, mode,
                            data_file_name, max_file_size, data_alignment, digests)


def _check_bool(function: str, option: str, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{function}: {option} must be a bool, not {type(value).__name__}")


def _key(function: str, option: str,
         key: object) -> Union[bytes, bytearray, memoryview, str, None]:
    """`key` as the extension takes it: PEM bytes, a path as str, or None."""
    if key is None or isinstance(key, (bytes, bytearray, memoryview)):
        return key
    if isinstance(key, (str, os.PathLike)):
        return _path(key)
    raise TypeError(f"{function}: {option} must be a PEM file's path or its bytes, not "
                    f"{type(key).__name__}")


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
    succeed and every CRC-32 is right (no "error" finding).

    The integrity entries (spec §12), each also among the findings when something is wrong:
    digests: "absent" (no `__DIGESTS`), "checked" (every entry's SHA-256 equals its digest),
    "unchecked" (check_crc=False: only the list and the sizes were checked), or "failed" (a
    digest, a size or the list is wrong, or `__DIGESTS` does not parse); digest_mismatches: the
    entries whose bytes, size or listing disagree with `__DIGESTS`.
    signature: "absent" (no `__SIGNATURE`), "unchecked" (no public_key given), "valid" (by
    public_key), "other_key" (signed by another key), or "bad" (it does not verify, does not
    parse, or signs other bytes than `__DIGESTS`); signature_key_id: the key id the signature
    names ("" when none); public_key_id: the id of the public_key given ("" without one).
    """

    findings: Tuple[VerifyFinding, ...]
    digests: str = "absent"
    digest_mismatches: Tuple[str, ...] = ()
    signature: str = "absent"
    signature_key_id: str = ""
    public_key_id: str = ""

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def loadable(self) -> bool:
        return all(f.severity != "error" for f in self.findings)

    def __bool__(self) -> bool:
        return self.ok


def verify(path: PathLike, *, check_crc: bool = True,
           public_key: Optional[KeyLike] = None) -> VerifyReport:
    """Checks the model file at `path` and returns every finding instead of raising: the same
    findings as `onnxzip verify` prints, one a line (the same C++ function makes both).

    An .onnxz archive is checked against the .onnxz specification (ZIP structure, alignment,
    CRC-32 of every entry unless check_crc=False, references, names); a legacy .onnx is read
    with its external data. Both get the payload check of every inline tensor and the ONNX IR
    rules (ir_version, opset imports, single assignment, topological order, unique names...);
    those are "warning" findings, as load() accepts such a model.

    An archive with `__DIGESTS` has every entry's SHA-256 checked against it (with check_crc);
    with `public_key` (an ECDSA P-256 public key: a PEM file's path or its bytes, as `openssl ec
    -pubout` writes it) a valid `__SIGNATURE` by that key is required too, and its absence,
    another key or a bad signature are "error" findings. The report's digests and signature
    fields say the outcome of each (see VerifyReport).

        report = onnxzip.verify("model.onnxz", public_key="signer.pub.pem")
        assert report.signature == "valid" and report.digests == "checked"

    Raises only when the file cannot be read (NotFoundError, IOFailure), and
    InvalidArgumentError for a public_key that is not a PEM P-256 public key."""
    raw, integrity, key_id = _onnxzip.verify(_path(path), check_crc,
                                             _key("verify", "public_key", public_key))
    findings = tuple(VerifyFinding(*f[:5]) for f in raw)
    has_digests, has_signature, signature_key_id, _ = integrity
    # Findings of the integrity checks: those about `__SIGNATURE`, and the one saying none is
    # there, concern the signature; the others the digests.
    signature_errors = [f for f in raw if f[5] and f[0] == "error" and f[1] in ("__SIGNATURE", "")]
    digest_errors = [f for f in raw
                     if f[5] and f[0] == "error" and f[1] not in ("__SIGNATURE", "")]
    mismatches = tuple(dict.fromkeys(f[1] for f in digest_errors if f[1] != "__DIGESTS"))
    if not has_digests:
        digests = "absent"
    elif digest_errors:
        digests = "failed"
    else:
        digests = "checked" if check_crc else "unchecked"
    if not has_signature:
        signature = "absent"
    elif public_key is None:
        signature = "unchecked" if not signature_errors else "bad"
    elif not signature_errors:
        signature = "valid"
    elif signature_key_id and signature_key_id != key_id:
        signature = "other_key"
    else:
        signature = "bad"
    return VerifyReport(findings, digests, mismatches, signature, signature_key_id, key_id)


class SignResult(NamedTuple):
    """What sign() did: entries (how many `__DIGESTS` lists), key_id (the signing key's id, ""
    for digests_only), signature_removed (digests_only removed a `__SIGNATURE` the archive had:
    it would no longer verify), file_size (the archive's size afterwards)."""

    entries: int
    key_id: str
    signature_removed: bool
    file_size: int


def sign(path: PathLike, *, key: Optional[KeyLike] = None, digests_only: bool = False,
         durable: bool = True, wait: float = 5.0) -> SignResult:
    """Signs the archive at `path` in place, as `onnxzip sign` does (spec §12): hashes every
    entry (checking its CRC-32), writes `__DIGESTS` (the SHA-256 of each, as model_signing
    describes a model folder) and, with `key`, `__SIGNATURE` (a Sigstore bundle whose DSSE
    envelope signs `__DIGESTS` with ECDSA P-256), directly before `__MODEL_PROTO`, replacing
    those the archive had. No payload byte moves; crash-safe as replace_model() is.

    `key`: an unencrypted ECDSA P-256 private key, the path of its PEM file or its bytes (as
    `openssl ecparam -name prime256v1 -genkey` writes it). `digests_only=True` writes
    `__DIGESTS` alone (and removes a `__SIGNATURE`, which would no longer verify). One of the two
    is needed.

        onnxzip.sign("model.onnxz", key="signer.pem")
        onnxzip.verify("model.onnxz", public_key="signer.pub.pem").signature   # "valid"

    Raises InvalidArgumentError (no key and not digests_only, both, or a key that is not a PEM
    P-256 private key), CorruptError naming an entry whose CRC-32 is wrong (the archive is then
    unchanged), UnsupportedError for integrity entries another tool put elsewhere (repack
    first), and the errors of replace_model(). `wait`: as for replace_model()."""
    _check_bool("sign", "digests_only", digests_only)
    _check_bool("sign", "durable", durable)
    if (key is None) == (not digests_only):
        raise InvalidArgumentError(
            "sign: give key= (to sign) or digests_only=True (for __DIGESTS alone)"
            if key is None else "sign: key= and digests_only=True exclude each other")
    return SignResult(*_onnxzip.sign(_path(path), _key("sign", "key", key), durable, wait=wait))


class RepackResult(NamedTuple):
    """What repack() did with the input's entries (see help(onnxzip.repack))."""

    kept_entries: List[str]
    unpacked_entries: List[str]
    dropped_entries: List[str]


def repack(src: PathLike, dst: PathLike, *, alignment: int = 64,
           threshold: int = 1024, digests: bool = False) -> RepackResult:
    """Writes a conforming .onnxz at `dst` from a ZIP archive of an ONNX model that another tool
    made (deflated or unaligned entries, data descriptors, the model entry anywhere). Entries
    referred to whole are kept (kept_entries), others resolved per tensor (unpacked_entries),
    unreferenced ones dropped (dropped_entries). With `digests`, the output gets `__DIGESTS`
    (see save()); the input's integrity entries are never carried over (they describe other
    bytes)."""
    _check_options("repack", alignment=alignment, threshold=threshold)
    _check_bool("repack", "digests", digests)
    return RepackResult(*_onnxzip.repack(_path(src), _path(dst), alignment, threshold, digests))


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
