"""onnxzip: the ONNX zip container (.onnxz) for Python.

An .onnxz file is one ZIP archive holding an ONNX model and its weights: every large tensor is a
stored entry whose bytes start on a 64-byte boundary of the file, and the last entry,
``__MODEL_PROTO``, is the ModelProto referring to them as external data. Opening an archive maps it;
tensors are numpy views of the mapping, no byte copied.

    import onnxzip
    onnxzip.save(model, "model.onnxz")            # an onnx.ModelProto, any size (even > 2 GiB)
    model = onnxzip.load("model.onnxz")           # onnx.ModelProto, weights inline
    with onnxzip.open("model.onnxz") as archive:  # zero-copy reading (a path, a URL or bytes)
        for info in archive.tensors:              # every tensor: TensorInfo (spec/names.md)
            weight = archive.get_tensor(info)     # read-only numpy view of the mapped file
    with onnxzip.ArchiveWriter("out.onnxz") as writer:   # exporters: one tensor at a time
        model.graph.initializer.append(writer.add_tensor("w", numpy_array))
        writer.finish(model)
    onnxzip.save_file({"w": array}, "weights.onnxz", metadata={"step": "100"})  # no graph
    tensors = onnxzip.load_file("weights.onnxz", framework="pt")  # safetensors-like
    # get_tensor takes a TensorInfo, a site, a name or an entry name; a name two tensors use (two
    # If branches) is refused with their sites, and load_file(..., key="site") keys by site.

Remote archives: open, load and load_file take an http:// or https:// URL (range requests through
libcurl; headers={...} for private hubs, never shown). Opening and the model cost one request,
get_tensor(name) one more, get_tensors(names) reads tensors together (adjacent ones in one
request, several at once); the arrays own their 64-byte aligned buffers, and transfers release
the GIL.

    with onnxzip.open("https://hub.example/model.onnxz") as archive:
        w = archive.get_tensor("encoder.weight")

Integrity (spec §12): digests=True on the writers adds `__DIGESTS` (SHA-256 of every entry);
sign(path, key=PEM) adds `__SIGNATURE` too; verify(path, public_key=PEM) checks both and says
their status; edits keep them true (key= re-signs). open(..., check_digests=True) checks the model
at open and each tensor the first time it is handed out (CorruptError naming the entry).

Many writers, one archive (ranks of a training job, spec §13): plan_parts, begin_parts, PartWriter,
finish_parts, abort_parts (see onnxzip._parts).

Functions: save, load, open, load_file, save_file, convert, verify, sign, repack,
write_view_model, replace_model, edit_model, edit_model_properties, export_torch, plan_parts,
begin_parts, finish_parts, abort_parts.
Classes: Archive (what open returns), ArchiveWriter, TensorInfo, VerifyReport, VerifyFinding,
SignResult, EditResult, RepackResult, PartsPlan, PartWriter, PlannedEntry.
Errors: Error and its subclasses (see onnxzip.Error), one per code, ChangedError included.

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

from ._archive import Archive, TensorInfo, load, load_file, open
from ._edit import EditResult, edit_model, edit_model_properties, replace_model
from ._errors import (BadStateError, ChangedError, CorruptError, Error, InvalidArgumentError,
                      IOFailure, LimitExceededError, NotFoundError, UnsupportedError)
from ._parts import (PartsPlan, PartWriter, PlannedEntry, abort_parts, begin_parts, finish_parts,
                     plan_parts)
from ._tools import (RepackResult, SignResult, VerifyFinding, VerifyReport, convert, repack, sign,
                     verify, write_view_model)
from ._torch_export import export_torch
from ._onnxzip import S3Options
from ._writer import ArchiveWriter, save, save_file

__all__ = [
    "save", "load", "open", "load_file", "save_file", "convert", "verify", "sign", "repack",
    "write_view_model", "export_torch",
    "plan_parts", "begin_parts", "finish_parts", "abort_parts", "PartsPlan", "PartWriter",
    "PlannedEntry",
    "replace_model", "edit_model", "edit_model_properties", "Archive", "ArchiveWriter", "TensorInfo", "VerifyReport",
    "VerifyFinding", "RepackResult", "EditResult", "SignResult", "S3Options",
    "Error", "CorruptError", "UnsupportedError", "NotFoundError", "IOFailure",
    "InvalidArgumentError", "LimitExceededError", "BadStateError", "ChangedError",
]
__version__ = "0.1.0"

# Tracebacks and repr() show the public names (onnxzip.Archive), not the private modules.
for _public in (Archive, TensorInfo, EditResult, RepackResult, SignResult, VerifyFinding,
                VerifyReport, ArchiveWriter, PartsPlan, PartWriter, PlannedEntry):
    _public.__module__ = "onnxzip"
del _public
