"""Many writers, one archive (onnxzip.plan_parts ... finish_parts, spec §13): writers in separate
processes give the bytes one ArchiveWriter gives; refusals publish nothing; a killed writer leaves
nothing under the final name; and a torch.distributed job (gloo, 4 ranks) writes a state_dict that
loads back with load_state_dict(strict=True)."""

import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys

import numpy as np
import onnx
import onnx.helper
import pytest

import onnxzip

# Sizes 0, 1, 63, 64, 65 and past the writer's deferred-CRC threshold; names that sanitize alike.
TENSORS = [
    ("layer.0/w", np.zeros(0, np.float32)),
    ("layer_0_w", np.arange(1, dtype=np.uint8)),
    ("W", np.arange(63, dtype=np.uint8)),
    ("w", np.arange(16, dtype=np.float32)),
    ("onnx::Mul", np.arange(65, dtype=np.uint8)),
    ("emb", np.random.default_rng(1).standard_normal((3, 30000)).astype(np.float32)),
    ("norm", np.ones(1024, np.float16)),
    ("head", np.arange(70000, dtype=np.int64).reshape(2, 35000)),
]


def _split(rows, parts):
    per = -(-len(rows) // parts)
    return [rows[i * per:(i + 1) * per] for i in range(parts)]


def _plan_rows(parts):
    return [[(name, array.dtype, array.shape) for name, array in part]
            for part in _split(TENSORS, parts)]


def _model(initializers):
    graph = onnx.helper.make_graph([], "g", [], [], initializer=initializers)
    return onnx.helper.make_model(graph, producer_name="parts")


def _write_part(token, part, result):
    """One writer process: writes its part's tensors, puts its receipt in `result`."""
    with onnxzip.PartWriter(token, part=part) as writer:
        for entry in writer.plan.part(part):
            writer.add_tensor(entry.name, dict(TENSORS)[entry.name])
    result.put((part, writer.receipt()))


def _write_in_processes(path, parts, *, alignment=64, digests=False, key=None):
    # Every writer would compute the same plan; here the parent does it and sends its bytes.
    plan = onnxzip.plan_parts(_plan_rows(parts), alignment=alignment, digests=digests)
    plan = onnxzip.PartsPlan.from_bytes(plan.to_bytes())
    token = onnxzip.begin_parts(path, plan)
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    processes = [context.Process(target=_write_part, args=(token, p, results))
                 for p in range(parts)]
    for process in processes:
        process.start()
    receipts = dict(results.get(timeout=300) for _ in processes)
    for process in processes:
        process.join()
        assert process.exitcode == 0
    # In reverse: finish takes them in any order.
    onnxzip.finish_parts(token, _model(plan.references()),
                         [receipts[p] for p in reversed(range(parts))], key=key)


def _write_single(path, *, alignment=64, digests=False):
    with onnxzip.ArchiveWriter(path, alignment=alignment, digests=digests) as writer:
        initializers = [writer.add_tensor(name, array) for name, array in TENSORS]
        writer.finish(_model(initializers))


@pytest.mark.parametrize("parts", [1, 2, 4])
@pytest.mark.parametrize("digests,alignment", [(False, 64), (True, 4096)])
def test_processes_write_the_bytes_one_writer_writes(tmp_path, parts, digests, alignment):
    (tmp_path / "one").mkdir()
    (tmp_path / "many").mkdir()
    # One file name: __DIGESTS names the model after it.
    _write_single(tmp_path / "one" / "m.onnxz", alignment=alignment, digests=digests)
    _write_in_processes(tmp_path / "many" / "m.onnxz", parts, alignment=alignment,
                        digests=digests)
    assert (tmp_path / "many" / "m.onnxz").read_bytes() == \
        (tmp_path / "one" / "m.onnxz").read_bytes()
    report = onnxzip.verify(tmp_path / "many" / "m.onnxz")
    assert report.ok and report.digests == ("verified" if digests else "absent")
    assert os.listdir(tmp_path / "many") == ["m.onnxz"]


@pytest.fixture(scope="module")
def key_pair(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("no openssl")
    folder = tmp_path_factory.mktemp("keys")
    private, public = folder / "k.pem", folder / "k.pub.pem"
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out",
                    str(private)], check=True, capture_output=True)
    subprocess.run(["openssl", "ec", "-in", str(private), "-pubout", "-out", str(public)],
                   check=True, capture_output=True)
    return private, public


