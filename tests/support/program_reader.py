"""Reading which programs code starts: Python (subprocess, os.exec*, asyncio, shutil.which) and
shell scripts, CI scripts and Makefile recipes. Used by tests/unit/test_system_deps.py, the guard
that every such program comes from `scripts/system-deps.sh test`.

A reading, not an interpreter: a launch whose program cannot be read from the code is reported as
:class:`Unreadable`, never passed over.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace

# Python callables that start a program (named by their first argument), and shutil.which.
LAUNCHERS = frozenset(
    {
        "subprocess.run",
        "subprocess.Popen",
        "subprocess.call",
        "subprocess.check_call",
        "subprocess.check_output",
        "subprocess.getoutput",
        "subprocess.getstatusoutput",
        "os.system",
        "os.popen",
        "os.execv",
        "os.execve",
        "os.execvp",
        "os.execvpe",
        "os.execl",
        "os.execle",
        "os.execlp",
        "os.execlpe",
        "os.posix_spawn",
        "os.posix_spawnp",
        "pty.spawn",
        "asyncio.create_subprocess_exec",
        "asyncio.create_subprocess_shell",
        "shutil.which",
    }
)
SHELL_WORDS = frozenset(
    "! { } [[ ]] [ ( ) case cd command do done elif else esac exit export fi for function if in "
    "local printf read return set shift source test then true false until while echo . : eval "
    "exec trap wait".split()
)


COMMAND_PREFIXES = frozenset({"!", "if", "elif", "while", "until", "time", "exec"})


@dataclass(frozen=True)
class Launch:
    """A program the code starts: the name looked up on PATH, or an absolute path's."""

    program: str
    where: str
    path: str | None = None  # the absolute path the code names, if it names one
    probe: bool = False  # shutil.which: asks whether it is there, runs nothing


@dataclass(frozen=True)
class Unreadable:
    """A launch whose program the guard cannot read from the code."""

    where: str
    code: str


# --- reading Python ----------------------------------------------------------------------------


class _PythonReader:
    """The launches of one module; a name's value is every value the module gives that name."""

    def __init__(self, source: str, where: str) -> None:
        self.source = source
        self.where = where
        tree = ast.parse(source)
        self.launches: list[Launch] = []
        self.unreadable: list[Unreadable] = []
        self.aliases: dict[str, str] = {}
        self.values: dict[str, list[ast.expr]] = {}  # every value each name is given
        calls = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                calls.append(node)
            else:
                self.learn(node)
        for call in calls:
            self.read(call)

    def learn(self, node: ast.AST) -> None:
        """Note the imported names and the values given to names."""
        if isinstance(node, ast.Import):
            for alias in node.names:
                self.aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.values.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
            if isinstance(node.target, ast.Name):
                self.values.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, ast.For | ast.comprehension) and isinstance(node.target, ast.Name):
            # for tool in ("a", "b"): each element; over anything else, unknowable
            elements = node.iter.elts if isinstance(node.iter, ast.List | ast.Tuple) else []
            self.values.setdefault(node.target.id, []).extend(elements or [node.target])

    def dotted(self, node: ast.expr) -> str:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            return f"{self.dotted(node.value)}.{node.attr}"
        return ""

    def read(self, node: ast.Call) -> None:
        name = self.dotted(node.func)
        if name not in LAUNCHERS:
            return
        argument = next(
            (k.value for k in node.keywords if k.arg in ("args", "cmd", "file", "path")),
            node.args[0] if node.args else None,
        )
        found = None if argument is None else self.programs(argument, node.lineno, frozenset())
        if found is None:
            code = ast.get_source_segment(self.source, node) or name
            self.unreadable.append(Unreadable(f"{self.where}:{node.lineno}", code[:120]))
        elif name == "shutil.which":
            self.launches.extend(replace(launch, probe=True) for launch in found)
        else:
            self.launches.extend(found)

    def programs(self, node: ast.expr, line: int, seen: frozenset[str]) -> list[Launch] | None:
        """The programs ``node`` (a command or its first word) can name; None when unknowable."""
        if isinstance(node, ast.Constant):
            return _constant_programs(node.value, f"{self.where}:{line}")
        if isinstance(node, ast.List | ast.Tuple):
            first = node.elts[0] if node.elts else None
            if isinstance(first, ast.Starred):
                first = first.value
            return None if first is None else self.programs(first, line, seen)
        if isinstance(node, ast.Name):
            if node.id in seen:
                return None
            seen = seen | {node.id}
        options = self.alternatives(node)
        if options is None:
            return None
        found: list[Launch] = []
        for option in options:
            programs = self.programs(option, line, seen)
            if programs is None:
                return None
            found += programs
        return found

    def alternatives(self, node: ast.expr) -> list[ast.expr] | None:
        """What ``node`` may be, to read in its place: [] when it is no program looked up on PATH
        (the running Python, a path the code builds), None when the guard cannot tell."""
        options: list[ast.expr] | None = None
        if isinstance(node, ast.BoolOp):
            options = node.values
        elif isinstance(node, ast.IfExp):
            options = [node.body, node.orelse]
        elif isinstance(node, ast.Name):
            options = self.values.get(node.id)
        elif self.dotted(node) == "sys.executable" or (
            isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)  # pathlib: its own file
        ):
            options = []
        elif isinstance(node, ast.Call) and node.args:
            function = self.dotted(node.func)
            beside = isinstance(node.func, ast.Attribute) and node.func.attr == "with_name"
            if beside or function in ("shutil.which", "str", "os.fspath", "pathlib.Path"):
                options = [node.args[0]]
        return options


