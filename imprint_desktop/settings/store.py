"""The settings store: validated values from defaults, the TOML file and the environment.

Rules, in the order they matter to a person:

* Nothing a person wrote is lost. The file is edited round-trip with tomlkit, so comments,
  formatting, unknown and retired keys (``chat.max_tool_iters``) survive every save. A file that
  does not parse is copied to ``config.toml.broken-<time>`` before it is ever replaced.
* A bad file never stops the app. Keys whose values are invalid fall back to their defaults and are
  reported as :class:`Problem` entries naming the key and the reason.
* Only overrides are stored; resetting a key removes it from the file.
* Writes are atomic (temporary file in the same folder, fsync, rename). When a write fails (a full
  disk, a read-only folder) the previous file is untouched and :class:`SettingsWriteError` says so.
* ``IMPRINT_<SECTION>_<NAME>`` environment variables win over the file for as long as they are set.

Secrets are declared in the schema but never pass through this store: see :mod:`.secrets`.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from imprint_desktop.core import paths
from imprint_desktop.core.errors import SettingsWriteError, SettingValueError
from imprint_desktop.settings import schema
from imprint_desktop.settings.schema import Setting, Value

if TYPE_CHECKING:
    # tomlkit and the typed snapshot are loaded when needed: `imprint settings get` without a
    # settings file needs neither (issue 28).
    import tomlkit

    from imprint_desktop.core.config import Config

log = logging.getLogger(__name__)

#: Version of the file layout, written at the top of every file Imprint saves.
SCHEMA_VERSION = 1
_VERSION_KEY = "schema_version"


class Source(enum.Enum):
    """Where an effective value comes from."""

    DEFAULT = "default"
    FILE = "file"
    ENV = "env"


@dataclass(frozen=True)
class Problem:
    """Something in the file or the environment that could not be used, in words for a person."""

    key: str | None  # None for a problem with the file as a whole
    message: str


Listener = Callable[[frozenset[str]], None]


class SettingsStore:
    """Effective settings for one config file and one environment.

    Not thread-safe: it belongs to the GUI thread (or the CLI). Hand other threads a
    :meth:`config`, the typed snapshot.
    """

    def __init__(self, path: Path | None = None, environ: Mapping[str, str] | None = None) -> None:
        self.path = path if path is not None else paths.config_file()
        self._environ = environ if environ is not None else os.environ
        self._file: dict[str, Value] = {}
        self._env: dict[str, Value] = {}
        self._problems: list[Problem] = []
        self._listeners: list[Listener] = []
        self.reload()

    # --- reading -----------------------------------------------------------------------------

    def reload(self) -> None:
        """Read the file and the environment again."""
        self._problems = []
        document = self._read_document(report=True)
        self._file = self._overrides_in(document) if document is not None else {}
        if document is not None:
            _log_layout_notes(document, self.path)
        self._env = self._environment_overrides()

    @property
    def problems(self) -> tuple[Problem, ...]:
        """What could not be used when the settings were last read."""
        return tuple(self._problems)

    def get(self, key: str) -> Value:
        """The effective value of a (non-secret) setting."""
        setting = schema.get(key)
        if key in self._env:
            return self._env[key]
        if key in self._file:
            return self._file[key]
        if setting.default is None:
            raise SettingValueError(key, "is a secret; read it from the keyring")
        return setting.default

    def source(self, key: str) -> Source:
        schema.get(key)
        if key in self._env:
            return Source.ENV
        if key in self._file:
            return Source.FILE
        return Source.DEFAULT

    def saved_value(self, key: str) -> Value:
        """The value without environment overrides: what the file says, or the default."""
        setting = schema.get(key)
        value = self._file.get(key, setting.default)
        if value is None:
            raise SettingValueError(key, "is a secret; read it from the keyring")
        return value

    def config(self) -> Config:
        """Every effective non-secret value, typed and frozen: safe to hand to another thread."""
        from imprint_desktop.core.config import Config  # noqa: PLC0415 - see the imports

        return Config.from_values(self.snapshot())

    def snapshot(self) -> Mapping[str, Value]:
        """Every effective non-secret value by its key, frozen (what :meth:`config` is made of)."""
        return MappingProxyType(
            {
                setting.key: self.get(setting.key)
                for setting in schema.SETTINGS
                if not setting.secret
            }
        )

    # --- writing -----------------------------------------------------------------------------

    def set(self, key: str, value: object) -> None:
        """Validate ``value`` and save it as an override."""
        self.update({key: value})

    def set_text(self, key: str, text: str) -> None:
        """Parse text typed by a person, validate it and save it."""
        self.update({key: schema.get(key).parse(text)})

    def reset(self, key: str) -> None:
        """Remove the override of ``key``: the default applies again."""
        self.update({key: None})

    def reset_all(self) -> None:
        """Remove every override Imprint knows; unknown and retired keys are left alone."""
        self.update({setting.key: None for setting in schema.SETTINGS if not setting.secret})

    def update(self, changes: Mapping[str, object | None]) -> None:
        """Apply several changes in one atomic write; ``None`` resets a key.

        Everything is validated before anything is written, so a bad value changes nothing.
        A value equal to the default is stored as no override at all.
        """
        validated: dict[str, Value | None] = {}
        for key, value in changes.items():
            setting = schema.get(key)
            if value is None:
                validated[key] = None
                continue
            canonical = setting.coerce(value)
            validated[key] = None if canonical == setting.default else canonical

        document = self._document_for_writing()
        for key, value in validated.items():
            _assign(document, schema.get(key), value)
        written = self._write(document)

        before = {key: self._file.get(key) for key in validated}
        problems = self._problems
        self._file = self._overrides_in(written)
        self._problems = problems  # what was reported on load stays the story of this session
        changed = frozenset(key for key in validated if self._file.get(key) != before[key])
        if changed:
            self._notify(changed)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(changed_keys)`` after every save; returns the way to unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    # --- internals ---------------------------------------------------------------------------

    def _read_document(self, *, report: bool) -> Mapping[str, Any] | None:
        """The parsed file (a tomlkit document), an empty mapping when there is none, or None
        when it is unreadable."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as error:
            if report:
                self._report(
                    None,
                    f"The settings file {self.path} could not be read "
                    f"({error.strerror}). Defaults are used.",
                )
            return None
        import tomlkit  # noqa: PLC0415 - see the imports
        import tomlkit.exceptions  # noqa: PLC0415

        try:
            return tomlkit.parse(raw.decode("utf-8"))
        except (UnicodeDecodeError, tomlkit.exceptions.ParseError) as error:
            if report:
                self._report(
                    None,
                    f"The settings file {self.path} is not valid TOML ({error}). Defaults are used "
                    "for every setting; the file is left as it is and backed up before anything "
                    "is saved over it.",
                )
            return None

    def _overrides_in(self, document: Mapping[str, Any]) -> dict[str, Value]:
        """The valid overrides in ``document``; what is invalid goes to :attr:`problems`."""
        overrides: dict[str, Value] = {}
        for section in schema.SECTIONS:
            table = document.get(section.name)
            if table is None:
                continue
            if not isinstance(table, Mapping):
                self._report(
                    section.name,
                    f"[{section.name}] must be a table of settings; its defaults are used.",
                )
                continue
            for setting in schema.in_section(section.name):
                if setting.name not in table:
                    continue
                if setting.secret:
                    self._report(
                        setting.key,
                        f"{setting.key} in the settings file is ignored: "
                        "API keys are kept only in the system keyring. Remove it from "
                        "the file and set it in Preferences.",
                    )
                    continue
                try:
                    overrides[setting.key] = setting.coerce(_plain(table[setting.name]))
                except SettingValueError as error:
                    self._report(
                        setting.key,
                        f"{error.key} {error.reason} in the settings file; "
                        f"the default ({_shown(setting)}) is used instead.",
                    )
        return overrides

    def _environment_overrides(self) -> dict[str, Value]:
        overrides: dict[str, Value] = {}
        for setting in schema.SETTINGS:
            if setting.secret or setting.env_var not in self._environ:
                continue
            try:
                overrides[setting.key] = setting.parse(self._environ[setting.env_var])
            except SettingValueError as error:
                self._report(
                    setting.key,
                    f"{setting.env_var}: {setting.key} {error.reason}; "
                    "the environment variable is ignored.",
                )
        return overrides

    def _document_for_writing(self) -> tomlkit.TOMLDocument:
        """The file as it is on disk now (another process may have changed it), ready to edit.

        An unreadable file is backed up first and replaced by a fresh document.
        """
        import tomlkit  # noqa: PLC0415 - see the imports

        document = self._read_document(report=False)
        if isinstance(document, tomlkit.TOMLDocument):
            return document
        if document is not None:  # no file yet
            return tomlkit.document()
        import shutil  # noqa: PLC0415 - only a broken file needs it; reading settings stays light

        backup = self._backup_path()
        try:
            shutil.copy2(self.path, backup)
        except OSError as error:
            raise SettingsWriteError(
                f"The settings file {self.path} is unreadable and could not be backed up "
                f"({error.strerror}); nothing was saved."
            ) from error
        log.warning("unreadable settings file %s backed up to %s", self.path, backup)
        self._report(None, f"The unreadable settings file was kept as {backup}.")
        return tomlkit.document()

    def _backup_path(self) -> Path:
        import datetime as dt  # noqa: PLC0415 - as above

        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        candidate = self.path.with_name(f"{self.path.name}.broken-{stamp}")
        counter = 1
        while candidate.exists():
            counter += 1
            candidate = self.path.with_name(f"{self.path.name}.broken-{stamp}-{counter}")
        return candidate

    def _write(self, document: tomlkit.TOMLDocument) -> tomlkit.TOMLDocument:
        """Save ``document`` atomically; returns what was written, parsed again."""
        import tomlkit  # noqa: PLC0415 - see the imports

        text = tomlkit.dumps(document)
        if _VERSION_KEY not in document:
            text = _with_version_line(text)
        try:
            atomic_write_text(self.path, text)
        except OSError as error:
            raise SettingsWriteError(
                f"Could not save settings to {self.path}: {error.strerror or error}. "
                "The previous settings file is unchanged."
            ) from error
        return tomlkit.parse(text)

    def _report(self, key: str | None, message: str) -> None:
        log.warning("%s", message)
        self._problems.append(Problem(key, message))

    def _notify(self, changed: frozenset[str]) -> None:
        for listener in list(self._listeners):
            listener(changed)


