"""The settings reference in Markdown, generated from the schema.

``python -m imprint_desktop.settings.docs > docs/settings.md`` writes it; a test keeps the committed
file in step with the declarations.
"""

from __future__ import annotations

from imprint_desktop.settings import schema


def render_markdown() -> str:
    lines = [
        "# Settings reference",
        "",
        "Generated from `imprint_desktop/settings/schema.py` by "
        "`python -m imprint_desktop.settings.docs`; do not edit by hand.",
        "",
        "Settings live in `config.toml` in the platform's config folder (only the values you "
        "change are stored). Change them in *Edit → Preferences*, with `imprint settings set KEY "
        "VALUE`, or for one run with an environment variable `IMPRINT_<KEY>` (upper case, `.` → "
        "`_`). API keys are kept in the system keyring, never in the file.",
    ]
    for section in schema.SECTIONS:
        lines += ["", f"## {section.title} (`[{section.name}]`)", "", section.description, ""]
        lines += ["| key | default | allowed | description |", "| --- | --- | --- | --- |"]
        for setting in schema.in_section(section.name):
            lines.append(
                f"| `{setting.key}` | {_default(setting)} | {_allowed(setting)} | "
                f"**{setting.title}.** {setting.description}{_flags(setting)} |"
            )
    return "\n".join(lines) + "\n"


def _default(setting: schema.Setting) -> str:
    if setting.secret:
        return "not set"
    shown = setting.format(setting.default)
    return f"`{shown}`" if shown else "empty"


def _allowed(setting: schema.Setting) -> str:
    if setting.bounds_text():
        return setting.bounds_text().replace("between ", "", 1).replace(" and ", " – ", 1)
    if setting.choices:
        return ", ".join(f"`{value}`" for value in setting.choice_values)
    return {
        schema.Kind.BOOL: "`true`, `false`",
        schema.Kind.FILE: "a file path",
        schema.Kind.FOLDER: "a folder path",
        schema.Kind.SECRET: "kept in the keyring",
    }.get(setting.kind, "text")


def _flags(setting: schema.Setting) -> str:
    notes = []
    if setting.restart:
        notes.append("Takes effect after a restart.")
    if not setting.secret:
        notes.append(f"Env: `{setting.env_var}`.")
    return " " + " ".join(notes) if notes else ""


if __name__ == "__main__":
    print(render_markdown(), end="")
