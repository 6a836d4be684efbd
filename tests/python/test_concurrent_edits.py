"""Readers and an editor at once (issue 32): one editor loops over in-place edits of a ~50 MB
archive -- metadata, the model's size (a ~2 MB and a ~7 MB model in turn) and signed edits --
while CLI (`info`, `verify`, `--no-mmap info --json`), Python (fresh `open(p).model`, and one
long-lived archive reading weights and `.model`) and node (`openArchive`) readers loop beside it.

Every reader result must be an archive the editor wrote (its model compared with the models the
editor wrote) or the retryable 'changed' error: never a signal, never a false "corrupt", never a
model that is neither old nor new. And the readers' shared locks must never make an edit fail.

Needs the built CLI (build/src/cli/onnxzip, or $ONNXZIP_CLI) and the JavaScript package built
(js/dist, `npm run build`); skipped without them. Runs ONNXZIP_STRESS_SECONDS (default 20) of
edits; the outcome counts per reader kind are printed (pytest -s shows them).
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper
import pytest

from conftest import make_model

import onnxzip

REPO = Path(__file__).resolve().parents[2]
CLI = Path(os.environ.get("ONNXZIP_CLI", REPO / "build" / "src" / "cli" / "onnxzip"))
NODE_ENTRY = REPO / "js" / "dist" / "node.js"
SECONDS = float(os.environ.get("ONNXZIP_STRESS_SECONDS", "20"))

WEIGHTS = 12  # Of 1 Mi float32 each: 48 MiB of payloads.
MiB = 1 << 20

pytestmark = pytest.mark.stress


def weight(i: int) -> np.ndarray:
    return (np.arange(MiB, dtype=np.float32) * (i + 1)).reshape(1024, 1024)


def signature(producer, doc, metadata) -> str:
    """What identifies one of the editor's models, from any face's view of it."""
    doc_hash = hashlib.sha256((doc or "").encode()).hexdigest()
    return json.dumps([producer or "", doc_hash, [[k or "", v or ""] for k, v in metadata]])


def signature_of_model(model: onnx.ModelProto) -> str:
    return signature(model.producer_name, model.doc_string,
                     [(e.key, e.value) for e in model.metadata_props])


# --- Readers: each a process that loops until its deadline (time.monotonic(), CLOCK_MONOTONIC as
# node's process.hrtime) and prints one JSON line per result: its start, its end, and the
# outcome -- "ok" with the model's signature (or the raw model's SHA-256 for node, or nothing for
# the CLI's text commands), "changed", or "other" with the message.

PYTHON_COMMON = r"""
import hashlib, json, sys, time
import numpy as np
import onnxzip
path, deadline = sys.argv[1], float(sys.argv[2])
def signature(producer, doc, metadata):
    doc_hash = hashlib.sha256((doc or "").encode()).hexdigest()
    return json.dumps([producer or "", doc_hash, [[k or "", v or ""] for k, v in metadata]])
def signature_of_model(m):
    return signature(m.producer_name, m.doc_string, [(e.key, e.value) for e in m.metadata_props])
def emit(start, outcome, detail=""):
    print(json.dumps({"start": start, "end": time.monotonic(), "outcome": outcome,
                      "detail": detail}), flush=True)
def classify(start, e):
    changed = getattr(onnxzip, "ChangedError", None)
    if changed is not None and isinstance(e, changed):
        emit(start, "changed", str(e))
    else:
        emit(start, "other", f"{type(e).__name__}: {e}")
"""

PYTHON_FRESH = PYTHON_COMMON + r"""
while time.monotonic() < deadline:
    start = time.monotonic()
    try:
        with onnxzip.open(path) as archive:
            emit(start, "ok", signature_of_model(archive.model))
    except Exception as e:
        classify(start, e)
"""

PYTHON_LONG_LIVED = PYTHON_COMMON + r"""
archive = None
while archive is None and time.monotonic() < deadline:
    # Opened while the editor edits: a ChangedError says to open it again.
    start = time.monotonic()
    try:
        archive = onnxzip.open(path)
    except Exception as e:
        classify(start, e)
if archive is None:
    sys.exit(0)
