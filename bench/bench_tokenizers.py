"""The remote token estimate against every tokenizer family llama.cpp ships a vocabulary of.

Run: .venv/bin/python bench/bench_tokenizers.py [--vocab DIR | --sdist FILE.tar.gz]

llama-cpp-python's source distribution vendors llama.cpp's vocabulary-only GGUF files
(``vendor/llama.cpp/models/ggml-vocab-*.gguf``: llama-bpe, llama-spm, qwen2, qwen35, gemma-4,
phi-3, gpt-2, deepseek-llm, deepseek-coder, command-r, falcon, mpt, starcoder…). With neither
option, the sdist of the pinned version is fetched with ``pip download`` (about 75 MB). For each
family, llama.cpp counts the samples of ``tests/support/script_samples.py`` (English, other
languages, code, a table, JSON, numbers) and research requests as the engine builds them
(``tests/support/engine_prompts.py``), and the table prints the remote provider's estimate ÷ the
real count: its lowest and median over the samples, and its lowest over the requests. The starter
model's tokenizer is measured the same way in the same run, for reference. Exits 1 when the
estimate falls below any family's count by more than the stated margin (3 %). The two BERT
vocabularies (bert-bge, nomic-bert-moe) tokenize what an embedding model reads, never a chat
request: they are held to the margin on the samples only (WordPiece makes a token of every
punctuation mark, which JSON is full of).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llama_cpp import Llama  # noqa: E402

from imprint_desktop.core.providers.estimate import estimate_tokens  # noqa: E402
from imprint_desktop.core.resources import starter_model_path  # noqa: E402
from tests.support.engine_prompts import request_pieces  # noqa: E402
from tests.support.script_samples import SAMPLES  # noqa: E402

MARGIN = 0.03
#: Vocabularies of embedding models: no server sends them a research request.
EMBEDDING = ("bert-bge", "nomic-bert-moe")
PINNED = "llama-cpp-python==0.3.36"


def vocabularies(vocab: Path | None, sdist: Path | None, scratch: Path) -> list[Path]:
    """The ``ggml-vocab-*.gguf`` files to measure."""
    if vocab is None:
        if sdist is None:
            command = [sys.executable, "-m", "pip", "download", PINNED, "--no-deps",
                       "--no-binary", ":all:", "--quiet", "-d", str(scratch)]  # fmt: skip
            print(f"fetching the sdist: {' '.join(command[2:])}", flush=True)
            subprocess.run(command, check=True)
            sdist = next(scratch.glob("llama_cpp_python-*.tar.gz"))
        with tarfile.open(sdist) as archive:
            members = [m for m in archive.getmembers() if "/models/ggml-vocab-" in m.name]
            archive.extractall(scratch, members=members, filter="data")
        vocab = next(scratch.glob("*/vendor/llama.cpp/models"))
    return sorted(vocab.glob("ggml-vocab-*.gguf"))


def ratios(vocabulary: Llama) -> tuple[dict[str, float], dict[str, float]]:
    """Estimate ÷ real count per sample, and per research request."""

    def real(text: str) -> int:
        return len(vocabulary.tokenize(text.encode(), add_bos=False, special=False))

    samples = {name: estimate_tokens(text) / real(text) for name, text in SAMPLES.items()}
    requests = {}
    for name in SAMPLES:
        pieces = request_pieces(name)
        requests[name] = sum(map(estimate_tokens, pieces)) / sum(map(real, pieces))
    return samples, requests


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=Path, help="a folder of ggml-vocab-*.gguf files")
    parser.add_argument("--sdist", type=Path, help="llama-cpp-python's source distribution")
    args = parser.parse_args()
    worst = float("inf")
    with tempfile.TemporaryDirectory() as scratch:
        paths = vocabularies(args.vocab, args.sdist, Path(scratch))
        starter = starter_model_path()
        families = [(path.name[len("ggml-vocab-") : -len(".gguf")], path) for path in paths]
        if starter is not None:
            families.append(("(starter) smollm2", starter))
        print(f"{'family':20} {'lowest':>7} {'sample':>11} {'median':>7} {'requests':>9}")
        for family, path in families:
            vocabulary = Llama(str(path), vocab_only=True, verbose=False)
            try:
                samples, requests = ratios(vocabulary)
            finally:
                vocabulary.close()
            lowest = min(samples, key=samples.__getitem__)
            print(
                f"{family:20} {samples[lowest]:7.2f} {lowest:>11} "
                f"{statistics.median(samples.values()):7.2f} {min(requests.values()):9.2f}"
            )
            held = () if family in EMBEDDING else requests.values()
            worst = min(worst, samples[lowest], *held)
    print(f"\nlowest estimate ÷ real count of any family: {worst:.3f} (margin: {1 - MARGIN:.2f})")
    return 0 if worst >= 1 - MARGIN else 1


if __name__ == "__main__":
    sys.exit(main())
