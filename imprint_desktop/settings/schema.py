"""Every setting, declared once.

A :class:`Setting` (:mod:`.declaration`) carries what every view needs: the key, its kind,
default, bounds, a title and a description for people, and the flags ``restart`` and ``secret``.
The preferences dialog, the ``imprint settings`` command, validation messages, environment
overrides, the typed snapshot (:mod:`.codegen`) and the settings reference in the docs are all
generated from :data:`SETTINGS`; no key string is repeated elsewhere except where code reads the
value it needs. A text setting's own check (an address, a folder name) is in :mod:`.checks`.

The declaration's types are re-exported here, so the views read ``schema.Setting`` beside
``schema.get``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from imprint_desktop.core.errors import UnknownSettingError
from imprint_desktop.settings.checks import check_http_url, check_proxy_url, check_relative_folder
from imprint_desktop.settings.declaration import Kind, Section, Setting, Value

__all__ = [
    "RETIRED_KEYS",
    "SECTIONS",
    "SETTINGS",
    "Kind",
    "Section",
    "Setting",
    "Value",
    "default_values",
    "get",
    "in_section",
    "section",
]

# fmt: off
SECTIONS: tuple[Section, ...] = (
    Section("chat", "Research", "How long and how far a reply may research, and how it answers."),
    Section("model", "Model", "Which model answers, and how the local model runs."),
    Section("remote", "Remote server", "An OpenAI-compatible server instead of a local model."),
    Section("workspace", "Workspace", "The folder of documents that research reads."),
    Section("tools", "Tools", "What the model's research tools may do."),
    Section("downloads", "Downloads", "Where downloaded models are kept."),
    Section("network", "Network", "How Imprint reaches the internet."),
    Section("ui", "Appearance", "How the window looks."),
)

SETTINGS: tuple[Setting, ...] = (
    Setting(
        "chat.research_timeout_sec", Kind.INT, 300, "Research time budget",
        "Wall-clock time a reply may spend researching before it writes its answer. Time spent "
        "waiting for your answer to a question does not count.",
        minimum=10, maximum=3600, unit="s",
    ),
    Setting(
        "chat.research_token_budget", Kind.INT, 65536, "Research token budget",
        "Tokens a reply may spend on research requests: new prompt tokens (the reused "
        "prompt prefix is free) plus generated tokens. A local model counts them exactly; a "
        "server's are estimated before each request (a little high) and settled by the usage "
        "it reports.",
        minimum=1024, maximum=2_000_000, unit="tokens",
    ),
    Setting(
        "chat.research_no_progress_rounds", Kind.INT, 4, "Patience",
        "Research stops after this many rounds in a row that found no new evidence.",
        minimum=2, maximum=20, unit="rounds",
    ),
    Setting(
        "chat.research_first", Kind.BOOL, True, "Search before answering",
        "Before the model's first step, Imprint searches your documents for the question's key "
        "words and hands the model the passages it found, so every answer starts from your "
        "documents rather than from what the model happens to remember.",
    ),
    Setting(
        "chat.first_request_tools", Kind.CHOICE, "auto", "Tools in the first step",
        "Whether the model's first step may call tools when the search before answering found "
        "passages. Small models answer right more often from the passages alone: told about "
        "tools, the starter model wrote the fact in a third fewer answers. Automatic offers the "
        "tools to models of a billion parameters and more, and to every server.",
        choices=(
            ("auto", "Automatic (by model size)"),
            ("offered", "Always offer the tools"),
            ("withheld", "Answer from the passages first"),
        ),
    ),
    Setting(
        "chat.answer_without_evidence", Kind.BOOL, False, "Answer when nothing is found",
        "When research finds nothing in your documents, ask the model to answer anyway; its "
        "answer is then labelled as not coming from your documents. Off: Imprint says what it "
        "searched and read, and that nothing was found.",
    ),
    Setting(
        "chat.max_tokens", Kind.INT, 2048, "Final answer length",
        "Output allowance of the final answer, which has its own budget and deadline outside the "
        "research budgets.",
        minimum=64, maximum=32768, unit="tokens",
    ),
    Setting(
        "chat.research_max_output_tokens", Kind.INT, 1024, "Research step length",
        "Output allowance of each research request (tool calls and reasoning between them).",
        minimum=64, maximum=32768, unit="tokens",
    ),
    Setting(
        "chat.temperature", Kind.FLOAT, 0.2, "Temperature",
        "Sampling temperature. Lower is more focused and repeatable; higher is more varied.",
        minimum=0.0, maximum=2.0,
    ),
    Setting(
        "chat.seed", Kind.INT, 0x5EED, "Sampling seed",
        "Seed of a local model's sampling: the same question over the same passages gets the same "
        "answer. Change it to see another answer the model might have written.",
        minimum=0, maximum=2**31 - 1,
    ),
    Setting(
        "chat.system_prompt", Kind.TEXT, "", "Extra instructions",
        "Added to the built-in research instructions for every reply, e.g. 'Answer in German.' "
        "Leave empty for none.",
    ),
    Setting(
        "model.provider", Kind.CHOICE, "local", "Provider",
        "Run a GGUF model on this computer, or use an OpenAI-compatible server.",
        choices=(("local", "Local model (llama.cpp)"), ("remote", "Remote server")),
    ),
    Setting(
        "model.path", Kind.FILE, "", "Model file",
        "The GGUF file to run locally. Empty uses the starter model when it is installed.",
    ),
    Setting(
        "model.n_ctx", Kind.INT, 8192, "Context window",
        "Tokens the local model holds in context. Larger windows need more memory.",
        minimum=512, maximum=262_144, unit="tokens",
    ),
    Setting(
        "model.n_threads", Kind.INT, 0, "CPU threads",
        "Threads for the local model; 0 picks the number of physical cores.",
        minimum=0, maximum=256,
    ),
    Setting(
        "model.n_gpu_layers", Kind.INT, -1, "GPU layers",
        "Layers of the local model put on the GPU. auto fits as many as its free memory holds "
        "(none without a GPU, or when llama.cpp was built for the CPU only); 0 keeps the model "
        "on the CPU; a number puts that many there (1000: all).",
        minimum=-1, maximum=1000, word=(-1, "auto"),
    ),
    Setting(
        "model.n_batch", Kind.INT, 512, "Prompt batch size",
        "Tokens processed per step while reading the prompt. Stop takes effect between steps.",
        minimum=16, maximum=8192, unit="tokens",
    ),
    Setting(
        "model.tool_call_grammar", Kind.BOOL, False, "Constrain tool calls with a grammar",
        "Always constrain the local model's output to a well-formed answer or tool call. It is "
        "used anyway when the model's chat template has no tool support.",
    ),
    Setting(
        "model.repeat_penalty", Kind.FLOAT, 1.0, "Repeat penalty",
        "Makes the local model less likely to write again a token it wrote in the last 64 of its "
        "answer. 1.0 is off. Small models loop less above 1.0, but it also penalises the words "
        "and digits a right answer repeats; the anti-loop penalty below is gentler.",
        minimum=1.0, maximum=2.0,
    ),
    Setting(
        "model.dry_multiplier", Kind.FLOAT, 0.8, "Anti-loop penalty",
        "How strongly the local model is kept from repeating a run of words it already wrote "
        "in its answer (DRY sampling): the longer the repeated run, the stronger. Short repeats "
        "(a name, a date) cost nothing, and the passages it quotes are not counted. 0 is off.",
        minimum=0.0, maximum=5.0,
    ),
    Setting(
        "remote.base_url", Kind.STR, "http://127.0.0.1:8080/v1", "Server address",
        "Base URL of the OpenAI-compatible API, ending before /chat/completions.",
        check=check_http_url,
    ),
    Setting(
        "remote.model", Kind.STR, "", "Model name",
        "The model name the server expects. Empty lets the server choose its default.",
    ),
    Setting(
        "remote.context_window", Kind.INT, 0, "Context window",
        "Tokens the remote model holds in context, used to keep prompts within it. 0 asks the "
        "server once per connection (llama.cpp's /props, vLLM's and others' model list) and "
        "assumes 8192 when it does not say; a number set here is used instead of asking.",
        minimum=0, maximum=10_000_000, unit="tokens",
    ),
    Setting(
        "remote.api_key", Kind.SECRET, None, "API key",
        "The key the server asks for. Kept in the system keyring, never in the settings file.",
    ),
    Setting(
        "workspace.path", Kind.FOLDER, "", "Workspace folder",
        "The folder of documents to research. Empty uses the bundled sample workspace.",
    ),
    Setting(
        "workspace.more_folders", Kind.TEXT, "", "More folders",
        "Other folders researched with the workspace folder, one per line. Their documents "
        "are named by the folder's name first (Reports/2026/plan.pdf). Removing a folder "
        "here removes its passages from answers; its index is kept for when it comes back.",
    ),
    Setting(
        "workspace.watch", Kind.BOOL, True, "Keep folders current",
        "While the window is open, watch the folders and index a file as soon as it is "
        "saved, renamed or removed, in the background at low priority. A question waits only "
        "for the files that changed, never for a whole folder being indexed: it is answered "
        "from the index as it stands, and says so. Off: the index is brought up to date "
        "before each question.",
    ),
    Setting(
        "workspace.notes_folder", Kind.STR, "notes", "Notes folder",
        "Folder inside the workspace where the model's notes are written.",
        check=check_relative_folder,
    ),
    Setting(
        "workspace.max_file_mb", Kind.INT, 20, "Largest file to index",
        "Files larger than this are left out of the index (logs, data dumps, disk images).",
        minimum=1, maximum=2048, unit="MB",
    ),
    Setting(
        "workspace.max_text_mb", Kind.INT, 16, "Most text from one file",
        "The most text one file may give the index (in millions of characters, about 5,000 "
        "pages of a book). A file that holds more is read up to here and reported as read in "
        "part: a few hundred bytes of spreadsheet can repeat a cell millions of times.",
        minimum=1, maximum=512, unit="MB",
    ),
    Setting(
        "workspace.embedder", Kind.FILE, "auto", "Embedding model",
        "What lets search find passages by what they mean, not only by their words. auto (the "
        "default): the built-in embedder gives every passage its vector as it is indexed, so "
        "the first answer never waits, and the sentence encoder all-MiniLM-L6-v2, installed "
        "with Imprint, embeds the passages again in the background while the window is idle "
        "(\"Improving search\"); once it has embedded nine passages in ten, search ranks by "
        "it (and by the built-in embedder the rest). It finds far more questions asked in "
        "other words than the documents use. builtin (or empty): the built-in embedder alone, "
        "which works offline with nothing to download. all-minilm-l6-v2: the sentence "
        "encoder alone, embedding as the index is updated (100 to 200 times slower). Or a "
        "GGUF embedding model (the model manager's Recommended tab offers one). A change "
        "embeds the workspace again in the background; search keeps working meanwhile.",
    ),
    Setting(
        "workspace.ocr", Kind.BOOL, True, "Read scans with OCR",
        "Recognise the text of scanned PDF pages and images with tesseract, where it is "
        "installed. Without it such files are listed as having no text layer.",
    ),
    Setting(
        "workspace.ocr_page_seconds", Kind.INT, 30, "OCR time per page",
        "The longest OCR may spend on one page or image; a page that takes longer is left "
        "unread and reported.",
        minimum=5, maximum=600, unit="seconds",
    ),
    Setting(
        "tools.max_result_chars", Kind.INT, 6000, "Tool result size limit",
        "Longest tool result handed to the model; longer results are cut and say so.",
        minimum=500, maximum=200_000, unit="characters",
    ),
    Setting(
        "tools.fetch_url_enabled", Kind.BOOL, True, "Allow fetching web pages",
        "Let the model fetch http(s) pages, including servers on this computer.",
    ),
    Setting(
        "tools.fetch_url_confirm", Kind.BOOL, True, "Ask before fetching a web page",
        "Every page the model wants to fetch waits for you, its full address shown: allow it "
        "once, allow its site for the conversation, or deny it. Research time is paused while "
        "you decide. Off: pages are fetched without asking, on this computer and the local "
        "network too. Link-local and cloud-metadata addresses are never fetched either way.",
    ),
    Setting(
        "downloads.models_dir", Kind.FOLDER, "", "Models folder",
        "Where downloaded models go. Empty uses the Hugging Face cache, shared with other tools.",
        restart=True,
    ),
    Setting(
        "network.proxy", Kind.STR, "", "Proxy",
        "Proxy for web pages, remote servers and downloads, e.g. http://proxy:3128. Empty uses "
        "the system's proxy environment variables.",
        check=check_proxy_url, restart=True,
    ),
    Setting(
        "network.ca_bundle", Kind.FILE, "", "CA certificates",
        "A PEM file of extra certificate authorities to trust. Empty uses the system's.",
        restart=True,
    ),
    Setting(
        "ui.theme", Kind.CHOICE, "system", "Theme",
        "Light or dark colours, or follow the system.",
        choices=(("system", "Follow the system"), ("light", "Light"), ("dark", "Dark")),
    ),
)

# fmt: on

_BY_KEY: Mapping[str, Setting] = {setting.key: setting for setting in SETTINGS}

#: Keys that were removed and are now ignored wherever they appear, and left where they are.
RETIRED_KEYS: frozenset[str] = frozenset({"chat.max_tool_iters"})


def get(key: str) -> Setting:
    """The declaration of ``key``; :class:`UnknownSettingError` if there is none."""
    try:
        return _BY_KEY[key]
    except KeyError:
        raise UnknownSettingError(key) from None


def default_values() -> dict[str, Value]:
    """Every non-secret setting's default by key, in declaration order: an empty settings file."""
    return {
        setting.key: setting.default
        for setting in SETTINGS
        if not setting.secret and setting.default is not None
    }


def section(name: str) -> Section:
    for candidate in SECTIONS:
        if candidate.name == name:
            return candidate
    raise KeyError(name)


def in_section(name: str) -> Iterator[Setting]:
    """The settings of one section, in declaration order."""
    return (setting for setting in SETTINGS if setting.section == name)