i = 0
while time.monotonic() < deadline:
    start = time.monotonic()
    try:
        name = f"w{i % 12}"
        expected = (np.arange(1 << 20, dtype=np.float32) * (i % 12 + 1)).reshape(1024, 1024)
        if not np.array_equal(archive.get_tensor(name), expected):
            emit(start, "other", f"weight {name} differs from the one written")
        else:
            emit(start, "ok", signature_of_model(archive.model))
    except Exception as e:
        classify(start, e)
    i += 1
archive.close()
"""

CLI_LOOP = r"""
import json, re, subprocess, sys, time
cli, path, deadline, args = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
command = [cli] + [a.replace("{path}", path) for a in args]
while time.monotonic() < deadline:
    start = time.monotonic()
    run = subprocess.run(command, capture_output=True, text=True, errors="replace")
    if run.returncode < 0:
        outcome, detail = "signal", f"signal {-run.returncode}: {run.stderr.strip()}"
    elif run.returncode == 0:
        outcome, detail = "ok", ""
        if "--json" in args:
            model = json.loads(run.stdout)["model"]
            metadata = [(e.get("key"), e.get("value")) for e in model["metadata_props"]]
            import hashlib
            doc_hash = hashlib.sha256((model.get("doc_string") or "").encode()).hexdigest()
            detail = json.dumps([model.get("producer_name") or "", doc_hash,
                                 [[k or "", v or ""] for k, v in metadata]])
    elif re.search(r"the file changed|it is being edited", run.stderr + run.stdout):
        # The kChanged messages; verify prints them as findings, on stdout.
        outcome, detail = "changed", (run.stderr + run.stdout).strip()
    else:
        outcome, detail = "other", f"exit {run.returncode}: {(run.stderr + run.stdout).strip()[:2000]}"
    print(json.dumps({"start": start, "end": time.monotonic(), "outcome": outcome,
                      "detail": detail}), flush=True)
"""

NODE_LOOP = r"""
const { createHash } = await import('node:crypto');
const { openArchive, OnnxzipError } = await import(process.argv[1]);
const path = process.argv[2];
const deadline = Number(process.argv[3]);
const now = () => Number(process.hrtime.bigint()) / 1e9;
while (now() < deadline) {
  const start = now();
  let outcome = 'ok';
  let detail = '';
  try {
    const archive = await openArchive(path);
    detail = createHash('sha256').update(archive.modelBytes).digest('hex');
    await archive.close();
  } catch (e) {
    if (e instanceof OnnxzipError && e.code === 'changed') {
      outcome = 'changed';
    } else {
      outcome = 'other';
    }
    detail = String(e && e.message);
  }
  console.log(JSON.stringify({ start, end: now(), outcome, detail }));
}
"""


class Editor:
    """Runs the edits through the CLI and records every model the file held, in order."""

    def __init__(self, path: Path, key: Path, small: Path, big: Path):
        self.path, self.key, self.small, self.big = path, key, small, big
        self.history = []  # (monotonic time the model was in place by, signature, raw SHA-256)
        self.counts = collections.Counter()
        self.failures = []
        self.record(time.monotonic())

    def record(self, done: float) -> None:
        with zipfile.ZipFile(self.path) as z:
            raw = z.read("__MODEL_PROTO")
        model = onnx.load_from_string(raw)
        self.history.append((done, signature_of_model(model), hashlib.sha256(raw).hexdigest()))

    def edit(self, kind: str, args) -> None:
        run = subprocess.run([str(CLI), "edit", str(self.path), *args], capture_output=True,
                             text=True)
        done = time.monotonic()
        if run.returncode != 0:
            self.failures.append(f"{kind}: exit {run.returncode}: {run.stderr.strip()}")
            return
        self.counts[kind] += 1
        self.record(done)

    def round(self, i: int) -> None:
        self.edit("metadata", ["--set-metadata", f"round=m{i}"])
        self.edit("model size", ["--model", str(self.big if i % 2 == 0 else self.small)])
        self.edit("signed", ["--key", str(self.key), "--set-metadata", f"round=s{i}"])


def reader_processes(path: Path, deadline: float):
    python = [sys.executable, "-c"]
    clis = {
        "cli info": ["info", "{path}"],
        "cli verify": ["verify", "{path}"],
        "cli --no-mmap info --json": ["--no-mmap", "info", "--json", "{path}"],
    }
    commands = {name: python + [CLI_LOOP, str(CLI), str(path), str(deadline), *args]
                for name, args in clis.items()}
    commands["python open().model"] = python + [PYTHON_FRESH, str(path), str(deadline)]
    commands["python long-lived archive"] = python + [PYTHON_LONG_LIVED, str(path), str(deadline)]
    commands["node openArchive"] = ["node", "--input-type=module", "-e", NODE_LOOP,
                                    NODE_ENTRY.as_uri(), str(path), str(deadline)]
    return commands


def judge(kind: str, result: dict, history) -> str:
    """old (the model in place when the read began), new (one written during the read), or the
    result's own outcome when it is not a model."""
    if result["outcome"] != "ok":
        return result["outcome"]
    if not result["detail"]:
        return "old/new"  # The CLI's text commands: exit 0, the archive read whole.
    which = 2 if kind.startswith("node") else 1
    if kind == "python long-lived archive":
        # Its model is the one it opened (checked then), whichever of the editor's that was.
        if result["detail"] == history[0][which]:
            return "old"
        return "new" if result["detail"] in [h[which] for h in history] else "neither old nor new"
    in_place = [h for h in history if h[0] <= result["start"]]
    old = in_place[-1][which] if in_place else history[0][which]
    if result["detail"] == old:
        return "old"
    # Those noted during the read, and the next one: an edit lands before the editor notes the
    # time it ended.
    during = [h[which] for h in history if result["start"] < h[0] <= result["end"]]
    during += [h[which] for h in history if h[0] > result["end"]][:1]
    return "new" if result["detail"] in during else "neither old nor new"


