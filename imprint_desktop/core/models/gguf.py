"""Reading just enough of a GGUF file to know llama.cpp can load it, without loading weights.

A model is offered for use only after :func:`inspect_gguf` accepts it: the magic, a known version,
sane counts, readable metadata, tensor descriptions that fit inside the file. A truncated download,
an HTML error page saved as ``.gguf`` or a half-copied import fails here, with a sentence that says
why, instead of failing later inside llama.cpp while the person waits for an answer.

The same parser reads a *prefix* of a remote file (:func:`parse_header_prefix`): the architecture
numbers come before the large tokenizer arrays, so the first few hundred kilobytes are enough to
size the KV cache for the fit hint.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from imprint_desktop.core.errors import InvalidModelFileError

MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32

# Limits far above any real model; beyond them the header is garbage, not a model.
_MAX_TENSORS = 1_000_000
_MAX_KEYS = 100_000
_MAX_STRING = 64 * 1024 * 1024
_MAX_ARRAY = 64 * 1024 * 1024
_MAX_DIMS = 8

# value type -> struct format for the scalar types of the GGUF key/value section
_SCALARS: Mapping[int, str] = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
    10: "<Q", 11: "<q", 12: "<d",
}  # fmt: skip
_STRING = 8
_ARRAY = 9

# ggml tensor type -> (elements per block, bytes per block), for the types whose layout is settled.
# Tensors of other types are not size-checked.
_TYPE_SIZES: Mapping[int, tuple[int, int]] = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
    9: (32, 36), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210),
    15: (256, 292), 24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8), 28: (1, 8), 30: (1, 2),
}  # fmt: skip

Scalar = int | float | bool | str


class _TruncatedError(Exception):
    """The bytes ended inside the header."""


@dataclass(frozen=True)
class GgufInfo:
    """What the header says about a model: enough to describe it and to size its KV cache."""

    version: int
    tensor_count: int
    metadata: Mapping[str, Scalar] = field(repr=False)
    array_lengths: Mapping[str, int] = field(repr=False)

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    @property
    def name(self) -> str:
        return str(self.metadata.get("general.name", ""))

    def arch_int(self, suffix: str) -> int | None:
        value = self.metadata.get(f"{self.architecture}.{suffix}")
        return (
            int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
        )

    @property
    def context_length(self) -> int | None:
        return self.arch_int("context_length")

    def kv_cache_bytes(self, n_ctx: int) -> int | None:
        """Bytes of an f16 K and V cache for ``n_ctx`` tokens; None when the header is silent.

        ``block_count × n_ctx × head_count_kv × (key_length + value_length) × 2`` bytes, where
        key/value lengths default to ``embedding_length / head_count`` as in llama.cpp.
        """
        layers = self.arch_int("block_count")
        embedding = self.arch_int("embedding_length")
        heads = self.arch_int("attention.head_count")
        if not layers or not embedding or not heads:
            return None
        kv_heads = self.arch_int("attention.head_count_kv") or heads
        key = self.arch_int("attention.key_length") or embedding // heads
        value = self.arch_int("attention.value_length") or embedding // heads
        return layers * n_ctx * kv_heads * (key + value) * 2


def inspect_gguf(path: Path) -> GgufInfo:
    """Check that ``path`` is a GGUF file llama.cpp can open, and return its header.

    Reads the header and the tensor descriptions only (not the weights) and checks that every tensor
    of a known type ends inside the file. Raises :class:`InvalidModelFileError` saying what is
    wrong.
    """
    try:
        size = path.stat().st_size
        with path.open("rb") as raw, io.BufferedReader(raw, buffer_size=1 << 16) as handle:
            try:
                info, data_offsets = _parse(handle, with_tensors=True)
            except _TruncatedError:
                raise InvalidModelFileError(
                    f"{path.name} ends inside its GGUF header: the file is incomplete."
                ) from None
            header_end = handle.tell()
    except OSError as error:
        raise InvalidModelFileError(
            f"{path.name} cannot be read: {error.strerror or error}."
        ) from error
    alignment = int(info.metadata.get("general.alignment", DEFAULT_ALIGNMENT) or DEFAULT_ALIGNMENT)
    data_start = -(-header_end // alignment) * alignment
    needed = data_start + max(data_offsets) if data_offsets else header_end
    if needed > size:
        raise InvalidModelFileError(
            f"{path.name} is {size:,} bytes but its tensors need {needed:,}: the file is "
            "incomplete (an interrupted download or copy?)."
        )
    return info


def parse_header_prefix(data: bytes) -> GgufInfo:
    """The metadata found in the first bytes of a GGUF file; stops quietly where the bytes end.

    Raises :class:`InvalidModelFileError` when the bytes are not the start of a GGUF file.
    """
    handle = io.BytesIO(data)
    collected: dict[str, Scalar] = {}
    lengths: dict[str, int] = {}
    try:
        info, _ = _parse(handle, with_tensors=False, sink=(collected, lengths))
    except _TruncatedError:
        version = struct.unpack_from("<I", data, 4)[0] if len(data) >= 8 else 0
        return GgufInfo(version, 0, dict(collected), dict(lengths))
    return info


def _parse(
    handle: BinaryIO,
    *,
    with_tensors: bool,
    sink: tuple[dict[str, Scalar], dict[str, int]] | None = None,
) -> tuple[GgufInfo, list[int]]:
    magic = handle.read(4)
    if len(magic) < 4:
        raise _TruncatedError
    if magic != MAGIC:
        raise InvalidModelFileError("This is not a GGUF model file (it does not start with GGUF).")
    (version,) = struct.unpack("<I", _read(handle, 4))
    if version not in SUPPORTED_VERSIONS:
        if version.to_bytes(4, "little") in {v.to_bytes(4, "big") for v in SUPPORTED_VERSIONS}:
            raise InvalidModelFileError(
                "This GGUF file is big-endian; llama.cpp here reads little-endian."
            )
        raise InvalidModelFileError(
            f"GGUF version {version} is not one this llama.cpp reads (2 or 3)."
        )
    tensor_count, key_count = struct.unpack("<QQ", _read(handle, 16))
    if tensor_count > _MAX_TENSORS or key_count > _MAX_KEYS:
        raise InvalidModelFileError(
            f"The GGUF header claims {tensor_count} tensors and {key_count} metadata keys: corrupt."
        )
    metadata, lengths = sink if sink is not None else ({}, {})
    for _ in range(key_count):
        key = _string(handle)
        (kind,) = struct.unpack("<I", _read(handle, 4))
        if kind == _ARRAY:
            (element_kind,) = struct.unpack("<I", _read(handle, 4))
            (count,) = struct.unpack("<Q", _read(handle, 8))
            if count > _MAX_ARRAY:
                raise InvalidModelFileError(
                    f"The GGUF array {key!r} claims {count} items: corrupt."
                )
            _skip_array(handle, element_kind, count, key)
            lengths[key] = count
        else:
            metadata[key] = _value(handle, kind, key)
    ends: list[int] = []
    if with_tensors:
        for _ in range(tensor_count):
            ends.append(_tensor_end(handle))
    return GgufInfo(version, tensor_count, dict(metadata), dict(lengths)), ends


def _tensor_end(handle: BinaryIO) -> int:
    name = _string(handle)
    dims: int
    (dims,) = struct.unpack("<I", _read(handle, 4))
    if not 0 < dims <= _MAX_DIMS:
        raise InvalidModelFileError(f"Tensor {name!r} has {dims} dimensions: corrupt header.")
    shape = struct.unpack(f"<{dims}Q", _read(handle, 8 * dims))
    kind: int
    offset: int
    kind, offset = struct.unpack("<IQ", _read(handle, 12))
    elements = 1
    for extent in shape:
        elements *= extent
    block = _TYPE_SIZES.get(kind)
    if block is None:
        return offset
    per_block, block_bytes = block
    return offset + -(-elements // per_block) * block_bytes


def _value(handle: BinaryIO, kind: int, key: str) -> Scalar:
    if kind == _STRING:
        return _string(handle)
    scalar = _SCALARS.get(kind)
    if scalar is None:
        raise InvalidModelFileError(f"The GGUF key {key!r} has an unknown value type {kind}.")
    value: Scalar = struct.unpack(scalar, _read(handle, struct.calcsize(scalar)))[0]
    return value


def _skip_array(handle: BinaryIO, kind: int, count: int, key: str) -> None:
    """Step over an array (the tokenizer's are large) without decoding its items."""
    scalar = _SCALARS.get(kind)
    if scalar is not None:
        _skip(handle, struct.calcsize(scalar) * count)
    elif kind == _STRING:
        for _ in range(count):
            (length,) = struct.unpack("<Q", _read(handle, 8))
            if length > _MAX_STRING:
                raise InvalidModelFileError(f"A GGUF string claims {length} bytes: corrupt header.")
            _skip(handle, length)
    elif kind == _ARRAY:
        raise InvalidModelFileError(f"The GGUF array {key!r} nests arrays, which GGUF does not.")
    else:
        raise InvalidModelFileError(f"The GGUF array {key!r} has an unknown item type {kind}.")


def _skip(handle: BinaryIO, count: int) -> None:
    if count and len(handle.read(count)) < count:
        raise _TruncatedError


def _string(handle: BinaryIO) -> str:
    (length,) = struct.unpack("<Q", _read(handle, 8))
    if length > _MAX_STRING:
        raise InvalidModelFileError(f"A GGUF string claims {length} bytes: corrupt header.")
    return _read(handle, length).decode("utf-8", errors="replace")


def _read(handle: BinaryIO, count: int) -> bytes:
    data = handle.read(count)
    if len(data) < count:
        raise _TruncatedError
    return data
