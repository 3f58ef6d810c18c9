"""The typed settings snapshot, generated from the schema into ``core/config.py``.

``core`` may not import ``settings`` (the import-linter layers), yet the research engine, the
providers and the workspace need the settings typed: ``config.chat.max_tokens`` rather than
``settings.get("chat.max_tokens", 2048)`` with a default repeated at every read. So the snapshot's
classes are written out from :data:`.schema.SETTINGS` into a module of ``core``, which is checked
in: ``python -m imprint_desktop.settings.codegen`` writes it, and a test fails when the checked-in
file is not what this module produces now. The generated classes carry no defaults: the schema is
the only place they live, and :meth:`.store.SettingsStore.config` fills a snapshot from the store.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from imprint_desktop.settings import schema
from imprint_desktop.settings.declaration import Kind, Section, Setting

#: Where the generated module is checked in.
TARGET = Path(__file__).resolve().parents[1] / "core" / "config.py"
COMMAND = "python -m imprint_desktop.settings.codegen"
_WIDTH = 100

_TYPES = {
    Kind.INT: "int",
    Kind.FLOAT: "float",
    Kind.BOOL: "bool",
    Kind.STR: "str",
    Kind.TEXT: "str",
    Kind.FILE: "str",
    Kind.FOLDER: "str",
}
_READERS = {
    Kind.INT: "read_int",
    Kind.FLOAT: "read_float",
    Kind.BOOL: "read_bool",
    Kind.STR: "read_str",
    Kind.TEXT: "read_str",
    Kind.FILE: "read_str",
    Kind.FOLDER: "read_str",
}

_HEADER = f'''\
"""The settings as one typed, frozen snapshot: ``config.chat.max_tokens``, never a key string.

Generated from settings/schema.py by ``{COMMAND}``; do not edit.

Every non-secret setting is a field of its section's class, typed by its kind; empty text means
"not set" for a file or a folder, as in the settings file. The classes have no defaults of their
own: defaults, bounds and checks live in the schema alone, and a :class:`Config` holds the values
the settings store produced (``SettingsStore.config()``). It is frozen, so it can be handed to
another thread as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from imprint_desktop.core.setting_values import (
    Value,
    read_bool,
    read_choice,
    read_float,
    read_int,
    read_str,
)

'''


_FROM_VALUES = '''
    @classmethod
    def from_values(cls, values: Mapping[str, object]) -> Config:
        """The snapshot of complete, validated values by key, as the store gives them.

        A missing key raises :class:`KeyError`, a value of the wrong kind :class:`TypeError` or
        :class:`ValueError`; bounds and checks are the store's (the schema's) to apply.
        """
        return cls(
'''

_AS_VALUES = '''        )

    def as_values(self) -> dict[str, Value]:
        """Every value by its key, in the schema's order (the settings a trace records)."""
        return {
'''


def render() -> str:
    """The text of ``core/config.py`` for the declarations as they are now."""
    parts = [_HEADER]
    choices = [setting for setting in _snapshot_settings() if setting.kind is Kind.CHOICE]
    for setting in choices:
        parts.append(f"{_choice_type(setting)} = Literal[{_quoted(setting.choice_values)}]\n")
    for setting in choices:
        constant, kind = _choice_constant(setting), _choice_type(setting)
        parts.append(f"{constant}: tuple[{kind}, ...] = ({_quoted(setting.choice_values)})\n")
    parts += [_section_class(section) for section in _sections()]
    parts.append(_config_class())
    return "".join(parts)


def _quoted(texts: tuple[str, ...]) -> str:
    return ", ".join(json.dumps(text) for text in texts)


def _snapshot_settings() -> list[Setting]:
    return [setting for setting in schema.SETTINGS if not setting.secret]


def _sections() -> list[Section]:
    return [
        section
        for section in schema.SECTIONS
        if any(not setting.secret for setting in schema.in_section(section.name))
    ]


def _class_name(section: Section) -> str:
    return section.name.capitalize() + "Config"


def _camel(setting: Setting) -> str:
    return "".join(word.capitalize() for word in setting.key.replace(".", "_").split("_"))


def _choice_type(setting: Setting) -> str:
    return _camel(setting)


def _choice_constant(setting: Setting) -> str:
    return "_" + setting.key.replace(".", "_").upper()


def _field_type(setting: Setting) -> str:
    return _choice_type(setting) if setting.kind is Kind.CHOICE else _TYPES[setting.kind]


def _docstring(text: str, indent: str) -> str:
    """A one-line docstring, or a wrapped one when it does not fit the line length."""
    line = f'{indent}"""{text}"""'
    if len(line) <= _WIDTH:
        return line + "\n"
    body = textwrap.fill(text, _WIDTH, initial_indent=indent, subsequent_indent=indent)
    return f'{indent}"""{body.removeprefix(indent)}\n{indent}"""\n'


def _field_doc(setting: Setting) -> str:
    text = setting.title
    if setting.unit:
        text += f" ({setting.unit})"
    if setting.kind in (Kind.FILE, Kind.FOLDER):
        text += f" ({setting.kind.value} path; empty: not set)"
    return text + "."


def _section_class(section: Section) -> str:
    lines = [
        "\n\n@dataclass(frozen=True, slots=True, kw_only=True)\n",
        f"class {_class_name(section)}:\n",
        _docstring(f"{section.title} (``[{section.name}]``). {section.description}", "    "),
    ]
    for setting in schema.in_section(section.name):
        if setting.secret:
            continue
        lines.append(f"\n    {setting.name}: {_field_type(setting)}\n")
        lines.append(_docstring(_field_doc(setting), "    "))
    return "".join(lines)


def _reader_call(setting: Setting) -> str:
    if setting.kind is Kind.CHOICE:
        return f'read_choice(values, "{setting.key}", {_choice_constant(setting)})'
    return f'{_READERS[setting.kind]}(values, "{setting.key}")'


def _reader_line(setting: Setting) -> str:
    """One field of ``from_values``, its call split over lines as the formatter would when it
    does not fit the line length."""
    indent = " " * 16
    line = f"{indent}{setting.name}={_reader_call(setting)},\n"
    if len(line) - 1 <= _WIDTH:
        return line
    reader, arguments = _reader_call(setting).split("(", 1)
    return f"{indent}{setting.name}={reader}(\n{indent}    {arguments[:-1]}\n{indent}),\n"


def _config_class() -> str:
    lines = [
        "\n\n@dataclass(frozen=True, slots=True, kw_only=True)\n",
        "class Config:\n",
        '    """Every non-secret setting, by section; see the module docstring."""\n',
        "\n",
    ]
    for section in _sections():
        lines.append(f"    {section.name}: {_class_name(section)}\n")
    lines.append(_FROM_VALUES)
    for section in _sections():
        lines.append(f"            {section.name}={_class_name(section)}(\n")
        for setting in schema.in_section(section.name):
            if not setting.secret:
                lines.append(_reader_line(setting))
        lines.append("            ),\n")
    lines.append(_AS_VALUES)
    for setting in _snapshot_settings():
        lines.append(f'            "{setting.key}": self.{setting.section}.{setting.name},\n')
    lines.append("        }\n")
    return "".join(lines)


def main() -> None:
    TARGET.write_text(render(), encoding="utf-8")
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