@pytest.mark.parametrize("parts", [1, 2, 4])
def test_signed_in_parts_as_sign_signs(tmp_path, key_pair, parts):
    private, public = key_pair
    (tmp_path / "one").mkdir()
    (tmp_path / "many").mkdir()
    _write_single(tmp_path / "one" / "m.onnxz", digests=True)
    onnxzip.sign(tmp_path / "one" / "m.onnxz", key=private)
    _write_in_processes(tmp_path / "many" / "m.onnxz", parts, digests=True, key=private)
    report = onnxzip.verify(tmp_path / "many" / "m.onnxz", public_key=public)
    assert report.ok and report.signature == "verified" and report.digests == "verified"
    # ECDSA draws its nonce at random: the bytes agree up to `__SIGNATURE`'s local header.
    one = (tmp_path / "one" / "m.onnxz").read_bytes()
    many = (tmp_path / "many" / "m.onnxz").read_bytes()
    at = many.index(b"__SIGNATURE")
    assert many[:at] == one[:at]


def _begun(tmp_path, parts=2):
    plan = onnxzip.plan_parts(_plan_rows(parts), digests=True)
    token = onnxzip.begin_parts(tmp_path / "m.onnxz", plan)
    receipts = []
    for p in range(parts):
        with onnxzip.PartWriter(token, part=p) as writer:
            for entry in plan.part(p):
                writer.add_tensor(entry.name, dict(TENSORS)[entry.name])
        receipts.append(writer.receipt())
    return plan, token, receipts


def test_bad_receipts_publish_nothing_and_abort_cleans_up(tmp_path):
    plan, token, receipts = _begun(tmp_path)
    model = _model(plan.references())
    cases = {
        "no receipt for part 1": [receipts[0]],
        "repeats the receipt of its part": [receipts[0], receipts[0], receipts[1]],
    }
    for words, given in cases.items():
        with pytest.raises(onnxzip.InvalidArgumentError, match=words):
            onnxzip.finish_parts(token, model, given)
        assert not (tmp_path / "m.onnxz").exists()
    with pytest.raises(onnxzip.CorruptError):
        onnxzip.finish_parts(token, model, [receipts[0], receipts[1][:-1]])
    # A receipt of another begin with the same plan.
    (tmp_path / "other").mkdir()
    _, other_token, other_receipts = _begun(tmp_path / "other")
    with pytest.raises(onnxzip.InvalidArgumentError, match="of another archive or plan"):
        onnxzip.finish_parts(token, model, [receipts[0], other_receipts[1]])
    # A model that leaves a planned tensor out: ArchiveWriter.finish's check.
    with pytest.raises(onnxzip.InvalidArgumentError, match="no tensor of the model refers to it"):
        onnxzip.finish_parts(token, _model(plan.references()[1:]), receipts)
    names = sorted(os.listdir(tmp_path))
    assert len(names) == 2 and names[0].startswith(".m.onnxz.tmp.") and names[1] == "other"
    onnxzip.abort_parts(token)
    onnxzip.abort_parts(token)  # Gone already: fine.
    onnxzip.abort_parts(other_token)
    assert os.listdir(tmp_path) == ["other"] and os.listdir(tmp_path / "other") == []
    with pytest.raises(onnxzip.NotFoundError):
        onnxzip.PartWriter(token, part=0)


def test_part_writer_checks_type_shape_and_completeness(tmp_path):
    plan = onnxzip.plan_parts([[("a", np.float32, (2, 3)), ("b", "int64", [4])],
                               [("c", onnx.TensorProto.UINT8, [5])]])
    token = onnxzip.begin_parts(tmp_path / "m.onnxz", plan)
    writer = onnxzip.PartWriter(token, part=0)
    with pytest.raises(onnxzip.InvalidArgumentError, match="INT32 given, the plan has FLOAT"):
        writer.add_tensor("a", np.zeros((2, 3), np.int32))
    with pytest.raises(onnxzip.InvalidArgumentError, match=r"shape \(3, 2\) given"):
        writer.add_tensor("a", np.zeros((3, 2), np.float32))
    with pytest.raises(onnxzip.InvalidArgumentError, match="is planned for part 1"):
        writer.add_tensor("c", np.zeros(5, np.uint8))
    writer.add_tensor("a", np.zeros((2, 3), np.float32))
    with pytest.raises(onnxzip.BadStateError, match="has not written 'b'"):
        writer.receipt()
    with pytest.raises(onnxzip.BadStateError):
        with onnxzip.PartWriter(token, part=0):
            pass
    with pytest.raises(onnxzip.InvalidArgumentError, match="is given twice"):
        onnxzip.plan_parts([[("a", np.float32, [1])], [("a", np.float32, [1])]])
    with pytest.raises(onnxzip.InvalidArgumentError, match="has no ONNX data type"):
        onnxzip.plan_parts([[("a", "object", [1])]])
    with pytest.raises(onnxzip.CorruptError):
        onnxzip.PartsPlan.from_bytes(plan.to_bytes()[:-1])
    onnxzip.abort_parts(token)
    assert os.listdir(tmp_path) == []


