"""What a GGUF file name says: its quantization, and whether it is one part of a split model.

Quantization names follow llama.cpp's ``llama-quantize`` (``Q4_K_M``, ``IQ3_XXS``, ``F16`` …) and
people put them anywhere in a name with ``-``, ``.`` or ``_`` around them. Split models are stored
as ``name-00001-of-00003.gguf`` …; they are one model to a person, so they are grouped into one
:class:`ModelFiles` that is listed, sized, downloaded and removed as a whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_QUANT = re.compile(
    r"(?:^|[-._])("
    r"I?Q[1-8](?:_[0-9])*(?:_K)?(?:_(?:XXS|XS|S|M|L|XL|NL))?(?:_[0-9])*"
    r"|TQ[12]_0|MXFP4(?:_MOE)?|BF16|F16|FP16|F32|FP32"
    r")(?=$|[-._])",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"^(?P<stem>.+)-(?P<part>\d{5})-of-(?P<total>\d{5})\.gguf$", re.IGNORECASE)


def quantization(filename: str) -> str:
    """The quantization named in ``filename`` (upper case), or ``""`` when it names none."""
    base = filename.rsplit("/", 1)[-1]
    base = re.sub(r"\.gguf$", "", base, flags=re.IGNORECASE)
    split = _SPLIT.match(base + ".gguf")
    if split:
        base = split.group("stem")
    found = _QUANT.findall(base)
    return found[-1].upper() if found else ""


@dataclass(frozen=True)
class SplitName:
    stem: str
    part: int
    total: int


def split_name(filename: str) -> SplitName | None:
    """``name-00002-of-00003.gguf`` → (``name``, 2, 3); None for a file that is not a part."""
    match = _SPLIT.match(filename)
    if not match:
        return None
    part, total = int(match.group("part")), int(match.group("total"))
    if not 1 <= part <= total:
        return None
    return SplitName(match.group("stem"), part, total)


def is_gguf(filename: str) -> bool:
    return filename.lower().endswith(".gguf")


@dataclass(frozen=True)
class ModelFiles:
    """One model as a person sees it: a single GGUF file, or every part of a split one."""

    name: str  # the file name, or ``stem.gguf`` (without the part suffix) for a split model
    files: tuple[str, ...]  # repository paths in part order
    complete: bool = True  # False when parts of a split model are missing from the listing

    @property
    def first(self) -> str:
        """The file llama.cpp is pointed at (it finds the other parts beside it)."""
        return self.files[0]

    @property
    def is_split(self) -> bool:
        return len(self.files) > 1 or split_name(self.files[0].rsplit("/", 1)[-1]) is not None


def group_gguf_files(paths: Iterable[str]) -> list[ModelFiles]:
    """Group repository paths into models: single GGUF files and complete or partial split sets.

    Non-GGUF paths are ignored; the order is the name order of the first file of each model.
    """
    singles: list[ModelFiles] = []
    splits: dict[tuple[str, str, int], dict[int, str]] = {}
    for path in paths:
        if not is_gguf(path):
            continue
        folder, _, base = path.rpartition("/")
        split = split_name(base)
        if split is None:
            singles.append(ModelFiles(path, (path,)))
            continue
        splits.setdefault((folder, split.stem, split.total), {})[split.part] = path
    grouped = list(singles)
    for (folder, stem, total), parts in splits.items():
        ordered = tuple(parts[number] for number in sorted(parts))
        name = f"{folder}/{stem}.gguf" if folder else f"{stem}.gguf"
        grouped.append(ModelFiles(name, ordered, complete=len(parts) == total))
    grouped.sort(key=lambda model: model.first.lower())
    return grouped