def _constant_programs(value: object, where: str) -> list[Launch] | None:
    if value is None:
        return []  # no program (``X if found else None``)
    if not isinstance(value, str):
        return None
    word = value.split()[0] if value.split() else ""
    if "/" not in word:
        return [Launch(word, where)]
    if word.startswith("/"):
        return [Launch(word.rsplit("/", 1)[1], where, word)]
    return []  # a file of the project, by a relative path


def python_launches(source: str, where: str) -> tuple[list[Launch], list[Unreadable]]:
    if not re.search(
        r"subprocess|exec[lv]|popen|spawn|system\(|which\(|import[^\n]*\b(system|which)\b", source
    ):
        return [], []  # none of LAUNCHERS can be reached without one of these words
    reader = _PythonReader(source, where)
    return reader.launches, reader.unreadable


# --- reading shell -----------------------------------------------------------------------------


def _blank_words(text: str) -> str:
    """Quoted text and comments as spaces (quotes and line breaks kept): the words go, the
    positions stay, so line numbers stay true."""
    out = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            out.append(text[i : i + 2])
            i += 2
            continue
        if char in "'\"":
            end = i + 1
            while end < len(text) and text[end] != char:
                end += 2 if char == '"' and text[end] == "\\" else 1
            out.append(char + re.sub(r"[^\n]", " ", text[i + 1 : end]) + char)
            i = end + 1
            continue
        if char == "#" and (i == 0 or text[i - 1] in " \t\n;"):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            out.append(" " * (end - i))
            i = end
            continue
        out.append(char)
        i += 1
    return "".join(out)


def shell_launches(text: str, where: str) -> list[Launch]:
    """The commands of a shell script (or of a Makefile's recipes) that are looked up on PATH.

    A reading, not a parser: quoted text, array values, comments and redirections are blanked,
    then the first word of each simple command is a program unless it is a keyword, an
    assignment, an option, an expansion (``"${sudo[@]}" apt-get`` runs apt-get) or a path;
    ``command -v X`` names X.
    """
    if where.endswith("Makefile"):  # only recipes run; make's $(VAR) is one word, $$ is $
        text = re.sub(r"(?m)^(?!\t).+$", lambda match: " " * len(match.group()), text)
        text = re.sub(r"(?<!\$)\$\((\w+)\)", r"$_\1_", text).replace("$$", " $")
    text = _blank_words(text)
    blank = lambda match: re.sub(r"[^\n]", " ", match.group())  # noqa: E731
    text = re.sub(r"\b\w+\+?=\([^)]*\)", blank, text)  # name=(array values)
    text = re.sub(r"\d*[<>]&\d*-?|&>|\d*>>?|<", blank, text)  # redirections
    launches = []
    # Lines joined by a trailing backslash are one command line, numbered by its first line.
    for line in re.finditer(r"(?:\\\n|.)+", text):
        number = text.count("\n", 0, line.start()) + 1
        joined = line[0].replace("\\\n", "  ")
        for command in re.split(r"\|\||&&|[|;&(){}`]|\$\(|\bthen\b|\bdo\b|\belse\b", joined):
            words = command.split()
            while words and (
                words[0] in COMMAND_PREFIXES
                or re.match(r"^\w+\+?=", words[0])
                or (words[0][0] in "\"'$" and "/" not in words[0])
            ):
                words.pop(0)
            if words[:2] == ["command", "-v"] and len(words) > 2:
                launches.append(Launch(words[2], f"{where}:{number}"))
                continue
            if (
                not words
                or words[0] in SHELL_WORDS
                or words[0].startswith("-")
                or not re.match(r"^[\w.+-]+$", words[0])
            ):
                continue  # a keyword, an option, a path of the project, or no command
            launches.append(Launch(words[0], f"{where}:{number}"))
    return launches