def _killed_writer(token, part):
    writer = onnxzip.PartWriter(token, part=part)
    entry = writer.plan.part(part)[0]
    writer.add_tensor(entry.name, dict(TENSORS)[entry.name])
    os.kill(os.getpid(), signal.SIGKILL)  # Mid-part: its other tensors never come.


def test_a_killed_writer_leaves_nothing_under_the_final_name(tmp_path):
    plan = onnxzip.plan_parts(_plan_rows(2))
    token = onnxzip.begin_parts(tmp_path / "m.onnxz", plan)
    process = multiprocessing.get_context("spawn").Process(target=_killed_writer,
                                                           args=(token, 1))
    process.start()
    process.join(timeout=300)
    assert process.exitcode == -signal.SIGKILL
    assert not (tmp_path / "m.onnxz").exists()
    # The coordinator, missing its receipt, aborts: nothing at all is left.
    with pytest.raises(onnxzip.InvalidArgumentError, match="no receipt for parts 0, 1;"):
        onnxzip.finish_parts(token, _model(plan.references()), [])
    onnxzip.abort_parts(token)
    assert os.listdir(tmp_path) == []


# --- A bucket (moto, the store fixture of test_s3.py) ---

from test_s3 import aws_environment, store  # noqa: E402,F401  (pytest fixtures)

BUCKET_TENSORS = [("a", np.arange(6 << 18, dtype=np.float32)), ("b", np.ones(7, np.int64)),
                  ("c", np.full(6 << 18, 3, np.float32))]


def _bucket_part(token, part, result):
    with onnxzip.PartWriter(token, part=part) as writer:
        for entry in writer.plan.part(part):  # In a bucket: in plan order.
            writer.add_tensor(entry.name, dict(BUCKET_TENSORS)[entry.name])
    result.put((part, writer.receipt()))


def test_processes_write_one_object_in_a_bucket(aws_environment, tmp_path):
    store = aws_environment
    plan = onnxzip.plan_parts([[(n, a.dtype, a.shape) for n, a in BUCKET_TENSORS[:2]],
                               [(n, a.dtype, a.shape) for n, a in BUCKET_TENSORS[2:]]],
                              digests=True)
    url = "s3://models/parts/m.onnxz"
    store.reset()
    token = onnxzip.begin_parts(url, plan)
    context = multiprocessing.get_context("spawn")  # The children see the test's environment.
    results = context.Queue()
    processes = [context.Process(target=_bucket_part, args=(token, p, results)) for p in range(2)]
    for process in processes:
        process.start()
    receipts = dict(results.get(timeout=300) for _ in processes)
    for process in processes:
        process.join()
    onnxzip.finish_parts(token, _model(plan.references()), [receipts[0], receipts[1]])
    assert store.requests() == 2 + 1 + 2  # Create, a part per writer, the tail, complete.
    with onnxzip.ArchiveWriter(tmp_path / "m.onnxz", digests=True) as writer:
        writer.finish(_model([writer.add_tensor(n, a) for n, a in BUCKET_TENSORS]))
    with onnxzip.open(url) as remote, onnxzip.open(tmp_path / "m.onnxz") as local:
        assert remote.model == local.model
        assert [(t.entry, t.size) for t in remote.tensors] == \
            [(t.entry, t.size) for t in local.tensors]
    # Byte for byte against one writer: tests/parts_test.cpp (S3PartsTest) reads the object whole.
    loaded = onnxzip.load_file(url)
    for name, array in BUCKET_TENSORS:
        assert np.array_equal(loaded[name], array)


def test_a_bucket_refuses_small_parts_and_abort_ends_the_upload(aws_environment):
    small = onnxzip.plan_parts([[("a", np.float32, [1 << 20])], [("b", np.float32, [8])]])
    with pytest.raises(onnxzip.InvalidArgumentError, match="at least 5 MiB"):
        onnxzip.begin_parts("s3://models/small.onnxz", small)
    plan = onnxzip.plan_parts([[(n, a.dtype, a.shape) for n, a in BUCKET_TENSORS]])
    token = onnxzip.begin_parts("s3://models/aborted.onnxz", plan)
    onnxzip.abort_parts(token)
    with pytest.raises(onnxzip.NotFoundError):
        onnxzip.open("s3://models/aborted.onnxz")


# --- torch.distributed ---

