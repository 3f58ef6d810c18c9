"""The settings declarations themselves: complete, consistent and as DESIGN §3 specifies."""

from __future__ import annotations

import pytest

from imprint_desktop.core.errors import SettingValueError, UnknownSettingError
from imprint_desktop.settings import schema
from imprint_desktop.settings.schema import Kind

NON_SECRET = [setting for setting in schema.SETTINGS if not setting.secret]


@pytest.mark.parametrize("setting", NON_SECRET, ids=lambda setting: setting.key)
def test_every_default_validates(setting: schema.Setting) -> None:
    assert setting.coerce(setting.default) == setting.default
    assert setting.parse(setting.format(setting.default)) == setting.default


@pytest.mark.parametrize("setting", schema.SETTINGS, ids=lambda setting: setting.key)
def test_every_setting_is_documented(setting: schema.Setting) -> None:
    assert setting.title.strip() and setting.title[0].isupper()
    assert len(setting.description) >= 20 and setting.description.endswith(".")
    assert setting.section in {section.name for section in schema.SECTIONS}


@pytest.mark.parametrize(
    "setting",
    [s for s in schema.SETTINGS if s.kind in (Kind.INT, Kind.FLOAT)],
    ids=lambda setting: setting.key,
)
def test_every_number_is_bounded_around_its_default(setting: schema.Setting) -> None:
    assert setting.minimum is not None and setting.maximum is not None
    assert setting.minimum <= setting.default <= setting.maximum  # type: ignore[operator]


def test_keys_are_unique_and_every_section_has_settings() -> None:
    keys = [setting.key for setting in schema.SETTINGS]
    assert len(keys) == len(set(keys))
    for section in schema.SECTIONS:
        assert list(schema.in_section(section.name)), section.name


def test_choices_have_titles_and_include_the_default() -> None:
    for setting in schema.SETTINGS:
        if setting.kind is Kind.CHOICE:
            assert setting.default in setting.choice_values
            assert all(title for _, title in setting.choices)


@pytest.mark.parametrize(
    ("key", "default", "low", "high"),
    [
        ("chat.research_timeout_sec", 300, 10, 3600),
        ("chat.research_token_budget", 65536, 1024, 2_000_000),
        ("chat.research_no_progress_rounds", 4, 2, 20),
        ("chat.max_tokens", 2048, 64, 32768),
    ],
)
def test_research_settings_are_exactly_the_contract(
    key: str, default: int, low: int, high: int
) -> None:
    setting = schema.get(key)
    assert (setting.kind, setting.default, setting.minimum, setting.maximum) == (
        Kind.INT,
        default,
        low,
        high,
    )


def test_contract_keys_are_declared() -> None:
    contract = """chat.research_max_output_tokens chat.temperature chat.system_prompt model.provider
    model.path model.n_ctx model.n_threads model.n_gpu_layers model.n_batch model.tool_call_grammar
    remote.base_url remote.model remote.context_window workspace.path workspace.notes_folder
    tools.max_result_chars tools.fetch_url_enabled downloads.models_dir network.proxy
    network.ca_bundle ui.theme""".split()
    for key in contract:
        schema.get(key)
    assert schema.get("model.provider").choice_values == ("local", "remote")


def test_the_api_key_is_the_only_secret_and_has_no_default() -> None:
    secrets = [setting for setting in schema.SETTINGS if setting.secret]
    assert [setting.key for setting in secrets] == ["remote.api_key"]
    assert secrets[0].default is None
    with pytest.raises(SettingValueError):
        secrets[0].coerce("sk-anything")


def test_retired_key_is_not_a_setting() -> None:
    assert "chat.max_tool_iters" in schema.RETIRED_KEYS
    with pytest.raises(UnknownSettingError):
        schema.get("chat.max_tool_iters")


def test_env_var_names_follow_the_rule() -> None:
    assert schema.get("chat.research_timeout_sec").env_var == "IMPRINT_CHAT_RESEARCH_TIMEOUT_SEC"


def test_out_of_bounds_message_names_key_and_bounds() -> None:
    with pytest.raises(SettingValueError) as raised:
        schema.get("chat.research_timeout_sec").parse("5")
    assert str(raised.value) == "chat.research_timeout_sec: must be between 10 and 3600 s (got 5)"
    with pytest.raises(SettingValueError, match="between 1024 and 2,000,000 tokens"):
        schema.get("chat.research_token_budget").coerce(10**9)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("chat.research_timeout_sec", True),  # a bool is not a number here
        ("chat.research_timeout_sec", 30.5),
        ("chat.research_timeout_sec", "30"),
        ("chat.temperature", float("nan")),
        ("chat.temperature", 2.5),
        ("model.tool_call_grammar", 1),
        ("model.provider", "cloud"),
        ("remote.base_url", "ftp://host/v1"),
        ("remote.base_url", "localhost:8080"),
        ("remote.base_url", "http://[::1/v1"),  # urlsplit raises: a message, not a crash
        ("remote.base_url", "http://:8080/v1"),  # no host
        ("remote.base_url", "http://127.0.0.1:99999/v1"),  # the provider would refuse the port
        ("network.proxy", "proxy:3128"),
        ("workspace.notes_folder", "../outside"),
        ("workspace.notes_folder", "/etc"),
        ("workspace.notes_folder", "C:\\notes"),
        ("remote.model", "two\nlines"),
    ],
)
def test_bad_values_are_refused(key: str, value: object) -> None:
    with pytest.raises(SettingValueError) as raised:
        schema.get(key).coerce(value)
    assert raised.value.key == key


@pytest.mark.parametrize(
    ("key", "text", "expected"),
    [
        ("model.tool_call_grammar", "yes", True),
        ("tools.fetch_url_enabled", "OFF", False),
        ("chat.temperature", " 0.7 ", 0.7),
        ("chat.research_token_budget", "100_000", 100_000),
        ("model.n_gpu_layers", "-1", -1),
        ("network.proxy", "socks5://127.0.0.1:1080", "socks5://127.0.0.1:1080"),
        ("workspace.notes_folder", "research/notes", "research/notes"),
        ("remote.base_url", "https://api.example.org/v1", "https://api.example.org/v1"),
    ],
)
def test_text_is_parsed(key: str, text: str, expected: object) -> None:
    assert schema.get(key).parse(text) == expected


def test_the_settings_reference_is_up_to_date() -> None:
    from pathlib import Path

    from imprint_desktop.settings.docs import render_markdown

    committed = Path(__file__).parents[3] / "docs" / "settings.md"
    assert committed.read_text(encoding="utf-8") == render_markdown(), (
        "run: python -m imprint_desktop.settings.docs > docs/settings.md"
    )
