"""torch.nn.Module -> .onnxz with the weights streamed from the tensors (see onnxzip.export_torch)."""

from __future__ import annotations

import io
import os
from typing import Any, Dict, List, Set

import onnx


def export_torch(module: Any, args: Any, path: "str | os.PathLike[str]", *, alignment: int = 64,
                 keep_state_dict: bool = False, digests: bool = False,
                 s3: Any = None, **export_kwargs: Any) -> onnx.ModelProto:
    """Exports a torch.nn.Module to an .onnxz archive without ever building a protobuf that holds
    the weights (so models over 2 GiB export): torch.onnx.export writes the graph only
    (export_params=False, do_constant_folding=False, so that no parameter is computed by the
    exporter -- Conv and BatchNormalization stay unfused -- and parameters keep their state_dict
    names), then every parameter and buffer the graph takes as an input is streamed into an
    ArchiveWriter straight from the tensor's memory and becomes an initializer (and stops being
    a graph input).

    The module is exported in eval mode (torch.onnx.export's default; training= overrides it)
    and given back in the mode it was in. torch leaves out parameters the graph does not use and
    folds equal-valued ones (fresh BatchNorm statistics) into Identity nodes, so the archive may
    hold fewer tensors than the state_dict: with `keep_state_dict`, each such Identity is
    replaced by the parameter it names and the other keys become unused initializers, so that
    load_state_dict(strict=True) finds every key in the archive.

    Args:
        module: the torch.nn.Module; its parameters and buffers must be on the CPU.
        args: the example inputs, as torch.onnx.export takes them.
        path: the archive to write (appears atomically).
        alignment: as for save().
        keep_state_dict: store every state_dict key (see above).
        digests: also write `__DIGESTS`, each parameter hashed as it is streamed (see save()).
        **export_kwargs: torch.onnx.export's (input_names, opset_version, dynamic_axes...).

    Returns:
        The model as written (tensors referring to entries).

    Raises:
        InvalidArgumentError: do_constant_folding=True (a folded constant would be a graph input
            with no data), a parameter off the CPU, a name added twice.
    """
    from ._common import _check_output_name, _path

    _check_output_name("export_torch", _path(path), True)  # Before the export's minutes.
    from ._writer import ArchiveWriter

    model = _export_graph(module, args, export_kwargs)
    state: Dict[str, Any] = dict(module.named_parameters())
    state.update(module.named_buffers())
    with ArchiveWriter(path, alignment=alignment, digests=digests, s3=s3) as writer:
        weights = _Weights(model, writer)
        kept_inputs = []
        for graph_input in model.graph.input:
            tensor = state.get(graph_input.name)
            if tensor is None:
                kept_inputs.append(graph_input)
            else:
                weights.add(graph_input.name, tensor)
        if keep_state_dict:
            _keep_state_dict(module, state, weights, kept_inputs)
        # Initializers need not be inputs (IR >= 4); runtimes then treat them as constants.
        del model.graph.input[:]
        model.graph.input.extend(kept_inputs)
        writer.finish(model)
    return model


def _export_graph(module: Any, args: Any, export_kwargs: Dict[str, Any]) -> onnx.ModelProto:
    """torch.onnx.export's graph without its parameters, which stay graph inputs named as in
    the state dict."""
    import torch

    from ._errors import InvalidArgumentError

    if export_kwargs.get("do_constant_folding"):
        # A folded constant is a new tensor that exists only inside the exporter: with
        # export_params=False it stays a graph input that nothing feeds.
        raise InvalidArgumentError(
            "export_torch: do_constant_folding=True is not supported (a folded constant would "
            "be left as a graph input with no data); onnxzip.save(onnx model) takes such models")
    # Constant folding and the eval-mode fusions (Conv+BatchNorm) would compute new, unnamed
    # parameters that exist only inside the exporter, so they stay off: PRESERVE exports the
    # module in the mode it is in, and the module is put in eval() for the export (as
    # torch.onnx.export's default, TrainingMode.EVAL, exports it) unless `training` is given.
    export_kwargs.setdefault("do_constant_folding", False)
    training = export_kwargs.pop("training", None)
    was_training = bool(getattr(module, "training", False))
    if training is None or training == torch.onnx.TrainingMode.EVAL:
        module.eval()
    elif training == torch.onnx.TrainingMode.TRAINING:
        module.train()
    graph_bytes = io.BytesIO()
    try:
        torch.onnx.export(module, args, graph_bytes, export_params=False,
                          training=torch.onnx.TrainingMode.PRESERVE, **export_kwargs)
    finally:
        module.train(was_training)
    return onnx.load_from_string(graph_bytes.getvalue())


class _Weights:
    """Streams parameters into the writer, each becoming an initializer of the model."""

    def __init__(self, model: onnx.ModelProto, writer: Any) -> None:
        self.model = model
        self.writer = writer
        self.written: Set[str] = set()

    def add(self, name: str, tensor: Any) -> None:
        from ._errors import InvalidArgumentError

        tensor = tensor.detach()
        if tensor.device.type != "cpu":
            raise InvalidArgumentError(f"export_torch: parameter {name!r} is on "
                                       f"{tensor.device}; move the module to the CPU first")
        # add_tensor writes a bfloat16 tensor as BFLOAT16, from its bits.
        self.model.graph.initializer.append(self.writer.add_tensor(name, tensor.contiguous()))
        self.written.add(name)


def _keep_state_dict(module: Any, state: Dict[str, Any], weights: _Weights,
                     kept_inputs: List[Any]) -> None:
    """torch drops parameters the graph does not use and folds equal-valued ones into Identity
    nodes; the rest of the state dict goes in as unused initializers, so that
    load_state_dict(strict=True) finds every key."""
    graph = weights.model.graph
    # An Identity that gives a parameter's name to another's equal value is replaced by that
    # parameter itself: the same value, and the key is there.
    folded = [node for node in graph.node if node.op_type == "Identity" and
              len(node.output) == 1 and node.output[0] in state and
              node.output[0] not in weights.written]
    for node in folded:
        graph.node.remove(node)
        weights.add(node.output[0], state[node.output[0]])
    taken = {name for node in graph.node for name in node.output}
    taken.update(i.name for i in kept_inputs)
    for name, tensor in module.state_dict(keep_vars=True).items():
        if name not in weights.written and name not in taken:
            weights.add(name, tensor)