TORCH_WORKER = r'''
import os, sys
import torch
import torch.distributed as dist
import onnx, onnx.helper
import onnxzip

rank, world, port, path, kill_rank, token_file = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                                                  sys.argv[4], int(sys.argv[5]), sys.argv[6])
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                        world_size=world)
torch.manual_seed(0)  # Every rank builds the same model; each writes its shard.
def make():
    # Four weights of 6 MiB, so that each rank holds the 5 MiB a bucket's part needs.
    m = torch.nn.Sequential(torch.nn.Embedding(12288, 128), torch.nn.Linear(128, 12288),
                            torch.nn.Linear(12288, 128), torch.nn.LayerNorm(128),
                            torch.nn.Linear(128, 12288))
    m[3].to(torch.bfloat16)
    m.register_buffer("steps", torch.arange(3, dtype=torch.int64))
    return m
model = make()
state = model.state_dict()
# Shards balanced by bytes, largest first to the lightest rank (in the order the names come).
shards, loads = [[] for _ in range(world)], [0] * world
for name in sorted(state, key=lambda n: -state[n].numel() * state[n].element_size()):
    lightest = loads.index(min(loads))
    shards[lightest].append(name)
    loads[lightest] += state[name].numel() * state[name].element_size()
shards = [[n for n in state if n in shard] for shard in shards]
# One rank plans, every rank gets the plan's bytes.
box = [None]
if rank == 0:
    plan = onnxzip.plan_parts([[(n, state[n].dtype, tuple(state[n].shape)) for n in shard]
                               for shard in shards], digests=True)
    box = [(plan.to_bytes(), onnxzip.begin_parts(path, plan))]
    with open(token_file, "wb") as f:  # For the test, to abort a job whose rank was killed.
        f.write(box[0][1])
dist.broadcast_object_list(box, src=0)
plan_bytes, token = box[0]
plan = onnxzip.PartsPlan.from_bytes(plan_bytes)
with onnxzip.PartWriter(token, part=rank) as writer:
    for i, name in enumerate(shards[rank]):
        writer.add_tensor(name, state[name])
        if rank == kill_rank and i == 0:
            os.kill(os.getpid(), 9)
receipts = [None] * world if rank == 0 else None
dist.gather_object(writer.receipt(), receipts, dst=0)
if rank == 0:
    graph = onnx.helper.make_graph([], "state", [], [], initializer=plan.references())
    onnxzip.finish_parts(token, onnx.helper.make_model(graph), receipts)
    loaded = onnxzip.load_file(path, framework="pt")
    fresh = make()
    fresh.load_state_dict(loaded, strict=True)
    for name, tensor in fresh.state_dict().items():
        assert tensor.dtype == state[name].dtype and torch.equal(tensor, state[name]), name
    print("LOADED", len(loaded))
dist.barrier()
dist.destroy_process_group()
'''


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_ranks(tmp_path, world, kill_rank, target=None):
    torch = pytest.importorskip("torch")
    import torch.distributed
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("torch without gloo")
    script = tmp_path / "worker.py"
    script.write_text(TORCH_WORKER)
    port = str(_free_port())
    path = target or str(tmp_path / "out" / "state.onnxz")
    os.makedirs(tmp_path / "out")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    ranks = [subprocess.Popen([sys.executable, str(script), str(r), str(world), port, path,
                               str(kill_rank), str(tmp_path / "token")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env, text=True) for r in range(world)]
    return path, ranks


# Four interpreters importing torch: over 10 s on this machine.
@pytest.mark.slow
def test_torch_distributed_ranks_write_one_state_dict(tmp_path):
    path, ranks = _run_ranks(tmp_path, 4, kill_rank=-1)
    outputs = [rank.communicate(timeout=600) for rank in ranks]
    for rank, (out, err) in zip(ranks, outputs):
        assert rank.returncode == 0, err[-3000:]
    assert "LOADED 10" in outputs[0][0]  # 9 parameters and a buffer.
    assert onnxzip.verify(path).digests == "verified"
    assert os.listdir(os.path.dirname(path)) == ["state.onnxz"]


@pytest.mark.slow
def test_torch_distributed_rank_killed_mid_write_leaves_nothing(tmp_path):
    path, ranks = _run_ranks(tmp_path, 4, kill_rank=2)
    ranks[2].wait(timeout=600)
    assert ranks[2].returncode == -signal.SIGKILL
    # The others wait in gather_object for a rank that is gone: gloo fails them (or we end them).
    for rank in ranks:
        try:
            rank.wait(timeout=60)
        except subprocess.TimeoutExpired:
            rank.kill()
            rank.wait()
    folder = os.path.dirname(path)
    assert not os.path.exists(path)
    # Whoever coordinates aborts with the token: nothing at all is left.
    onnxzip.abort_parts((tmp_path / "token").read_bytes())
    assert os.listdir(folder) == []


@pytest.mark.slow
def test_torch_distributed_ranks_write_one_object_in_a_bucket(aws_environment, tmp_path):
    path, ranks = _run_ranks(tmp_path, 4, kill_rank=-1, target="s3://models/torch/state.onnxz")
    outputs = [rank.communicate(timeout=600) for rank in ranks]
    for rank, (out, err) in zip(ranks, outputs):
        assert rank.returncode == 0, err[-3000:]
    assert "LOADED 10" in outputs[0][0]
