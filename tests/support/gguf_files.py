"""Bad and hostile GGUF files for the local provider tests, written with the ``gguf`` package.

Each helper writes a real file on disk, so the loader meets exactly what a person might pick: a
truncated download, random bytes named ``.gguf``, a header naming an architecture nobody knows, or a
working model whose chat template tries to break out of the sandbox.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

import gguf
import numpy as np


def rewrite_gguf(source: Path, target: Path, strings: Mapping[str, str]) -> Path:
    """Copy the model at ``source`` to ``target`` with the string metadata ``strings`` replaced
    (or added); tensors are copied byte for byte."""
    reader = gguf.GGUFReader(source)
    architecture = str(reader.get_field(gguf.Keys.General.ARCHITECTURE).contents())
    writer = gguf.GGUFWriter(target, architecture)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # written by the writer itself
        if field.name in strings:
            continue
        kind = field.types[0]
        sub_kind = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), kind, sub_type=sub_kind)
    for key, value in strings.items():
        writer.add_string(key, value)
    for tensor in reader.tensors:
        writer.add_tensor_info(
            tensor.name,
            tensor.data.shape,
            tensor.data.dtype,
            tensor.data.nbytes,
            tensor.tensor_type,
        )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for tensor in reader.tensors:
        writer.write_tensor_data(tensor.data, tensor_endianess=reader.endianess)
    writer.close()
    return target


def unknown_architecture(target: Path) -> Path:
    """A well-formed, complete GGUF file (one small tensor) for an architecture llama.cpp does not
    know."""
    writer = gguf.GGUFWriter(target, "imprint-unknown-arch")
    writer.add_name("Mystery model")
    writer.add_block_count(2)
    writer.add_context_length(512)
    writer.add_embedding_length(64)
    writer.add_head_count(4)
    writer.add_tensor("token_embd.weight", np.zeros((8, 64), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return target


def truncated_copy(source: Path, target: Path, fraction: float = 0.5) -> Path:
    """The first ``fraction`` of ``source``: an interrupted download or copy."""
    size = int(source.stat().st_size * fraction)
    with source.open("rb") as reader, target.open("wb") as writer:
        shutil.copyfileobj(_limited(reader, size), writer)
    return target


def random_bytes(target: Path, size: int = 1 << 20) -> Path:
    target.write_bytes(os.urandom(size))
    return target


class _limited:  # noqa: N801 - a tiny file-like adapter, used like a function
    def __init__(self, handle: object, size: int) -> None:
        self._handle = handle
        self._left = size

    def read(self, count: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        wanted = self._left if count < 0 else min(count, self._left)
        data: bytes = self._handle.read(wanted)  # type: ignore[attr-defined]
        self._left -= len(data)
        return data
