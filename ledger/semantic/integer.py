"""An int8 encoder's matrix products run as integer kernels, by rewriting its graph in memory.

Why: the bundled file dequantises its int8 weights in the graph, and onnxruntime folds that into
float32 weights at load, so every query streamed float weights through a float MatMul.  The
exact pattern (int8 weight, Cast, one scale or one per output column, MatMul; and the same
feeding a Gather) is rewritten into `DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul` on
the file's own weights and scales: nothing re-quantised, the only new rounding the activations'.
Weights go as int8 where the CPU has VNNI (exact), else as uint8 with zero point 128 (the non-VNNI
int8 kernel saturates); both give the same vectors.  The file on disk is never changed; the graph
is read and written through onnx_wire.py.  Measurements: docs/performance.md, "Integer kernels".
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
from google.protobuf.message import DecodeError

from factledger.ledger.semantic.onnx_wire import ATTRIBUTE_INT, EXTERNAL, FLOAT, INT8, UINT8, messages

PREFIX = "factledger_int8mm"
MIN_OPSET = 11             # DynamicQuantizeLinear
_STANDARD = ("", "ai.onnx")
VNNI_FLAGS = ("avx512_vnni", "avx_vnni")


def signed_weights_exact(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether onnxruntime's uint8 x int8 product is exact on this CPU: x86 with VNNI.  Anything
    else, or a system without /proc/cpuinfo, gets uint8 weights (exact everywhere)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return False
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return any(flag in flags for flag in VNNI_FLAGS)


def rewrite(model_bytes: bytes, signed: bool | None = None) -> bytes | None:
    """The model with every dequantised-weight MatMul turned into an integer one, or None when it
    has none or cannot be read here (the caller then runs the file as it is).  `signed`: pass the
    weights as int8 (True) or uint8 (False); None chooses by `signed_weights_exact()`."""
    if signed is None:
        signed = signed_weights_exact()
    kinds = messages()
    model = kinds["ModelProto"]()
    try:
        model.ParseFromString(model_bytes)
    except DecodeError:
        return None
    if _opset(model) < MIN_OPSET:
        return None
    graph = model.graph
    original = list(graph.node)          # one wrapper per node, held: the id()s below stay valid
    inits = {t.name: t for t in graph.initializer}
    producer = {out: node for node in original for out in node.output}
    plans: dict = {}
    candidates: set = set()              # the dequantising Casts and Muls, dropped once unused
    tables: dict = {}                    # Gathers from a dequantised table
    for node in original:
        if node.domain not in _STANDARD or node.op_type not in ("MatMul", "Gather") or len(node.input) != 2:
            continue
        source = node.input[1] if node.op_type == "MatMul" else node.input[0]
        found = _dequantised(source, producer, inits)
        if found is None:
            continue
        weight_name, scale_name, scale = found
        if node.op_type == "MatMul":
            columns = _per_column(scale, int(inits[weight_name].dims[1]))
            if columns is None:
                continue
            plans[id(node)] = (weight_name, scale_name, columns)
        else:
            mode = _rows_scale(scale, int(inits[weight_name].dims[0]))
            if mode is None or any(a.name == "axis" and a.i != 0 for a in node.attribute):
                continue
            tables[id(node)] = (weight_name, scale_name, mode)
        mul = producer[source]
        candidates.update(id(n) for n in (mul, *(producer[i] for i in mul.input if i in producer)))
    if not plans:
        return None
    taken = ({out for node in original for out in node.output} | {node.name for node in original}
             | set(inits) | {i.name for i in graph.input})
    new_inits: list = []
    columns: dict[str, str] = {}
    unsigned: dict[str, tuple[str, str]] = {}
    quantised: dict[str, tuple[str, str, str]] = {}
    nodes = []

    def node_of(op_type, inputs, outputs, name, **ints):
        attributes = [kinds["AttributeProto"](name=k, type=ATTRIBUTE_INT, i=v) for k, v in ints.items()]
        return kinds["NodeProto"](op_type=op_type, input=inputs, output=outputs, name=_fresh(name, taken),
                                  attribute=attributes)

    for node in original:
        if id(node) in tables:
            nodes += _table_lookup(node, tables[id(node)], node_of, taken)
            continue
        if id(node) not in plans:
            nodes.append(node)
            continue
        weight_name, scale_name, scale = plans[id(node)]
        if scale_name not in columns:
            columns[scale_name] = _fresh(f"{PREFIX}_{scale_name}_columns", taken)
            new_inits.append(kinds["TensorProto"](name=columns[scale_name], data_type=FLOAT, dims=[scale.size],
                                                  raw_data=scale.astype("<f4").tobytes()))
        activation = node.input[0]
        if activation not in quantised:
            names = tuple(_fresh(f"{PREFIX}_{activation}_{part}", taken) for part in ("u8", "scale", "zero"))
            quantised[activation] = names
            nodes.append(node_of("DynamicQuantizeLinear", [activation], list(names), f"{PREFIX}_{activation}_quantise"))
        a_u8, a_scale, a_zero = quantised[activation]
        weight_inputs = [weight_name]
        if not signed:
            if weight_name not in unsigned:
                unsigned[weight_name] = (_fresh(f"{PREFIX}_{weight_name}_u8", taken),
                                         _fresh(f"{PREFIX}_{weight_name}_zero", taken))
                values = _int8s(inits[weight_name])
                new_inits += [kinds["TensorProto"](name=unsigned[weight_name][0], data_type=UINT8,
                                                   dims=list(inits[weight_name].dims),
                                                   raw_data=(values.astype(np.int16) + 128).astype(np.uint8).tobytes()),
                              kinds["TensorProto"](name=unsigned[weight_name][1], data_type=UINT8, dims=[],
                                                   raw_data=bytes([128]))]
            weight_inputs = list(unsigned[weight_name])
        out = node.output[0]
        scales, product, floats = (_fresh(f"{PREFIX}_{out}_{part}", taken) for part in ("scales", "int32", "float"))
        nodes += [
            node_of("Mul", [a_scale, columns[scale_name]], [scales], scales + "_mul"),
            node_of("MatMulInteger", [a_u8, weight_inputs[0], a_zero, *weight_inputs[1:]], [product],
                    product + "_matmul"),
            node_of("Cast", [product], [floats], floats + "_cast", to=FLOAT),
            node_of("Mul", [floats, scales], [out], out + "_rescale"),
        ]
    nodes = _without_dead(nodes, candidates, graph)
    used = {name for node in nodes for name in node.input}
    kept_inits = [t for t in graph.initializer if t.name in used] + new_inits
    produced = {out for node in nodes for out in node.output}
    kept_info = [v for v in graph.value_info if v.name in produced]
    rebuilt = kinds["GraphProto"]()
    rebuilt.CopyFrom(graph)
    del rebuilt.node[:], rebuilt.initializer[:], rebuilt.value_info[:]
    rebuilt.node.extend(nodes)
    rebuilt.initializer.extend(kept_inits)
    rebuilt.value_info.extend(kept_info)
    model.graph.CopyFrom(rebuilt)
    return model.SerializeToString()


def _table_lookup(node, table: tuple, node_of, taken: set) -> list:
    """Gather(Mul(Cast(W_int8), s), ids) as Mul(Cast(Gather(W_int8, ids)), s or Gather(s, ids)):
    the same multiplication per element, so the same numbers, but the table stays int8 in memory
    instead of being folded into float32 at load (47 MB for MiniLM's words)."""
    weight_name, scale_name, mode = table
    ids, out = node.input[1], node.output[0]
    rows, floats, scales = (_fresh(f"{PREFIX}_{out}_{part}", taken) for part in ("int8", "float", "scales"))
    nodes = [node_of("Gather", [weight_name, ids], [rows], rows + "_gather"),
             node_of("Cast", [rows], [floats], floats + "_cast", to=FLOAT)]
    if mode == "rows":
        nodes.append(node_of("Gather", [scale_name, ids], [scales], scales + "_gather"))
    nodes.append(node_of("Mul", [floats, scales if mode == "rows" else scale_name], [out], out + "_rescale"))
    return nodes


def _dequantised(name: str, producer: dict, inits: dict):
    """(int8 weight name, scale name, scale values in the scale's shape) when `name` is
    Mul(Cast(W_int8), s), W of two dimensions and s a float initializer; else None."""
    mul = producer.get(name)
    if mul is None or mul.op_type != "Mul" or mul.domain not in _STANDARD or len(mul.input) != 2:
        return None
    for cast_out, scale_name in (tuple(mul.input), tuple(reversed(mul.input))):
        cast = producer.get(cast_out)
        scale = inits.get(scale_name)
        if cast is None or scale is None or cast.op_type != "Cast" or cast.domain not in _STANDARD:
            continue
        target = next((a.i for a in cast.attribute if a.name == "to"), None)
        weight = inits.get(cast.input[0])
        if target != FLOAT or weight is None or weight.data_type != INT8 or len(weight.dims) != 2:
            continue
        values = _floats(scale)
        if _int8s(weight) is not None and values is not None:
            return weight.name, scale_name, values.reshape(tuple(scale.dims))
    return None


def _rows_scale(scale: np.ndarray, rows: int) -> str | None:
    """"single" for one scale, "rows" for one per row ([rows, 1]) of a table, else None."""
    if scale.size == 1:
        return "single"
    return "rows" if scale.shape == (rows, 1) else None


def _floats(tensor) -> np.ndarray | None:
    """A float initializer's values held in the file itself, or None."""
    if tensor.data_type != FLOAT or tensor.data_location == EXTERNAL:
        return None
    if tensor.raw_data:
        values = np.frombuffer(tensor.raw_data, dtype="<f4")
    else:
        values = np.asarray(tensor.float_data, dtype=np.float32)
    return values if values.size == int(np.prod(tensor.dims, dtype=np.int64)) else None


def _int8s(tensor) -> np.ndarray | None:
    """An int8 initializer's values held in the file itself, or None."""
    if tensor.data_location == EXTERNAL:
        return None
    if tensor.raw_data:
        values = np.frombuffer(tensor.raw_data, dtype=np.int8)
    else:
        values = np.asarray(tensor.int32_data, dtype=np.int32).astype(np.int8)
    return values if values.size == int(np.prod(tensor.dims, dtype=np.int64)) else None


def _per_column(scale: np.ndarray, out: int) -> np.ndarray | None:
    """The scale as one float32 per output column, or None when it varies along the rows."""
    if scale.size == 1:
        return np.full(out, scale.reshape(-1)[0], dtype=np.float32)
    if scale.ndim >= 1 and scale.shape[-1] == out and scale.size == out:
        return scale.reshape(out).astype(np.float32)
    return None


def _without_dead(nodes: list, candidates: set, graph) -> list:
    """Drop the dequantising nodes that only fed the rewritten MatMuls (a dequantised weight used
    elsewhere too keeps its nodes)."""
    outputs = {o.name for o in graph.output}
    while True:
        consumed = defaultdict(int)
        for node in nodes:
            for name in node.input:
                consumed[name] += 1
        dead = [n for n in nodes if id(n) in candidates and all(consumed[o] == 0 and o not in outputs
                                                                for o in n.output)]
        if not dead:
            return nodes
        gone = {id(n) for n in dead}
        nodes = [n for n in nodes if id(n) not in gone]


def _opset(model) -> int:
    return max((o.version for o in model.opset_import if o.domain in _STANDARD), default=0)


def _fresh(name: str, taken: set) -> str:
    """`name`, or `name_2`, `name_3` ... if a tensor or node of the graph already has it."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}_{n}"
    taken.add(candidate)
    return candidate
