"""Digests and signatures from Python (spec §12): sign(), verify()'s integrity report, the
digests option of the writers, edits that re-sign, and the result checked with tools independent
of the library (unzip, sha256sum, python3-cryptography over the DSSE PAE)."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import struct
import subprocess
import zipfile
import zlib

import numpy as np
import onnx
import pytest

import onnxzip
from conftest import make_model


def _openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """Two P-256 key pairs, as `openssl ecparam -genkey` and `openssl ec -pubout` write them."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl")
    folder = tmp_path_factory.mktemp("keys")
    pairs = {}
    for name in ("a", "b"):
        private, public = folder / f"{name}.pem", folder / f"{name}.pub.pem"
        _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(private))
        _openssl("ec", "-in", str(private), "-pubout", "-out", str(public))
        pairs[name] = (private, public)
    return pairs


def _names(path):
    with zipfile.ZipFile(path) as z:
        return [info.filename for info in z.infolist()]


def test_a_signed_archive_verifies_with_its_public_key(small_archive, keys):
    path, _, _ = small_archive
    private, public = keys["a"]
    result = onnxzip.sign(path, key=private)
    assert result.entries == 3  # Two payloads and the model.
    assert result.key_id == hashlib.sha256(public.read_bytes()).hexdigest()
    assert _names(path)[-3:] == ["__DIGESTS", "__SIGNATURE", "__MODEL_PROTO"]
    report = onnxzip.verify(path, public_key=public)
    assert report.ok, report.findings
    assert (report.digests, report.signature) == ("verified", "verified")
    assert report.signature_key_id == result.key_id
    # The C++ report's words, as `onnxzip verify` prints them.
    assert report.checked.startswith("ZIP structure")
    assert f"digests verified; signature verified (key {result.key_id})" in report.checked
    # PEM bytes do as well as a path, and the archive still loads.
    assert onnxzip.verify(path, public_key=public.read_bytes()).signature == "verified"
    assert onnxzip.load(path).graph.initializer[0].name == "encoder.weight"


def test_another_key_fails_naming_why(small_archive, keys):
    path, _, _ = small_archive
    onnxzip.sign(path, key=keys["a"][0].read_bytes())
    report = onnxzip.verify(path, public_key=keys["b"][1])
    assert not report.loadable
    assert report.signature == "other_key"
    assert report.digests == "verified"
    key_a = hashlib.sha256(keys["a"][1].read_bytes()).hexdigest()
    assert report.signature_key_id == key_a
    [finding] = report.findings
    assert finding.entry == "__SIGNATURE"
    assert "another key" in finding.message and key_a in finding.message


def test_without_a_signature_the_public_key_is_an_error_and_digests_alone_check(small_archive,
                                                                                keys):
    path, _, _ = small_archive
    assert onnxzip.verify(path).digests == "absent"
    result = onnxzip.sign(path, digests_only=True)
    assert (result.key_id, result.signature_removed) == ("", False)
    report = onnxzip.verify(path)
    assert report.ok and (report.digests, report.signature) == ("verified", "absent")
    assert onnxzip.verify(path, check_crc=False).digests == "unchecked"
    required = onnxzip.verify(path, public_key=keys["a"][1])
    assert required.signature == "absent" and not required.loadable
    assert "no __SIGNATURE entry" in required.findings[0].message
    # digests_only over a signed archive removes the signature, which would no longer verify.
    onnxzip.sign(path, key=keys["a"][0])
    assert onnxzip.sign(path, digests_only=True).signature_removed
    assert "__SIGNATURE" not in _names(path)


def test_sign_refuses_no_key_both_and_a_bad_key(small_archive, keys, tmp_path):
    path, _, _ = small_archive
    with pytest.raises(onnxzip.InvalidArgumentError, match="digests_only=True"):
        onnxzip.sign(path)
    with pytest.raises(onnxzip.InvalidArgumentError, match="exclude each other"):
        onnxzip.sign(path, key=keys["a"][0], digests_only=True)
    with pytest.raises(onnxzip.InvalidArgumentError, match="<key bytes>"):
        onnxzip.sign(path, key=b"not a key")
    with pytest.raises(onnxzip.NotFoundError):
        onnxzip.sign(path, key=tmp_path / "missing.pem")
    with pytest.raises(TypeError, match="PEM"):
        onnxzip.sign(path, key=42)
    assert "__DIGESTS" not in _names(path)  # Nothing was written.


