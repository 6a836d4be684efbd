"""Whole-file tools: convert, verify, repack, write_view_model."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping, Optional, Tuple, Union


from . import _onnxzip
from ._errors import InvalidArgumentError
from ._common import (KeyLike, PathLike, Source, _check_int, _check_options, _check_output_name,
                      _header_lines, _key, _path, _s3_options, _source_kind)


def convert(src: PathLike, dst: PathLike, *, alignment: int = 64, threshold: int = 1024,
            dedupe: bool = False, external_data: Union[None, bool, str] = None,
            max_file_size: int = 0, data_alignment: int = 4096, digests: bool = False,
            externalize_attributes: bool = False, externalize_sparse: bool = False,
            headers: Optional[Mapping[str, str]] = None,
            s3: Optional[_onnxzip.S3Options] = None) -> str:
    """Converts a legacy .onnx model (weights inline or in any external-data layout) to an .onnxz
    archive, or an archive to a legacy model; the direction comes from `src`'s content. Returns
    the input's format, "legacy" or "onnxz". `dst` appears atomically; `src` is never written.
    `src` may be an http(s) URL (`headers` go with its requests): an archive is converted while
    it downloads, a legacy model downloaded first.

    A `dst` name that contradicts the output's format (an archive converted to "y.onnxz", a
    legacy model to "y.onnx") is an InvalidArgumentError: the direction is the input's, not the
    name's.

    To .onnxz: `alignment`, `threshold`, `dedupe`, `digests` as for save().
    To legacy: weights inline when the model fits protobuf's 2 GiB, else in "<dst name>.data";
    `external_data` True forces external data, a string also names the data file, False forces
    inline (LimitExceededError past 2 GiB); `max_file_size` (bytes, 0: no limit) splits the data
    into FILE, FILE.1...; `data_alignment` aligns each payload's offset in it; tensors under
    `threshold` bytes stay inline. Only the graphs' initializers (the main graph's and its
    subgraphs') go to the data file by default: tensors in attributes (a Constant's value, which
    is where some models keep every weight, inside If branches) stay inline because ONNX
    Runtime's and onnx's checkers refuse them as external data, unless `externalize_attributes`;
    sparse tensors' values and indices likewise unless `externalize_sparse`.
    """
    options = _convert_options(alignment=alignment, threshold=threshold, dedupe=dedupe,
                               external_data=external_data, max_file_size=max_file_size,
                               data_alignment=data_alignment, digests=digests,
                               externalize_attributes=externalize_attributes,
                               externalize_sparse=externalize_sparse)
    if s3 is not None:
        if not isinstance(s3, _onnxzip.S3Options):
            raise TypeError(f"convert: s3 must be an onnxzip.S3Options, not {type(s3).__name__}")
        options.s3 = s3
    kind = _source_kind(src)
    if kind == "buffer":
        raise TypeError("convert: src is a path or an http(s) URL, not a buffer")
    if kind != "url" and headers is not None:
        raise InvalidArgumentError("convert: headers apply to http(s) URLs only")
    source = _path(src) if kind == "path" else src
    shown = _path(src) if kind == "path" else _onnxzip.display_url(src)
    target = _path(dst)

    def check_output(input_format: str) -> None:
        # The direction comes from the input's content, not from the output's name.
        if input_format == "onnxz":
            _check_output_name("convert", target, False,
                               f" (from {shown}, an .onnxz archive; to rewrite an archive, "
                               "use repack)")
        else:
            _check_output_name("convert", target, True, f" (from {shown}, a legacy ONNX model)")

    return _onnxzip.convert(source, kind, target, options, _header_lines("convert", headers),
                            check_output)


def _convert_options(*, alignment: int, threshold: int, dedupe: bool,
                     external_data: Union[None, bool, str], max_file_size: int,
                     data_alignment: int, digests: bool, externalize_attributes: bool,
                     externalize_sparse: bool) -> "_onnxzip.ConvertOptions":
    """convert()'s keywords, checked, as the extension module's ConvertOptions."""
    _check_options("convert", alignment=alignment, threshold=threshold, dedupe=dedupe)
    _check_int("convert", "max_file_size", max_file_size, 0, (1 << 64) - 1)
    _check_int("convert", "data_alignment", data_alignment, 1, 1 << 30)
    for option, value in (("digests", digests), ("externalize_attributes", externalize_attributes),
                          ("externalize_sparse", externalize_sparse)):
        _check_bool("convert", option, value)
    options = _onnxzip.ConvertOptions()
    options.alignment, options.threshold, options.dedupe = alignment, threshold, dedupe
    options.external_data = None if external_data is None else bool(external_data)
    options.data_file_name = external_data if isinstance(external_data, str) else ""
    options.max_file_size, options.data_alignment = max_file_size, data_alignment
    options.digests = digests
    options.externalize_attributes = externalize_attributes
    options.externalize_sparse = externalize_sparse
    return options


def _check_bool(function: str, option: str, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{function}: {option} must be a bool, not {type(value).__name__}")


@dataclass(frozen=True)
class VerifyFinding:
    """One problem verify() found (spec/names.md, "Findings"). severity: "error" (load() refuses
    the archive for it, or a CRC-32, a digest or the signature is wrong) or "warning" (a
    deviation from the spec that load() accepts); kind: what breaks ("zip", "layout",
    "reference", "model", "ir", "crc", "digest", "signature"); entry and tensor: what it concerns
    ("" when nothing in particular); offset: the byte offset in the file; message: the line
    `onnxzip verify` prints, its place first."""

    severity: str
    kind: str
    entry: str
    tensor: str
    offset: int
    message: str


@dataclass(frozen=True)
class VerifyReport:
    """What verify() found. ok: conforms to the spec (no finding at all); loadable: load() would
    succeed and every CRC-32 is right (no "error" finding).

    The integrity entries (spec §12), each also among the findings when something is wrong:
    digests: "absent" (no `__DIGESTS`), "verified" (every entry's SHA-256 equals its digest),
    "unchecked" (check_crc=False: only the list and the sizes were checked), or "failed" (a
    digest, a size or the list is wrong, or `__DIGESTS` does not parse: the "digest" findings
    name the entries). signature: "absent" (no `__SIGNATURE`), "unchecked" (no public_key
    given), "verified" (by public_key), "other_key" (signed by another key), or "failed" (it
    does not verify, does not parse, or signs other bytes than `__DIGESTS`);
    signature_key_id: the key id the signature names ("" when none). checked: what was checked,
    in words ("structure, CRC-32s, digests verified; signature not checked: give public_key=").
    """

    findings: Tuple[VerifyFinding, ...]
    digests: str = "absent"
    signature: str = "absent"
    signature_key_id: str = ""
    checked: str = ""

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def loadable(self) -> bool:
        return all(f.severity != "error" for f in self.findings)

    def __bool__(self) -> bool:
        return self.ok


def verify(path: Source, *, check_crc: bool = True, public_key: Optional[KeyLike] = None,
           headers: Optional[Mapping[str, str]] = None,
           s3: Optional[_onnxzip.S3Options] = None) -> VerifyReport:
    """Checks the model file at `path` and returns every finding instead of raising: the same
    findings as `onnxzip verify` prints, one a line (the same C++ function makes both).

    `path` may also be an http(s) URL (downloaded first, into an unnamed temporary file, with
    `headers`; an s3://bucket/key with `s3`'s settings as open() takes them), or the model's
    bytes (bytes, bytearray, memoryview, any buffer: read in place, and never shown in a message,
    which names it "<memory>"; a legacy model's external data then has no folder, and each tensor
    referring to some is an "error" finding).

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
        assert report.signature == "verified" and report.digests == "verified"

    Raises only when the file cannot be read (NotFoundError, IOFailure), and
    InvalidArgumentError for a public_key that is not a PEM P-256 public key."""
    _check_bool("verify", "check_crc", check_crc)
    kind = _source_kind(path)
    
    if kind != "url" and headers is not None:
        raise InvalidArgumentError("verify: headers apply to http(s) URLs only")
    raw, digests, signature, signature_key_id, checked = _onnxzip.verify(
        _path(path) if kind == "path" else path, kind, check_crc,
        _key("verify", "public_key", public_key), _header_lines("verify", headers),
        _s3_options("verify", s3))
    findings = tuple(VerifyFinding(*f) for f in raw)
    return VerifyReport(findings, digests, signature, signature_key_id, checked)


@dataclass(frozen=True)
class SignResult:
    """What sign() did: entries (how many `__DIGESTS` lists), key_id (the signing key's id, ""
    for digests_only), signature_removed (digests_only removed a `__SIGNATURE` the archive had:
    it would no longer verify), file_size (the archive's size afterwards). In a bucket
    (s3://bucket/key): entries_read (the object had no `__DIGESTS`, so every entry was read to
    be hashed; with one, its statement is signed as it stands, only the model hashed again)."""

    entries: int
    key_id: str
    signature_removed: bool
    file_size: int
    entries_read: bool = False


def sign(path: PathLike, *, key: Optional[KeyLike] = None, digests_only: bool = False,
         durable: bool = True, wait: float = 5.0,
         s3: Optional[_onnxzip.S3Options] = None) -> SignResult:
    """Signs the archive at `path` in place, as `onnxzip sign` does (spec §12): hashes every
    entry (checking its CRC-32), writes `__DIGESTS` (the SHA-256 of each, as model_signing
    describes a model folder) and, with `key`, `__SIGNATURE` (a Sigstore bundle whose DSSE
    envelope signs `__DIGESTS` with ECDSA P-256), directly before `__MODEL_PROTO`, replacing
    those the archive had. No payload byte moves; crash-safe as replace_model() is.

    `key`: an unencrypted ECDSA P-256 private key, the path of its PEM file or its bytes (as
    `openssl ecparam -name prime256v1 -genkey` writes it). `digests_only=True` writes
    `__DIGESTS` alone (and removes a `__SIGNATURE`, which would no longer verify). One of the two
    is needed.

    `path` may be "s3://bucket/key": the new tail is uploaded after the bytes before it, copied
    inside the bucket, as replace_model() does there (`s3`: as for replace_model()). An object with `__DIGESTS` gets that
    statement signed as it stands (only the model is hashed again); one without has every entry
    read to be hashed (SignResult.entries_read).

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
    return SignResult(*_onnxzip.sign(_path(path), _key("sign", "key", key), durable, wait=wait,
                                     s3=_s3_options("sign", s3)))


@dataclass(frozen=True)
class RepackResult:
    """What repack() did with the input's entries (see help(onnxzip.repack))."""

    kept_entries: Tuple[str, ...]
    unpacked_entries: Tuple[str, ...]
    dropped_entries: Tuple[str, ...]


def repack(src: PathLike, dst: PathLike, *, alignment: int = 64, threshold: int = 1024,
           digests: bool = False, headers: Optional[Mapping[str, str]] = None,
           s3: Optional[_onnxzip.S3Options] = None) -> RepackResult:
    """Writes a conforming .onnxz at `dst` from a ZIP archive of an ONNX model that another tool
    made (deflated or unaligned entries, data descriptors, the model entry anywhere). Entries
    referred to whole are kept (kept_entries), others resolved per tensor (unpacked_entries),
    unreferenced ones dropped (dropped_entries). With `digests`, the output gets `__DIGESTS`
    (see save()); the input's integrity entries are never carried over (they describe other
    bytes). `src` may be an http(s) URL, downloaded first (with `headers`). `dst` may be
    "s3://bucket/key", uploaded as it is written, with `s3` as save() takes it."""
    _check_options("repack", alignment=alignment, threshold=threshold)
    _check_output_name("repack", _path(dst), True)
    _check_bool("repack", "digests", digests)
    kind = _source_kind(src)
    if kind == "buffer":
        raise TypeError("repack: src is a path or an http(s) URL, not a buffer")
    if kind != "url" and headers is not None:
        raise InvalidArgumentError("repack: headers apply to http(s) URLs only")
    
    kept, unpacked, dropped = _onnxzip.repack(_path(src) if kind == "path" else src, kind,
                                              _path(dst), alignment, threshold, digests,
                                              _header_lines("repack", headers),
                                              _onnxzip.S3Options() if s3 is None else s3)
    return RepackResult(tuple(kept), tuple(unpacked), tuple(dropped))


def write_view_model(archive_path: PathLike, view_path: Optional[PathLike] = None) -> str:
    """Writes a small legacy .onnx next to the archive whose initializers point into the archive
    file itself (location, offset, length), so runtimes that know only ONNX external data load it
    in place. Default path: "<archive stem>.view.onnx" in the archive's folder. Returns it."""
    archive_path = _path(archive_path)
    if view_path is None:
        stem, _ = os.path.splitext(archive_path)
        view_path = stem + ".view.onnx"
    _check_output_name("write_view_model", _path(view_path), False)
    _onnxzip.write_view_model(archive_path, _path(view_path))
    return _path(view_path)
