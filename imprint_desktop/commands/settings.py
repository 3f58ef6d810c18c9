"""``imprint settings``: list, read, change and reset settings from a terminal.

Everything shown comes from the schema; values are validated exactly as the preferences dialog
validates them. Exit codes: 0 done, 1 the change could not be saved, 2 bad usage or a bad value.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from imprint_desktop.core.errors import (
    SecretStoreError,
    SettingsError,
    SettingsWriteError,
    UnknownSettingError,
)
from imprint_desktop.settings import schema
from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore, Source

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


def configure(parser: argparse.ArgumentParser) -> None:
    """The arguments of this command (its one-line summary is in :mod:`imprint_desktop.cli`)."""
    parser.description = (
        "Read and change Imprint's settings. Values are validated against their "
        "declared type and bounds; API keys go to the system keyring."
    )
    parser.add_argument("--config", type=Path, help="settings file to use instead of the default")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = actions.add_parser("list", help="every setting with its value, default and source")
    listing.add_argument("--json", action="store_true", help="print one JSON object")

    getting = actions.add_parser("get", help="print one setting's value")
    getting.add_argument("key")

    setting = actions.add_parser("set", help="change a setting (use - as VALUE to read stdin)")
    setting.add_argument("key")
    setting.add_argument("value")

    resetting = actions.add_parser("reset", help="go back to the default")
    target = resetting.add_mutually_exclusive_group(required=True)
    target.add_argument("key", nargs="?")
    target.add_argument("--all", action="store_true", help="every setting (API keys are kept)")

    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    out, err = sys.stdout, sys.stderr
    store = SettingsStore(args.config) if args.config else SettingsStore()
    for problem in store.problems:
        print(f"warning: {problem.message}", file=err)
    secrets = SecretStore()
    try:
        if args.action == "list":
            return _list(store, secrets, as_json=args.json, out=out)
        if args.action == "get":
            return _get(store, secrets, args.key, out=out)
        if args.action == "set":
            return _set(store, secrets, args.key, args.value, out=out, err=err)
        return _reset(store, secrets, None if args.all else args.key, out=out, err=err)
    except (UnknownSettingError, SettingsWriteError, SecretStoreError) as error:
        print(f"imprint: {error}", file=err)
        return EXIT_USAGE if isinstance(error, UnknownSettingError) else EXIT_ERROR
    except SettingsError as error:
        print(f"imprint: {error}", file=err)
        return EXIT_USAGE


def _list(store: SettingsStore, secrets: SecretStore, *, as_json: bool, out: TextIO) -> int:
    rows = {setting.key: _describe(store, secrets, setting) for setting in schema.SETTINGS}
    if as_json:
        json.dump(rows, out, indent=2, ensure_ascii=False)
        out.write("\n")
        return EXIT_OK
    for section in schema.SECTIONS:
        print(f"[{section.name}] {section.title}", file=out)
        for setting in schema.in_section(section.name):
            row = rows[setting.key]
            shown = _shown_value(setting, row)
            notes = [str(row["source"])]
            if setting.bounds_text():
                notes.append(setting.bounds_text())
            if row["source"] != Source.DEFAULT.value and not setting.secret:
                notes.append(f"default {setting.format(setting.default) or '(empty)'}")
            if setting.restart:
                notes.append("needs restart")
            print(f"  {setting.key} = {shown}  ({'; '.join(notes)})", file=out)
            print(f"      {setting.description}", file=out)
        print(file=out)
    return EXIT_OK


def _describe(
    store: SettingsStore, secrets: SecretStore, setting: schema.Setting
) -> dict[str, object]:
    row: dict[str, object] = {
        "title": setting.title,
        "type": setting.kind.value,
        "value": None,
        "default": setting.default,
        "min": setting.minimum,
        "max": setting.maximum,
        "unit": setting.unit or None,
        "choices": list(setting.choice_values) or None,
        "description": setting.description,
        "source": Source.DEFAULT.value,
        "restart": setting.restart,
        "secret": setting.secret,
        "env": None if setting.secret else setting.env_var,
    }
    if setting.secret:
        # Never the value itself: only whether one is stored and where.
        try:
            stored = secrets.has(setting.key)
            row["stored"] = stored
            row["location"] = str(secrets.location(setting.key))
            row["source"] = "keyring" if stored else Source.DEFAULT.value
        except SecretStoreError as error:
            row["stored"] = None
            row["location"] = None
            row["error"] = str(error)
        return row
    row["value"] = store.get(setting.key)
    row["source"] = store.source(setting.key).value
    return row


def _shown_value(setting: schema.Setting, row: dict[str, object]) -> str:
    if setting.secret:
        if row.get("stored"):
            return f"(stored in {row['location']})"
        return "(not set)" if row.get("stored") is False else "(keyring unavailable)"
    value = row["value"]
    assert isinstance(value, int | float | str)
    text = setting.format(value)
    if setting.kind in (schema.Kind.TEXT, schema.Kind.STR, schema.Kind.FILE, schema.Kind.FOLDER):
        return json.dumps(text, ensure_ascii=False)
    return text


def _get(store: SettingsStore, secrets: SecretStore, key: str, *, out: TextIO) -> int:
    setting = schema.get(key)
    if setting.secret:
        stored = secrets.has(key)
        where = secrets.location(key)
        print(f"(stored in {where})" if stored else "(not set)", file=out)
        return EXIT_OK
    print(setting.format(store.get(key)), file=out)
    return EXIT_OK


def _set(
    store: SettingsStore, secrets: SecretStore, key: str, value: str, *, out: TextIO, err: TextIO
) -> int:
    setting = schema.get(key)
    if setting.secret:
        secret = sys.stdin.readline().rstrip("\r\n") if value == "-" else value
        if value != "-":
            print(
                "note: a secret on the command line can end up in your shell history; "
                f"`imprint settings set {key} -` reads it from standard input instead.",
                file=err,
            )
        secrets.set(key, secret)
        action = "Stored" if secret else "Removed"
        print(f"{action} {key} in {secrets.location(key)}.", file=out)
        return EXIT_OK
    store.set_text(key, value)
    if store.source(key) is Source.ENV:
        print(
            f"note: {setting.env_var} is set and overrides the saved value while it is set.",
            file=err,
        )
    print(f"{key} = {setting.format(store.saved_value(key))}", file=out)
    if setting.restart:
        print("Restart Imprint for this change to take effect.", file=out)
    return EXIT_OK


def _reset(
    store: SettingsStore, secrets: SecretStore, key: str | None, *, out: TextIO, err: TextIO
) -> int:
    if key is None:
        store.reset_all()
        print("Every setting is back to its default (API keys in the keyring were kept).", file=out)
        return EXIT_OK
    setting = schema.get(key)
    if setting.secret:
        secrets.delete(key)
        print(f"Removed {key} from the system keyring.", file=out)
        return EXIT_OK
    store.reset(key)
    if store.source(key) is Source.ENV:
        print(f"note: {setting.env_var} still overrides {key} while it is set.", file=err)
    print(f"{key} = {setting.format(store.saved_value(key))} (default)", file=out)
    return EXIT_OK
