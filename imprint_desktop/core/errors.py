"""Every error Imprint raises on purpose, in one tree.

::

    ImprintError                   anything Imprint can explain to a person
    ├── SettingsError              configuration problems
    │   ├── UnknownSettingError    a key that is not declared in the schema
    │   ├── SettingValueError      a value of the wrong type or outside its bounds
    │   └── SettingsWriteError     the config file could not be written (disk full, permissions)
    ├── SecretStoreError           the OS keyring failed or refused an operation
    │   └── KeyringUnavailableError  no usable keyring backend exists at all
    ├── WorkspaceError             the workspace folder or its index cannot be used
    │   ├── PathOutsideWorkspaceError  a path that resolves outside the workspace (or is hidden)
    │   ├── DocumentError          a file that cannot be read or turned into text
    │   ├── WorkspaceIndexError    the index database cannot be opened, read or written
    │   ├── WorkspaceMissingError  the workspace folder does not exist
    │   └── EmbedderError          the embedding model cannot be found or loaded
    ├── ToolError                  a tool call the model made cannot be carried out
    │   ├── ToolArgumentError      missing, unknown or wrongly typed arguments, malformed JSON
    │   ├── UnknownToolError       a tool name no tool has
    │   └── FetchError             a web page that could not be fetched or is not text
    ├── ProviderError              the model or its server failed (after any retries)
    │   ├── ProviderAuthError      401/403: the API key is missing or wrong
    │   ├── ProviderNotFoundError  404: a wrong server address or model name
    │   ├── ProviderRateLimitError 429 that retries within the deadline did not get past
    │   ├── ProviderUnavailableError  5xx, refused or dropped connections, after retries
    │   ├── ProviderResponseError  a response that is not what the protocol promises
    │   ├── ModelLoadError         a local model file that cannot be loaded (and why)
    │   │   ├── ModelFileError     missing, empty, truncated, or not a GGUF file
    │   │   ├── UnsupportedModelError  an architecture or chat template this app will not run
    │   │   └── ModelMemoryError   not enough memory for the model at the chosen context size
    │   ├── ContextOverflowError   a prompt plus its output allowance larger than the context
    │   │                          (also a server's own "maximum context length" refusal)
    │   ├── ProviderDeadlineError  a server asked to be retried after the deadline has passed
    │   └── ChatTemplateError      the model's chat template failed or tried to leave its sandbox
    ├── ModelStoreError            finding, downloading or managing local model files failed
    │   ├── HubNotFoundError       404: no such repository or file on the model hub
    │   ├── HubUnavailableError    5xx, dropped or stalled connections, after retries
    │   ├── DiskFullError          not enough free space before or during a download (partial kept)
    │   ├── ChecksumMismatchError  downloaded bytes differ from the hub's SHA-256 (file quarantined)
    │   ├── InvalidModelFileError  a file that is not a loadable GGUF (magic, version, header)
    │   └── ProtectedModelError    a removal refused: the starter model or an imported original
    └── Cancelled                  the person pressed Stop (not a failure; ends a job cancelled)

Each message is a sentence a person can act on. Details for developers go to the log, and secrets go
nowhere: no exception message ever contains a secret value.
"""

from __future__ import annotations


class ImprintError(Exception):
    """Base of every error Imprint raises deliberately."""


class SettingsError(ImprintError):
    """A problem with reading, validating or writing settings."""


class UnknownSettingError(SettingsError, KeyError):
    """A key that no setting declares."""

    def __init__(self, key: str) -> None:
        super().__init__(
            f"There is no setting named {key!r}. `imprint settings list` shows them all."
        )
        self.key = key

    def __str__(self) -> str:  # KeyError would quote the message otherwise
        return str(self.args[0])


