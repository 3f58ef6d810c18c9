"""What one declared setting is, and how a value of it is checked, read and written.

:mod:`.schema` declares every setting as a :class:`Setting`; this module says what a declaration
holds (the key, its :class:`Kind`, default, bounds, a title and a description for people, the
flags ``restart`` and ``secret``) and how every view handles a value of it the same way.

Values are validated in two ways. :meth:`Setting.coerce` accepts a Python value as TOML or a
widget gives it (an ``int`` for an integer setting, never a ``bool``); :meth:`Setting.parse`
accepts the text a person types on the command line or puts in an environment variable. Both raise
:class:`~imprint_desktop.core.errors.SettingValueError` with a message that names the key and, for
numbers, the bounds. A text setting may add a check of its own (:mod:`.checks`).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from imprint_desktop.core.errors import SettingValueError

Value = int | float | bool | str


class Kind(enum.Enum):
    """What a setting holds, which decides its validation and its editor."""

    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    STR = "str"  # one line of text
    TEXT = "text"  # several lines of text
    CHOICE = "choice"  # one of ``choices``
    FILE = "file"  # a path to a file; empty means "not set"
    FOLDER = "folder"  # a path to a folder; empty means "not set"
    SECRET = "secret"  # kept in the OS keyring, never in the config file


@dataclass(frozen=True)
class Section:
    """A group of settings: one page of the preferences dialog, one TOML table."""

    name: str
    title: str
    description: str


@dataclass(frozen=True)
class Setting:
    """One declared setting. See the module docstring."""

    key: str
    kind: Kind
    default: Value | None
    title: str
    description: str
    minimum: float | None = None
    maximum: float | None = None
    unit: str = ""
    choices: tuple[tuple[str, str], ...] = ()  # (value, title)
    #: An integer setting's value that people see and type as a word, e.g. ``(-1, "auto")``.
    word: tuple[int, str] | None = None
    restart: bool = False
    check: Callable[[str], str | None] | None = field(default=None, compare=False)

    @property
    def section(self) -> str:
        return self.key.partition(".")[0]

    @property
    def name(self) -> str:
        """The key inside its section's TOML table."""
        return self.key.partition(".")[2]

    @property
    def secret(self) -> bool:
        return self.kind is Kind.SECRET

    @property
    def env_var(self) -> str:
        """The environment variable that overrides this setting."""
        return "IMPRINT_" + self.key.upper().replace(".", "_")

    @property
    def choice_values(self) -> tuple[str, ...]:
        return tuple(value for value, _ in self.choices)

    def bounds_text(self) -> str:
        """The bounds in words, e.g. ``between 10 and 3600 s``; empty when unbounded."""
        if self.minimum is None or self.maximum is None:
            return ""
        unit = f" {self.unit}" if self.unit else ""
        if self.word is not None and self.word[0] == self.minimum:  # the word stands for it
            return f"{self.word[1]}, or between {_number(self.minimum + 1)} and " + (
                f"{_number(self.maximum)}{unit}"
            )
        return f"between {_number(self.minimum)} and {_number(self.maximum)}{unit}"

    def coerce(self, value: object) -> Value:
        """Validate a Python value (from TOML or an editor) and return it in canonical form."""
        if self.kind is Kind.SECRET:
            raise SettingValueError(self.key, "API keys are kept in the system keyring, not here")
        if self.kind is Kind.BOOL:
            if not isinstance(value, bool):
                raise SettingValueError(self.key, f"must be true or false (got {value!r})")
            return value
        if self.kind in (Kind.INT, Kind.FLOAT):
            if self.word is not None and isinstance(value, str) and value == self.word[1]:
                return self.word[0]  # the word as the settings file may hold it
            return self._coerce_number(value)
        return self._coerce_text(value)

    def _coerce_number(self, value: object) -> int | float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SettingValueError(self.key, f"must be a number (got {value!r})")
        if not math.isfinite(value):
            raise SettingValueError(self.key, f"must be a finite number (got {value!r})")
        if self.kind is Kind.INT:
            if isinstance(value, float) and not value.is_integer():
                raise SettingValueError(self.key, f"must be a whole number (got {value!r})")
            return int(self._check_bounds(value))
        return float(self._check_bounds(value))

    def _coerce_text(self, value: object) -> str:
        if not isinstance(value, str):
            raise SettingValueError(self.key, f"must be text (got {value!r})")
        if self.kind is Kind.CHOICE and value not in self.choice_values:
            allowed = ", ".join(self.choice_values)
            raise SettingValueError(self.key, f"must be one of {allowed} (got {value!r})")
        if self.kind is Kind.STR and ("\n" in value or "\r" in value):
            raise SettingValueError(self.key, "must be a single line")
        problem = self.check(value) if self.check is not None and value else None
        if problem:
            raise SettingValueError(self.key, problem)
        return value

    def parse(self, text: str) -> Value:
        """Validate text typed by a person (command line, environment variable)."""
        stripped = text.strip()
        if self.kind is Kind.BOOL:
            lowered = stripped.lower()
            if lowered in _TRUE_WORDS:
                return True
            if lowered in _FALSE_WORDS:
                return False
            raise SettingValueError(self.key, f"must be true or false (got {text!r})")
        if self.kind is Kind.INT:
            return self._parse_whole(stripped, text)
        if self.kind is Kind.FLOAT:
            try:
                real = float(stripped)
            except ValueError:
                raise SettingValueError(
                    self.key, f"must be a number {self.bounds_text()} (got {text!r})"
                ) from None
            return self.coerce(real)
        if self.kind in (Kind.FILE, Kind.FOLDER, Kind.STR):
            return self.coerce(stripped)
        return self.coerce(text)

    def _parse_whole(self, stripped: str, text: str) -> Value:
        if self.word is not None and stripped.lower() == self.word[1]:
            return self.word[0]
        try:
            number = int(stripped.replace("_", ""))
        except ValueError:
            what = "" if self.word is not None else "a whole number "  # "auto, or between …"
            raise SettingValueError(
                self.key, f"must be {what}{self.bounds_text()} (got {text!r})"
            ) from None
        return self.coerce(number)

    def format(self, value: Value | None) -> str:
        """A value as a person reads it (and as :meth:`parse` accepts it back)."""
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if self.word is not None and value == self.word[0]:
            return self.word[1]
        if isinstance(value, float):
            return _number(value)
        return str(value)

    def _check_bounds(self, number: float) -> float:
        low, high = self.minimum, self.maximum
        if low is not None and high is not None and not low <= number <= high:
            raise SettingValueError(self.key, f"must be {self.bounds_text()} (got {number!r})")
        return number


_TRUE_WORDS = frozenset({"true", "yes", "on", "1"})
_FALSE_WORDS = frozenset({"false", "no", "off", "0"})


def _number(value: float) -> str:
    """A number as people read it: 3600, 65,536, 0.2."""
    if not float(value).is_integer():
        return repr(float(value))
    whole = int(value)
    return f"{whole:,}" if abs(whole) >= 10_000 else str(whole)
