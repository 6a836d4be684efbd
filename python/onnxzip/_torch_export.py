"""torch.nn.Module -> .onnxz with the weights streamed from the tensors (see onnxzip.export_torch)."""

from __future__ import annotations

import io
import os
from typing import Any

import onnx


def export_torch(module: Any, args: Any, path: "str | os.PathLike[str]", *, alignment: int = 64,
                 **export_kwargs: Any) -> onnx.ModelProto:
    import torch

    from . import ArchiveWriter

    # The graph alone: with export_params=False the parameters become graph inputs named as in
    # the state dict. Constant folding and the eval-mode fusions (Conv+BatchNorm) would compute
    # new, unnamed parameters that exist only inside the exporter, so they stay off: PRESERVE
    # exports a module in eval() as eval (BatchNormalization with training_mode=0).
    export_kwargs.setdefault("do_constant_folding", False)
    export_kwargs.setdefault("training", torch.onnx.TrainingMode.PRESERVE)
    graph_bytes = io.BytesIO()
    torch.onnx.export(module, args, graph_bytes, export_params=False, **export_kwargs)
    model = onnx.load_from_string(graph_bytes.getvalue())
    del graph_bytes

    state = dict(module.named_parameters())
    state.update(module.named_buffers())
    with ArchiveWriter(path, alignment=alignment) as writer:
        kept_inputs = []
        for graph_input in model.graph.input:
            tensor = state.get(graph_input.name)
            if tensor is None:
                kept_inputs.append(graph_input)
                continue
            tensor = tensor.detach()
            if tensor.device.type != "cpu":
                raise ValueError(f"export_torch: parameter {graph_input.name!r} is on "
                                 f"{tensor.device}; move the module to the CPU first")
            tensor = tensor.contiguous()
            if tensor.dtype == torch.bfloat16:  # numpy has no bfloat16: its bits as int16.
                reference = writer.add_tensor(graph_input.name, tensor.view(torch.int16).numpy(),
                                              data_type=onnx.TensorProto.BFLOAT16)
            else:
                reference = writer.add_tensor(graph_input.name, tensor.numpy())
            model.graph.initializer.append(reference)
        # Initializers need not be inputs (IR >= 4); runtimes then treat them as constants.
        del model.graph.input[:]
        model.graph.input.extend(kept_inputs)
        writer.finish(model)
    return model