def _change_payload_byte_fixing_crc(path, entry_name):
    """Flips one byte of `entry_name`'s data and writes its CRC-32 into both headers, so that
    only the digest can tell."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(entry_name)
    data = bytearray(path.read_bytes())
    name_length, extra_length = struct.unpack_from("<HH", data, info.header_offset + 26)
    start = info.header_offset + 30 + name_length + extra_length
    data[start + 7] ^= 0x40
    crc = zlib.crc32(data[start:start + info.file_size])
    struct.pack_into("<I", data, info.header_offset + 14, crc)
    at = 0
    while True:
        at = data.find(b"PK\x01\x02", at)
        assert at >= 0
        length = struct.unpack_from("<H", data, at + 28)[0]
        if bytes(data[at + 46:at + 46 + length]) == entry_name.encode():
            struct.pack_into("<I", data, at + 16, crc)
            break
        at += 4
    path.write_bytes(bytes(data))


def test_a_payload_byte_changed_with_its_crc_fixed_fails_naming_the_entry(small_archive, keys):
    path, _, _ = small_archive
    onnxzip.sign(path, key=keys["a"][0])
    _change_payload_byte_fixing_crc(path, "encoder_weight")
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None  # Every CRC-32 agrees.
    report = onnxzip.verify(path, public_key=keys["a"][1])
    assert report.digests == "failed"
    assert report.signature == "verified"  # It signs __DIGESTS, which is intact.
    [finding] = report.findings
    assert finding.entry == "encoder_weight" and "its SHA-256 is" in finding.message
    assert finding.kind == "digest"


def test_writers_take_digests(tmp_path, small_archive):
    _, arrays, model = small_archive
    saved = tmp_path / "saved.onnxz"
    onnxzip.save(model, saved, digests=True)
    assert "__DIGESTS" in _names(saved)
    assert onnxzip.verify(saved).digests == "verified"

    written = tmp_path / "written.onnxz"
    with onnxzip.ArchiveWriter(written, digests=True) as writer:
        tensor = writer.add_tensor("w", np.arange(1000, dtype=np.float32))
        writer.finish(make_model([tensor]))
    assert onnxzip.verify(written).digests == "verified"

    legacy = tmp_path / "model.onnx"
    onnx.save(model, str(legacy))
    converted = tmp_path / "converted.onnxz"
    onnxzip.convert(legacy, converted, digests=True)
    assert onnxzip.verify(converted).digests == "verified"

    repacked = tmp_path / "repacked.onnxz"
    onnxzip.repack(saved, repacked, digests=True)
    assert onnxzip.verify(repacked).digests == "verified"
    without = tmp_path / "without.onnxz"
    onnxzip.repack(saved, without)
    assert "__DIGESTS" not in _names(without)

    weights = tmp_path / "weights.onnxz"
    onnxzip.save_file(arrays, weights, digests=True)
    assert onnxzip.verify(weights).digests == "verified"
    with pytest.raises(TypeError, match="digests must be a bool"):
        onnxzip.save(model, tmp_path / "x.onnxz", digests="yes")


def test_export_torch_takes_digests(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "linear.onnxz"
    try:
        onnxzip.export_torch(torch.nn.Linear(300, 4), (torch.zeros(1, 300),), path, digests=True)
    except Exception as e:  # torch.onnx.export needs packages this machine may lack.
        if isinstance(e, onnxzip.Error):
            raise
        pytest.skip(f"torch.onnx.export: {e}")
    assert onnxzip.verify(path).digests == "verified"


def test_edits_re_sign_with_a_key_and_remove_the_signature_without(small_archive, keys):
    path, _, _ = small_archive
    onnxzip.sign(path, key=keys["a"][0])
    result = onnxzip.edit_model(path, lambda m: setattr(m, "doc_string", "one"),
                                key=keys["a"][0])
    assert result.digests_updated and result.signed_again and not result.signature_removed
    report = onnxzip.verify(path, public_key=keys["a"][1])
    assert report.ok, report.findings
    assert (report.digests, report.signature) == ("verified", "verified")

    result = onnxzip.edit_model_properties(path, lambda m: setattr(m, "producer_name", "two"))
    assert result.digests_updated and result.signature_removed and not result.signed_again
    report = onnxzip.verify(path)
    assert report.ok and (report.digests, report.signature) == ("verified", "absent")

    with onnxzip.open(path) as archive:
        model = archive.model
    model.doc_string = "three"
    result = onnxzip.replace_model(path, model, key=keys["b"][0].read_bytes())
    assert result.signed_again
    assert onnxzip.verify(path, public_key=keys["b"][1]).signature == "verified"
    assert onnxzip.load(path).doc_string == "three"


def test_sha256sum_and_cryptography_agree_with_the_entries(small_archive, keys, tmp_path):
    if shutil.which("unzip") is None or shutil.which("sha256sum") is None:
        pytest.skip("no unzip or sha256sum")
    serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    path, _, _ = small_archive
    private, public = keys["a"]
    onnxzip.sign(path, key=private)
    out = tmp_path / "out"
    subprocess.run(["unzip", "-q", str(path), "-d", str(out)], check=True)
    statement = json.loads((out / "__DIGESTS").read_bytes())
    resources = statement["predicate"]["resources"]
    assert sorted(r["name"] for r in resources) == sorted(
        p.name for p in out.iterdir() if p.name not in ("__DIGESTS", "__SIGNATURE"))
    for resource in resources:
        summed = subprocess.run(["sha256sum", str(out / resource["name"])], check=True,
                                capture_output=True, text=True).stdout.split()[0]
        assert summed == resource["digest"], resource["name"]
    bundle = json.loads((out / "__SIGNATURE").read_bytes())
    envelope = bundle["dsseEnvelope"]
    payload = base64.b64decode(envelope["payload"])
    assert payload == (out / "__DIGESTS").read_bytes()
    payload_type = envelope["payloadType"].encode()
    pae = b"DSSEv1 %d %s %d %s" % (len(payload_type), payload_type, len(payload), payload)
    key = serialization.load_pem_public_key(public.read_bytes())
    signature = base64.b64decode(envelope["signatures"][0]["sig"])
    key.verify(signature, pae, ec.ECDSA(hashes.SHA256()))  # Raises when it does not verify.
    other = serialization.load_pem_public_key(keys["b"][1].read_bytes())
    from cryptography.exceptions import InvalidSignature
    with pytest.raises(InvalidSignature):
        other.verify(signature, pae, ec.ECDSA(hashes.SHA256()))


def test_open_with_check_digests_catches_a_changed_tensor_at_its_first_get(small_archive, keys):
    path, arrays, _ = small_archive
    with pytest.raises(onnxzip.CorruptError, match="has no __DIGESTS entry"):
        onnxzip.open(path, check_digests=True)
    onnxzip.sign(path, key=keys["a"][0])
    with onnxzip.open(path, check_digests=True) as archive:
        weight = archive.get_tensor("encoder.weight")
        np.testing.assert_array_equal(weight, arrays["encoder.weight"])
        assert not weight.flags.writeable and weight.ctypes.data % 64 == 0
        assert archive.tensor_info("encoder.weight").size == arrays["encoder.weight"].nbytes
    _change_payload_byte_fixing_crc(path, "encoder_weight")
    for access in ("map", "read"):
        with onnxzip.open(path, check_digests=True, access=access) as archive:
            np.testing.assert_array_equal(archive.get_tensor("encoder.bias"),
                                          arrays["encoder.bias"])
            np.testing.assert_array_equal(archive.get_tensor("tiny"), arrays["tiny"])
            for _ in range(2):
                with pytest.raises(onnxzip.CorruptError,
                                   match="entry 'encoder_weight': its SHA-256 is") as caught:
                    archive.get_tensor("encoder.weight")
                assert str(path) in str(caught.value)
            with pytest.raises(onnxzip.CorruptError, match="encoder_weight"):
                archive.get_tensors(["encoder.bias", "encoder.weight"])
    with onnxzip.open(path) as archive:  # Unchecked, the changed bytes come out.
        assert not np.array_equal(archive.get_tensor("encoder.weight"), arrays["encoder.weight"])
    with pytest.raises(onnxzip.CorruptError, match="entry 'encoder_weight'"):
        onnxzip.load(path, check_digests=True)
    # A public key is checked at open (and implies check_digests).
    with pytest.raises(onnxzip.CorruptError, match="signed by another key"):
        onnxzip.open(path, public_key=keys["b"][1])
    with onnxzip.open(path, public_key=keys["a"][1]) as archive:
        with pytest.raises(onnxzip.CorruptError, match="encoder_weight"):
            archive.get_tensor("encoder.weight")


def test_threads_getting_the_same_checked_tensor_agree(small_archive):
    import concurrent.futures

    path, arrays, _ = small_archive
    onnxzip.sign(path, digests_only=True)
    with onnxzip.open(path, check_digests=True) as archive:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda _: archive.get_tensor("encoder.weight"), range(16)))
    for result in results:
        np.testing.assert_array_equal(result, arrays["encoder.weight"])
