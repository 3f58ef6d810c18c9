"""File names, GGUF headers, fit hints and progress: the pure parts of the model store."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from imprint_desktop.core.errors import InvalidModelFileError
from imprint_desktop.core.models.fit import WORKING_MEMORY, Fit, fit_hint, human_size
from imprint_desktop.core.models.gguf import inspect_gguf, parse_header_prefix
from imprint_desktop.core.models.naming import group_gguf_files, quantization, split_name
from imprint_desktop.core.models.progress import DownloadProgress, Phase, RateMeter
from imprint_desktop.core.resources import starter_model_path

MB = 1 << 20


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("SmolLM2-135M-Instruct.Q4_1.gguf", "Q4_1"),
        ("qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf", "Q4_K_M"),
        ("Llama-3-8B-IQ3_XXS.gguf", "IQ3_XXS"),
        ("model-f16.gguf", "F16"),
        ("m-BF16.gguf", "BF16"),
        ("x-Q4_0_4_4.gguf", "Q4_0_4_4"),
        ("gpt-oss-20b-MXFP4.gguf", "MXFP4"),
        ("Q4_K_M/model-Q4_K_M-00002-of-00002.gguf", "Q4_K_M"),
        ("mistral.gguf", ""),
        ("Qwen2-7B.gguf", ""),  # a model name that looks like nothing llama-quantize writes
    ],
)
def test_quantization_is_read_from_the_name(name: str, expected: str) -> None:
    assert quantization(name) == expected


def test_split_parts_are_grouped_into_one_model() -> None:
    assert split_name("a-00002-of-00003.gguf") == split_name("a-00002-of-00003.gguf")
    assert split_name("a-00004-of-00003.gguf") is None
    grouped = group_gguf_files(
        [
            "b-00002-of-00002.gguf",
            "README.md",
            "b-00001-of-00002.gguf",
            "a.Q4_0.gguf",
            "c-00001-of-00003.gguf",
            "sub/d-00001-of-00001.gguf",
        ]
    )
    by_name = {model.name: model for model in grouped}
    assert by_name["b.gguf"].files == ("b-00001-of-00002.gguf", "b-00002-of-00002.gguf")
    assert by_name["b.gguf"].complete and by_name["b.gguf"].is_split
    assert not by_name["c.gguf"].complete
    assert by_name["a.Q4_0.gguf"].files == ("a.Q4_0.gguf",)
    assert not by_name["a.Q4_0.gguf"].is_split
    assert "sub/d.gguf" in by_name
    assert "README.md" not in by_name


def _gguf(version: int = 3, keys: bytes = b"", key_count: int = 0, tensors: int = 0) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, tensors, key_count) + keys


def _kv_string(key: str, value: str) -> bytes:
    def s(text: str) -> bytes:
        raw = text.encode()
        return struct.pack("<Q", len(raw)) + raw

    return s(key) + struct.pack("<I", 8) + s(value)


def test_the_starter_model_passes_the_check() -> None:
    path = starter_model_path()
    assert path is not None
    info = inspect_gguf(path)
    assert (info.architecture, info.version) == ("llama", 3)
    assert info.kv_cache_bytes(8192) == 180 * MB
    assert info.array_lengths["tokenizer.ggml.tokens"] == 49152


def test_a_truncated_model_is_refused(tmp_path: Path) -> None:
    path = starter_model_path()
    assert path is not None
    cut = tmp_path / "cut.gguf"
    with path.open("rb") as source:
        cut.write_bytes(source.read(path.stat().st_size - 4096))
    with pytest.raises(InvalidModelFileError, match="incomplete"):
        inspect_gguf(cut)
    header_only = tmp_path / "header.gguf"
    header_only.write_bytes(path.read_bytes()[:100_000])
    with pytest.raises(InvalidModelFileError, match="incomplete"):
        inspect_gguf(header_only)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"<html>404 Not Found</html>", "does not start with GGUF"),
        (_gguf(version=7), "version 7"),
        (_gguf(version=3 << 24), "big-endian"),
        (_gguf(key_count=10**9), "corrupt"),
        (_gguf(key_count=1, keys=_kv_string("general.name", "x")[:-1]), "incomplete"),
        (b"GG", "incomplete"),
    ],
)
def test_files_that_are_not_loadable_gguf_say_why(tmp_path: Path, data: bytes, reason: str) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    with pytest.raises(InvalidModelFileError, match=reason):
        inspect_gguf(path)


def test_a_minimal_valid_header_passes(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(_gguf(key_count=1, keys=_kv_string("general.architecture", "llama")))
    assert inspect_gguf(path).architecture == "llama"


def test_a_header_prefix_gives_what_it_holds() -> None:
    path = starter_model_path()
    assert path is not None
    with path.open("rb") as handle:
        prefix = handle.read(4096)
    info = parse_header_prefix(prefix)
    assert info.kv_cache_bytes(1) == 180 * MB // 8192
    with pytest.raises(InvalidModelFileError):
        parse_header_prefix(b"PK\x03\x04 a zip file")


def test_fit_hint_levels() -> None:
    gib = 1 << 30
    assert fit_hint(1 * gib, 1 * gib, 16 * gib).fit is Fit.FITS
    assert fit_hint(7 * gib, 1 * gib, 9 * gib).fit is Fit.TIGHT
    too_big = fit_hint(20 * gib, None, 16 * gib)
    assert too_big.fit is Fit.TOO_BIG
    assert too_big.needed_bytes == 20 * gib + WORKING_MEMORY
    assert "context memory not known" in too_big.text
    assert fit_hint(1, 1, None).fit is Fit.UNKNOWN
    assert human_size(98362432) == "93.8 MiB"
    assert human_size(512) == "512 B"


def test_rate_meter_throttles_and_estimates() -> None:
    now = [0.0]
    events: list[DownloadProgress] = []
    meter = RateMeter("d", 100 * MB, 1, events.append, max_rate=10, clock=lambda: now[0])
    meter.phase(Phase.DOWNLOADING, 0)
    for step in range(1, 101):  # 1 MiB every 10 ms: 100 MiB/s for one second
        now[0] = step * 0.01
        meter.advance(step * MB)
    assert 10 <= len(events) <= 13, "at most ~10 events a second, plus the phase and the end"
    assert events[-1].done_bytes == 100 * MB
    middle = events[len(events) // 2]
    assert middle.rate == pytest.approx(100 * MB, rel=0.05)
    assert middle.eta == pytest.approx((100 * MB - middle.done_bytes) / middle.rate)
    meter.phase(Phase.RETRYING, 50 * MB, "HTTP 503")
    assert events[-1].eta is None and events[-1].detail == "HTTP 503"
