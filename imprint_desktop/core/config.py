"""The settings as one typed, frozen snapshot: ``config.chat.max_tokens``, never a key string.

Generated from settings/schema.py by ``python -m imprint_desktop.settings.codegen``; do not edit.

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

ChatFirstRequestTools = Literal["auto", "offered", "withheld"]
ModelProvider = Literal["local", "remote"]
UiTheme = Literal["system", "light", "dark"]
_CHAT_FIRST_REQUEST_TOOLS: tuple[ChatFirstRequestTools, ...] = ("auto", "offered", "withheld")
_MODEL_PROVIDER: tuple[ModelProvider, ...] = ("local", "remote")
_UI_THEME: tuple[UiTheme, ...] = ("system", "light", "dark")


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatConfig:
    """Research (``[chat]``). How long and how far a reply may research, and how it answers."""

    research_timeout_sec: int
    """Research time budget (s)."""

    research_token_budget: int
    """Research token budget (tokens)."""

    research_no_progress_rounds: int
    """Patience (rounds)."""

    research_first: bool
    """Search before answering."""

    first_request_tools: ChatFirstRequestTools
    """Tools in the first step."""

    answer_without_evidence: bool
    """Answer when nothing is found."""

    max_tokens: int
    """Final answer length (tokens)."""

    research_max_output_tokens: int
    """Research step length (tokens)."""

    temperature: float
    """Temperature."""

    seed: int
    """Sampling seed."""

    system_prompt: str
    """Extra instructions."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelConfig:
    """Model (``[model]``). Which model answers, and how the local model runs."""

    provider: ModelProvider
    """Provider."""

    path: str
    """Model file (file path; empty: not set)."""

    n_ctx: int
    """Context window (tokens)."""

    n_threads: int
    """CPU threads."""

    n_gpu_layers: int
    """GPU layers."""

    n_batch: int
    """Prompt batch size (tokens)."""

    tool_call_grammar: bool
    """Constrain tool calls with a grammar."""

    repeat_penalty: float
    """Repeat penalty."""

    dry_multiplier: float
    """Anti-loop penalty."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteConfig:
    """Remote server (``[remote]``). An OpenAI-compatible server instead of a local model."""

    base_url: str
    """Server address."""

    model: str
    """Model name."""

    context_window: int
    """Context window (tokens)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceConfig:
    """Workspace (``[workspace]``). The folder of documents that research reads."""

    path: str
    """Workspace folder (folder path; empty: not set)."""

    more_folders: str
    """More folders."""

    watch: bool
    """Keep folders current."""

    notes_folder: str
    """Notes folder."""

    max_file_mb: int
    """Largest file to index (MB)."""

    max_text_mb: int
    """Most text from one file (MB)."""

    embedder: str
    """Embedding model (file path; empty: not set)."""

    ocr: bool
    """Read scans with OCR."""

    ocr_page_seconds: int
    """OCR time per page (seconds)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolsConfig:
    """Tools (``[tools]``). What the model's research tools may do."""

    max_result_chars: int
    """Tool result size limit (characters)."""

    fetch_url_enabled: bool
    """Allow fetching web pages."""

    fetch_url_confirm: bool
    """Ask before fetching a web page."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DownloadsConfig:
    """Downloads (``[downloads]``). Where downloaded models are kept."""

    models_dir: str
    """Models folder (folder path; empty: not set)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkConfig:
    """Network (``[network]``). How Imprint reaches the internet."""

    proxy: str
    """Proxy."""

    ca_bundle: str
    """CA certificates (file path; empty: not set)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UiConfig:
    """Appearance (``[ui]``). How the window looks."""

    theme: UiTheme
    """Theme."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """Every non-secret setting, by section; see the module docstring."""

    chat: ChatConfig
    model: ModelConfig
    remote: RemoteConfig
    workspace: WorkspaceConfig
    tools: ToolsConfig
    downloads: DownloadsConfig
    network: NetworkConfig
    ui: UiConfig

    @classmethod
    def from_values(cls, values: Mapping[str, object]) -> Config:
        """The snapshot of complete, validated values by key, as the store gives them.

        A missing key raises :class:`KeyError`, a value of the wrong kind :class:`TypeError` or
        :class:`ValueError`; bounds and checks are the store's (the schema's) to apply.
        """
        return cls(
            chat=ChatConfig(
                research_timeout_sec=read_int(values, "chat.research_timeout_sec"),
                research_token_budget=read_int(values, "chat.research_token_budget"),
                research_no_progress_rounds=read_int(values, "chat.research_no_progress_rounds"),
                research_first=read_bool(values, "chat.research_first"),
                first_request_tools=read_choice(
                    values, "chat.first_request_tools", _CHAT_FIRST_REQUEST_TOOLS
                ),
                answer_without_evidence=read_bool(values, "chat.answer_without_evidence"),
                max_tokens=read_int(values, "chat.max_tokens"),
                research_max_output_tokens=read_int(values, "chat.research_max_output_tokens"),
                temperature=read_float(values, "chat.temperature"),
                seed=read_int(values, "chat.seed"),
                system_prompt=read_str(values, "chat.system_prompt"),
            ),
            model=ModelConfig(
                provider=read_choice(values, "model.provider", _MODEL_PROVIDER),
                path=read_str(values, "model.path"),
                n_ctx=read_int(values, "model.n_ctx"),
                n_threads=read_int(values, "model.n_threads"),
                n_gpu_layers=read_int(values, "model.n_gpu_layers"),
                n_batch=read_int(values, "model.n_batch"),
                tool_call_grammar=read_bool(values, "model.tool_call_grammar"),
                repeat_penalty=read_float(values, "model.repeat_penalty"),
                dry_multiplier=read_float(values, "model.dry_multiplier"),
            ),
            remote=RemoteConfig(
                base_url=read_str(values, "remote.base_url"),
                model=read_str(values, "remote.model"),
                context_window=read_int(values, "remote.context_window"),
            ),
            workspace=WorkspaceConfig(
                path=read_str(values, "workspace.path"),
                more_folders=read_str(values, "workspace.more_folders"),
                watch=read_bool(values, "workspace.watch"),
                notes_folder=read_str(values, "workspace.notes_folder"),
                max_file_mb=read_int(values, "workspace.max_file_mb"),
                max_text_mb=read_int(values, "workspace.max_text_mb"),
                embedder=read_str(values, "workspace.embedder"),
                ocr=read_bool(values, "workspace.ocr"),
                ocr_page_seconds=read_int(values, "workspace.ocr_page_seconds"),
            ),
            tools=ToolsConfig(
                max_result_chars=read_int(values, "tools.max_result_chars"),
                fetch_url_enabled=read_bool(values, "tools.fetch_url_enabled"),
                fetch_url_confirm=read_bool(values, "tools.fetch_url_confirm"),
            ),
            downloads=DownloadsConfig(
                models_dir=read_str(values, "downloads.models_dir"),
            ),
            network=NetworkConfig(
                proxy=read_str(values, "network.proxy"),
                ca_bundle=read_str(values, "network.ca_bundle"),
            ),
            ui=UiConfig(
                theme=read_choice(values, "ui.theme", _UI_THEME),
            ),
        )

    def as_values(self) -> dict[str, Value]:
        """Every value by its key, in the schema's order (the settings a trace records)."""
        return {
            "chat.research_timeout_sec": self.chat.research_timeout_sec,
            "chat.research_token_budget": self.chat.research_token_budget,
            "chat.research_no_progress_rounds": self.chat.research_no_progress_rounds,
            "chat.research_first": self.chat.research_first,
            "chat.first_request_tools": self.chat.first_request_tools,
            "chat.answer_without_evidence": self.chat.answer_without_evidence,
            "chat.max_tokens": self.chat.max_tokens,
            "chat.research_max_output_tokens": self.chat.research_max_output_tokens,
            "chat.temperature": self.chat.temperature,
            "chat.seed": self.chat.seed,
            "chat.system_prompt": self.chat.system_prompt,
            "model.provider": self.model.provider,
            "model.path": self.model.path,
            "model.n_ctx": self.model.n_ctx,
            "model.n_threads": self.model.n_threads,
            "model.n_gpu_layers": self.model.n_gpu_layers,
            "model.n_batch": self.model.n_batch,
            "model.tool_call_grammar": self.model.tool_call_grammar,
            "model.repeat_penalty": self.model.repeat_penalty,
            "model.dry_multiplier": self.model.dry_multiplier,
            "remote.base_url": self.remote.base_url,
            "remote.model": self.remote.model,
            "remote.context_window": self.remote.context_window,
            "workspace.path": self.workspace.path,
            "workspace.more_folders": self.workspace.more_folders,
            "workspace.watch": self.workspace.watch,
            "workspace.notes_folder": self.workspace.notes_folder,
            "workspace.max_file_mb": self.workspace.max_file_mb,
            "workspace.max_text_mb": self.workspace.max_text_mb,
            "workspace.embedder": self.workspace.embedder,
            "workspace.ocr": self.workspace.ocr,
            "workspace.ocr_page_seconds": self.workspace.ocr_page_seconds,
            "tools.max_result_chars": self.tools.max_result_chars,
            "tools.fetch_url_enabled": self.tools.fetch_url_enabled,
            "tools.fetch_url_confirm": self.tools.fetch_url_confirm,
            "downloads.models_dir": self.downloads.models_dir,
            "network.proxy": self.network.proxy,
            "network.ca_bundle": self.network.ca_bundle,
            "ui.theme": self.ui.theme,
        }