@pytest.mark.skipif(not CLI.exists(), reason=f"needs the built CLI at {CLI} ($ONNXZIP_CLI)")
@pytest.mark.skipif(not NODE_ENTRY.exists() or shutil.which("node") is None,
                    reason="needs node and the built JavaScript package (js/dist)")
def test_readers_beside_an_editor_get_the_old_or_new_archive_or_a_retryable_error(tmp_path):
    path = tmp_path / "m.onnxz"
    weights = [onnx.numpy_helper.from_array(weight(i), f"w{i}") for i in range(WEIGHTS)]
    model = make_model(weights)
    model.doc_string = "d" * (4 * MiB)
    onnxzip.save(model, path)
    # Two models of another size whose tensors refer to the archive's entries, for --model.
    with zipfile.ZipFile(path) as z:
        stored = onnx.load_from_string(z.read("__MODEL_PROTO"))
    small, big = tmp_path / "small.onnx", tmp_path / "big.onnx"
    for file, size, producer in ((small, 2 * MiB, "small"), (big, 7 * MiB, "big")):
        variant = onnx.ModelProto()
        variant.CopyFrom(stored)
        variant.doc_string = producer[0] * size
        variant.producer_name = producer
        file.write_bytes(variant.SerializeToString())
    key = tmp_path / "key.pem"
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out",
                    str(key)], check=True, capture_output=True)
    subprocess.run([str(CLI), "sign", str(path), "--key", str(key)], check=True,
                   capture_output=True)

    editor = Editor(path, key, small, big)
    deadline = time.monotonic() + SECONDS
    readers = {}
    for name, command in reader_processes(path, deadline).items():
        readers[name] = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True, cwd=tmp_path)
    i = 0
    while time.monotonic() < deadline:
        editor.round(i)
        i += 1
    results = {}
    for name, process in readers.items():
        out, err = process.communicate(timeout=60)
        results[name] = ([json.loads(line) for line in out.splitlines() if line.strip()],
                         process.returncode, err)

    table = {}
    problems = []
    for name, (lines, returncode, err) in results.items():
        if returncode != 0:
            problems.append(f"{name}: the reader process ended with {returncode}: {err[-2000:]}")
        counts = collections.Counter()
        for result in lines:
            verdict = judge(name, result, editor.history)
            counts[verdict] += 1
            if verdict not in ("old", "new", "old/new", "changed"):
                problems.append(f"{name}: {verdict}: {result['detail'][:500]}")
        table[name] = counts
        if not lines:
            problems.append(f"{name}: no result at all")
    print(f"\n{SECONDS:.0f} s, edits: {dict(editor.counts)}")
    for name, counts in table.items():
        print(f"  {name:28} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    assert not editor.failures, editor.failures[:5]
    assert all(editor.counts[k] > 0 for k in ("metadata", "model size", "signed")), editor.counts
    assert not problems, "\n".join(problems[:20])
    assert onnxzip.verify(path).ok