class SettingValueError(SettingsError, ValueError):
    """A value that does not satisfy its setting's declaration."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


class SettingsWriteError(SettingsError, OSError):
    """The configuration file could not be written; the previous file is left as it was."""


class SecretStoreError(ImprintError):
    """The OS keyring could not store, read or delete a secret."""


class KeyringUnavailableError(SecretStoreError):
    """No secure keyring backend is available, so secrets cannot be stored at all."""


class WorkspaceError(ImprintError):
    """The workspace folder, one of its documents, or its index cannot be used."""


class PathOutsideWorkspaceError(WorkspaceError):
    """A path that is absolute, climbs out with ``..``, follows a symlink out, or is hidden.

    Raised before anything is read or written, so a hostile path never touches the disk.
    """


class DocumentError(WorkspaceError):
    """A file that cannot be read or turned into text (unreadable, binary, corrupt PDF)."""


class WorkspaceIndexError(WorkspaceError):
    """The index database cannot be opened, read or written (disk full, corrupt file)."""


class EmbedderError(WorkspaceError):
    """The embedding model ``workspace.embedder`` names cannot be found or loaded."""


class WorkspaceMissingError(WorkspaceError):
    """The workspace folder does not exist (moved, unmounted, mistyped)."""


class ToolError(ImprintError):
    """A tool call that cannot be carried out; its message is shown to the model as the result."""


class ToolArgumentError(ToolError):
    """Arguments that are malformed JSON, missing, unknown or of the wrong type."""


class UnknownToolError(ToolError):
    """A tool name that no tool has."""


class FetchError(ToolError):
    """A web page that could not be fetched, timed out, or is not text."""


class ProviderError(ImprintError):
    """The model or the server that runs it failed; the message says what a person can do.

    ``partial`` is what a request that failed part-way had received (a
    :class:`~imprint_desktop.core.providers.base.Completion`, its prompt past the reused prefix
    and the output so far), so the work done is still charged; None when nothing arrived.
    """

    partial: object | None = None


class ProviderAuthError(ProviderError):
    """The server refused the API key (HTTP 401 or 403)."""


class ProviderNotFoundError(ProviderError):
    """The server has no such endpoint or model (HTTP 404)."""


class ProviderRateLimitError(ProviderError):
    """The server kept answering 429 until the deadline left no room for another try."""


class ProviderUnavailableError(ProviderError):
    """The server failed (5xx) or could not be reached, and retries did not help."""


class ProviderResponseError(ProviderError):
    """The server answered with something the protocol does not allow (garbage, a broken stream)."""


class ModelLoadError(ProviderError):
    """A local model file that cannot be loaded: missing, truncated, not GGUF, too big, ..."""


class Cancelled(ImprintError):  # noqa: N818 - a stop, not an error, for the person
    """The person asked to stop. Not a failure: a job that raises it ends *cancelled*."""


class ModelStoreError(ImprintError):
    """Searching the model hub, downloading a model or managing installed model files failed."""


class HubNotFoundError(ModelStoreError):
    """The hub has no such repository, revision or file (HTTP 404), or it is gated/private."""


class HubUnavailableError(ModelStoreError):
    """The hub answered 5xx, refused, reset or stalled the connection, and retries did not help.

    A download that ends with it keeps its partial file, so trying again resumes.
    """


class DiskFullError(ModelStoreError, OSError):
    """There is not enough free space for a download, checked before it starts or hit while writing.

    The partial file is kept (truncated to what was written whole) so the download can resume once
    space is freed.
    """


class ChecksumMismatchError(ModelStoreError):
    """A downloaded file's SHA-256 differs from the hub's; the file was moved to quarantine."""

    def __init__(self, message: str, quarantined: str) -> None:
        super().__init__(message)
        self.quarantined = quarantined


class InvalidModelFileError(ModelStoreError):
    """A file that is not a GGUF llama.cpp could load: wrong magic, unknown version, bad header."""


class ProtectedModelError(ModelStoreError):
    """A removal that would delete a file Imprint does not own (the starter model, an import)."""


class ModelFileError(ModelLoadError):
    """The model file is missing, empty, cut short, or not a GGUF file at all."""


class UnsupportedModelError(ModelLoadError):
    """A well-formed GGUF this app will not run: an unknown architecture or a hostile template."""


class ModelMemoryError(ModelLoadError):
    """The model and its KV cache for ``model.n_ctx`` do not fit in the memory available now."""


class ContextOverflowError(ProviderError):
    """A request whose prompt plus output allowance does not fit the model's context window.

    The engine checks the fit first (``context_full``); this is the provider refusing cleanly when
    asked anyway, before any token is evaluated.
    """


class ProviderDeadlineError(ProviderError):
    """A server answered 429/503 with a Retry-After that lies past the request's deadline.

    Not a failure of the model: the time budget ran out while waiting, so research ends with
    ``time_budget`` and the final answer is still written (DESIGN §1).
    """


class ChatTemplateError(ProviderError):
    """The model's own chat template raised, produced too much, or tried to reach Python internals.

    Templates come inside model files and are untrusted: they run in a sandbox, and an attempt to
    leave it stops the rendering with this error instead of running anything.
    """