def _with_version_line(text: str) -> str:
    """``text`` with the layout version added after any leading comment block."""
    lines = text.splitlines(keepends=True)
    position = 0
    while position < len(lines) and (
        not lines[position].strip() or lines[position].lstrip().startswith("#")
    ):
        position += 1
    version_line = f"{_VERSION_KEY} = {SCHEMA_VERSION}\n"
    rest = "".join(lines[position:])
    separator = "\n" if rest and not rest.startswith("\n") else ""
    return "".join(lines[:position]) + version_line + separator + rest


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that readers see the old file or the new one, never half.

    The text goes to a temporary file in the same folder, is flushed to disk, then renamed over the
    target. Any failure removes the temporary file and leaves the target untouched.
    """
    import shutil  # noqa: PLC0415 - writing only: `imprint settings get` never loads them
    import tempfile  # noqa: PLC0415

    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
    )
    staged = Path(temporary)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            shutil.copymode(path, staged)
        staged.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            staged.unlink()
        raise
    _fsync_folder(path.parent)


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable where the platform allows it (not on Windows)."""
    if os.name != "posix":
        return
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _assign(document: tomlkit.TOMLDocument, setting: Setting, value: Value | None) -> None:
    import tomlkit  # noqa: PLC0415 - see the imports
    from tomlkit.items import Table  # noqa: PLC0415

    table = document.get(setting.section)
    if value is None:
        if isinstance(table, Table) and setting.name in table:
            del table[setting.name]
            if len(table) == 0 and "#" not in table.as_string():
                del document[setting.section]  # an empty table Imprint made; comments keep it
        return
    if not isinstance(table, Table):
        if table is not None:  # a broken non-table entry: replace it, it was reported on load
            del document[setting.section]
        table = tomlkit.table()
        document[setting.section] = table
    table[setting.name] = value


def _log_layout_notes(document: Mapping[str, Any], path: Path) -> None:
    """Log what is kept but not used: a newer layout, retired keys."""
    version = document.get(_VERSION_KEY)
    if isinstance(version, int) and version > SCHEMA_VERSION:
        log.warning("%s was written by a newer Imprint (layout %s)", path, version)
    for key in schema.RETIRED_KEYS:
        section_name, _, name = key.partition(".")
        table = document.get(section_name)
        if isinstance(table, Mapping) and name in table:
            log.info("%s is no longer used and is ignored (kept in the file)", key)


def _shown(setting: Setting) -> str:
    return setting.format(setting.default) or "empty"


def _plain(item: Any) -> object:
    """A tomlkit item as a plain Python value."""
    unwrap = getattr(item, "unwrap", None)
    return unwrap() if callable(unwrap) else item
