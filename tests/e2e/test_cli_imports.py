"""Each `imprint` command imports what it needs and nothing more (issue 28).

People script the command line — editor plugins, shell loops, cron jobs — so a call must not pay
for what other commands need: the research engine, the HTTP stack, the model hub, llama.cpp, Qt.
Each command runs here as a real process (``python -m imprint_desktop``) that lists, as it exits,
every module it imported (``sys.modules``); what a command must never import is pinned, so a later
change cannot slide back. (``bench/bench_cli.py`` measures the time.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.exit_report import run_reporting
from tests.support.openai_server import closed_port

pytestmark = pytest.mark.e2e

#: What only research, the window or the model manager needs.
HEAVY = {"httpx", "llama_cpp", "huggingface_hub", "PySide6", "qasync", "numpy", "pypdf"}
#: Imprint's own heavy parts.
ENGINE = {
    "imprint_desktop.core.research",
    "imprint_desktop.core.providers",
    "imprint_desktop.core.models",
    "imprint_desktop.core.tools",
    "imprint_desktop.background",
    "imprint_desktop.ui",
    "imprint_desktop.app",
}


#: Every module the process imported, as it exits (:func:`.exit_report.run_reporting`).
_STATE = """
def state():
    return sorted(sys.modules)
"""


def imported(env: dict[str, str], listing: Path, *args: str) -> set[str]:
    """Every module `imprint ARGS` imported."""
    done = run_reporting(env, listing, _STATE, *args)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    names = set(json.loads(listing.read_text(encoding="utf-8")))
    assert "imprint_desktop.cli" in names, done.stderr[-2000:]
    return names


def among(names: set[str], packages: set[str]) -> set[str]:
    """The modules of ``names`` that are in (or are) one of ``packages``."""
    return {name for name in names if any(name == p or name.startswith(f"{p}.") for p in packages)}


@pytest.fixture
def env(imprint_env: dict[str, str]) -> dict[str, str]:
    return imprint_env


@pytest.fixture
def listing(tmp_path: Path) -> Path:
    return tmp_path / "modules.json"


def test_help_imports_no_command(env: dict[str, str], listing: Path) -> None:
    names = imported(env, listing, "--help")
    assert among(names, HEAVY | ENGINE) == set()
    assert among(names, {"imprint_desktop.commands", "imprint_desktop.settings"}) == set()
    assert among(names, {"tomlkit", "keyring", "platformdirs", "sqlite3"}) == set()


@pytest.mark.parametrize("key", ["chat.max_tokens", "workspace.path"])
def test_settings_get_imports_neither_the_engine_nor_the_keyring(
    env: dict[str, str], listing: Path, key: str
) -> None:
    names = imported(env, listing, "settings", "get", key)
    assert among(names, HEAVY | ENGINE) == set()
    assert among(names, {"keyring", "secretstorage", "jeepney"}) == set(), "the key is no secret"
    assert "imprint_desktop.commands.settings" in names
    assert among(names, {"imprint_desktop.commands"}) == {
        "imprint_desktop.commands",
        "imprint_desktop.commands.settings",
    }


def test_settings_get_without_a_settings_file_parses_no_toml(
    env: dict[str, str], listing: Path
) -> None:
    names = imported(env, listing, "settings", "get", "chat.max_tokens")
    assert among(names, {"tomlkit", "imprint_desktop.core.config"}) == set()
    settings = Path(env["IMPRINT_CONFIG_DIR"]) / "config.toml"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text("[chat]\nmax_tokens = 512\n", encoding="utf-8")
    assert "tomlkit" in imported(env, listing, "settings", "get", "chat.max_tokens")


def test_settings_list_needs_the_keyring_but_not_the_engine(
    env: dict[str, str], listing: Path
) -> None:
    names = imported(env, listing, "settings", "list")
    assert among(names, HEAVY | ENGINE) == set()


def test_workspace_search_imports_no_model_no_window_no_network(
    env: dict[str, str], listing: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "keepers.md").write_text("# Keepers\n\nAda Quill kept the light.\n", "utf-8")
    (folder / "page.html").write_text("<html><title>Fog</title><p>Two blasts.</p></html>", "utf-8")
    names = imported(env, listing, "workspace", "search", str(folder), "Quill", "--json")
    assert "imprint_desktop.core.workspace" in names
    never = {"llama_cpp", "huggingface_hub", "PySide6", "qasync", "httpx", "keyring"}
    research = {"imprint_desktop.core.research", "imprint_desktop.core.providers"}
    window = {"imprint_desktop.background", "imprint_desktop.ui", "imprint_desktop.app"}
    assert among(names, never | research | window) == set()


def test_searching_an_indexed_workspace_loads_no_tokenizer_and_starts_no_worker(
    env: dict[str, str], listing: Path, tmp_path: Path
) -> None:
    """Its documents' words were tokenized when it was indexed (issue 28): a search with them
    finds their tokens kept, and reads its vectors from the file kept beside the index. The
    first search with a word of no document loads the tokenizer and keeps its vocabulary: then
    common words are found kept too."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "keepers.md").write_text("# Keepers\n\nAda Quill kept the light.\n", "utf-8")
    assert "tokenizers" in imported(env, listing, "workspace", "index", str(folder))
    light = {"tokenizers", "multiprocessing", "importlib.metadata"}
    for _ in range(2):  # the first search keeps the vectors, the second reads them
        names = imported(env, listing, "workspace", "search", str(folder), "Quill kept", "--json")
        assert among(names, light) == set()
        assert "numpy" in names  # the search was by meaning too
    unknown = "Zeppelinwortish"  # in no document, and no word of the tokenizer's
    assert "tokenizers" in imported(env, listing, "workspace", "search", str(folder), unknown)
    names = imported(env, listing, "workspace", "search", str(folder), "When did the light open")
    assert among(names, light) == set()


def test_ask_with_a_server_loads_neither_llama_cpp_nor_the_hub_nor_qt(
    env: dict[str, str], listing: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    names = imported(
        env, listing, "ask", "Who?", "--workspace", str(folder), "--base-url", base_url
    )
    assert "imprint_desktop.core.research.engine" in names  # it did get as far as research
    assert among(names, {"llama_cpp", "huggingface_hub", "PySide6", "qasync"}) == set()
    assert among(names, {"imprint_desktop.background", "imprint_desktop.ui"}) == set()


def test_searching_an_unchanged_workspace_parses_nothing_and_loads_no_parser(
    env: dict[str, str], listing: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "page.html").write_text("<html><title>Fog</title><p>Two blasts.</p></html>", "utf-8")
    assert "bs4" in imported(env, listing, "workspace", "index", str(folder))
    names = imported(env, listing, "workspace", "search", str(folder), "blasts", "--json")
    assert among(names, {"bs4", "pypdf"}) == set()
