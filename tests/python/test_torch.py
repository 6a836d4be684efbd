"""torch.nn.Module -> .onnxz through export_torch: the weights never enter a protobuf."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnxzip

torch = pytest.importorskip("torch")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8 * 6 * 6, 10)
        self.register_buffer("scale", torch.full((10,), 0.5))

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.flatten(1)) * self.scale


def test_export_torch_streams_parameters_into_the_archive(tmp_path):
    torch.manual_seed(0)
    net = Net().eval()
    with torch.no_grad():
        net.bn.running_mean.uniform_(-1, 1)
        net.bn.running_var.uniform_(0.5, 2)
    x = torch.randn(2, 3, 8, 8)
    path = tmp_path / "net.onnxz"
    onnxzip.export_torch(net, (x,), path, input_names=["x"], output_names=["y"], opset_version=13)

    assert onnxzip.verify(path).ok
    model = onnxzip.load(path)
    onnx.checker.check_model(model)
    assert [i.name for i in model.graph.input] == ["x"]
    state = {k: v.numpy() for k, v in net.state_dict().items()}
    initializers = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    for name, value in initializers.items():
        np.testing.assert_array_equal(value, state[name])
    assert "conv.weight" in initializers and "fc.weight" in initializers

    with onnxzip.open(path) as archive:
        weight = archive.get_tensor("fc.weight")
        assert archive.tensor_info("fc.weight").data_type == onnx.TensorProto.FLOAT
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            loaded = torch.from_numpy(weight)
        assert loaded.data_ptr() == weight.ctypes.data  # the mapped bytes, not a copy
        assert torch.equal(loaded, net.fc.weight.detach())

    # The same graph as torch's own export with the weights inside (names and node list).
    reference_path = tmp_path / "ref.onnx"
    torch.onnx.export(net, (x,), str(reference_path), input_names=["x"], output_names=["y"],
                      opset_version=13, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE)
    reference = onnx.load(str(reference_path))
    assert [n.op_type for n in model.graph.node] == [n.op_type for n in reference.graph.node]
    assert {t.name for t in model.graph.initializer} == {t.name for t in reference.graph.initializer}


def test_export_torch_bfloat16_and_add_tensor_from_torch(tmp_path):
    linear = torch.nn.Linear(64, 32).to(torch.bfloat16)
    path = tmp_path / "bf16.onnxz"
    with onnxzip.ArchiveWriter(path) as writer:
        weight = linear.weight.detach()
        reference = writer.add_tensor("w", weight.view(torch.int16).numpy(),
                                      data_type=onnx.TensorProto.BFLOAT16)
        model = onnx.helper.make_model(onnx.helper.make_graph(
            [onnx.helper.make_node("Identity", ["w"], ["y"])], "g", [],
            [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.BFLOAT16, [32, 64])],
            initializer=[reference]))
        writer.finish(model)
    with onnxzip.open(path) as archive:
        bits = archive.get_tensor("w")
        assert bits.dtype == np.uint16 and bits.shape == (32, 64)
        restored = torch.from_numpy(bits.view(np.int16).copy()).view(torch.bfloat16)
        assert torch.equal(restored, weight)


def _training_mode(model):
    return [a.i for n in model.graph.node if n.op_type == "BatchNormalization"
            for a in n.attribute if a.name == "training_mode"]


def test_export_torch_exports_a_module_in_train_mode_as_eval(tmp_path):
    # A module left in train() was exported as a training graph (BatchNormalization
    # training_mode=1) with no word: torch.onnx.export's default exports it in eval mode.
    net = Net().train()
    model = onnxzip.export_torch(net, (torch.randn(1, 3, 8, 8),), tmp_path / "net.onnxz",
                                 opset_version=15)
    assert set(_training_mode(model)) <= {0}
    assert net.training  # the module is given back in the mode it was in


def test_export_torch_refuses_constant_folding(tmp_path):
    # A folded constant was left as a required graph input with no data.
    with pytest.raises(onnxzip.InvalidArgumentError, match="do_constant_folding"):
        onnxzip.export_torch(Net().eval(), (torch.randn(1, 3, 8, 8),), tmp_path / "net.onnxz",
                             do_constant_folding=True)
    assert not (tmp_path / "net.onnxz").exists()


def test_export_torch_keeps_every_state_dict_key_on_request(tmp_path):
    # torch drops unused parameters and folds equal-valued ones (fresh BatchNorm statistics)
    # into Identity nodes: an archive of a random-weight resnet18 held 30 of 122 keys.
    class Twins(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.BatchNorm2d(4)
            self.b = torch.nn.BatchNorm2d(4)
            self.unused = torch.nn.Linear(2, 2)

        def forward(self, x):
            return self.b(self.a(x))

    net = Twins().eval()
    path = tmp_path / "twins.onnxz"
    onnxzip.export_torch(net, (torch.randn(1, 4, 3, 3),), path, keep_state_dict=True)
    with onnxzip.open(path) as archive:
        assert set(net.state_dict()) <= set(archive.keys())
        state = {k: torch.from_numpy(archive.get_tensor(k).copy()) for k in net.state_dict()}
    fresh = Twins()
    fresh.load_state_dict(state, strict=True)
    assert onnxzip.verify(path).loadable
