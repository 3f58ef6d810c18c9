"""Runaway text: a reply that loops or pastes its prompt back, caught while it streams.

A small model can fall into writing one line, one sentence or one phrase over and over until its
allowance runs out, or start copying the request it was shown — the ``Question:`` label, the line
that opens the passages, a passage's head ("[2] history/opening.md, lines 3-9 — Opening"), the
question itself — instead of answering. Neither is worth the person's time: :class:`Watch` reads
the answer as it streams and says, as soon as it can tell, where the sound part ends; the one door
to the model (:mod:`.requests`) then stops the request (Stop's own path: llama.cpp's abort check,
or the remote stream closed) and keeps only that part. What is left is judged once more when the
reply ends (:func:`sound_answer`): an answer with nothing of its own left is no answer, and the
reply falls back to the labelled evidence.

What counts, read line by line and sentence by sentence (each a *unit*):

* **a loop** — a unit of a dozen characters or more written a third time; a line of fewer, the
  same as the two lines before it ("[3] 2026-02-24", "[4] 2026-02-24", …); a unit of six words or
  more that is a near copy (:data:`NEAR_COPY` of its words in order) of two of the few before it
  (a loop "with small variations": a citation or a word changed); or, without any line or sentence
  end, the last words repeating a run of up to :data:`MAX_PERIOD` words three times over at least
  :data:`MIN_LOOP_WORDS` words ("the flood of 1912 the flood of 1912 …"); or a run of
  :data:`LOOP_NGRAM` words written a third time anywhere, with other words between ("the Chair of
  the Audit and Risk Committee was the Chair of the Audit and Risk Committee and …"). Kept:
  everything before the second copy.
* **an echo** — a line that is the request's scaffolding (:class:`Scaffolding`): after the answer
  has begun, the first such line ends it there; before it, a few are let pass (a model may
  restate the question and the passage it answers from, then answer) and the
  :data:`ECHOES_BEFORE_ANSWER`-th ends the reply with nothing kept. A passage head the request
  never showed (its lines or path made up) ends it at once: no answer opens with a made-up source.
  After the answer's first sentence, a sentence that pastes a passage's head anywhere in it ("The
  passage is from the document "finance/travel.docx, lines 5-7 — …"") is cut where it starts.

What never counts: a list whose items share their opening words (each differs in what it says), a
table, an answer that quotes a few words of the question, or a sentence said twice.

Everything here is pure text work, linear in the answer: each unit is compared with a bounded
number of earlier ones, and the phrase check keeps one counter per period.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Literal

from imprint_desktop.core.providers.base import Message
from imprint_desktop.core.research import prompts

RunawayKind = Literal["loop", "echo"]

#: A unit of at least this many characters (markers and citations left out) written a third time
#: is a loop.
MIN_REPEATED_CHARS = 12
#: A near copy: at least this share of the words in order (difflib's ratio) ...
NEAR_COPY = 0.8
#: ... of a unit of at least this many words, compared with this many units before it.
NEAR_COPY_WORDS = 6
NEAR_COPY_WINDOW = 8
#: Lines of scaffolding a reply may open with (the question restated, a passage's head) before
#: it is taken for a copy of its request.
ECHOES_BEFORE_ANSWER = 4
#: The longest phrase, in words, looked for repeating without a line or sentence end.
MAX_PERIOD = 40
#: A phrase loop covers at least this many words (and its phrase comes three times).
MIN_LOOP_WORDS = 48
#: A run of this many words written a third time, outside a table, is a loop however far apart
#: its copies stand: longer than the opening a list's items share.
LOOP_NGRAM = 8

#: Labels of the engine's own request a reply must not paste (lower-cased, as a line starts).
_LABELS = (
    prompts.QUESTION_LABEL.lower(),
    "earlier question:",
    prompts.PASSAGES_INTRO.lower(),
    "passages:",
    "notes from the research:",
)
#: The line the first request has when the search found nothing, however a model rephrases it.
_SEARCHED = re.compile(r"the documents? (?:were|was|has been|have been) searched for\b")
#: A passage's number at a line's start ("[2] "), and list or emphasis marks ("- ", "1. ", "**").
_NUMBER = re.compile(r"^\[\d{1,4}\]\s*")
#: A passage's head however its path is written: "[4] hr/leave-policy.md, lines 1-2 — …".
_HEAD = re.compile(r"^\[\d{1,4}\]\s+[\w./\\-]+\.\w{1,5},\s+(?:lines?|page|sheet|slide)\b")
#: ... or without its number, as a list item: "Finance/expense-claims-faq.md, lines 7-10 — …".
_HEAD_SHAPE = r"[\w./\\-]+\.\w{1,5},\s+(?:lines?|pages?|sheets?|slides?)\s+\d"
_UNNUMBERED_HEAD = re.compile(rf"^{_HEAD_SHAPE}[\d\s,–-]*(?:—|$)")
#: ... or anywhere in a sentence: 'The passage is from "Finance/travel.docx, lines 5-7 — …"'.
_HEAD_INSIDE = re.compile(_HEAD_SHAPE)
_MARKS = re.compile(r"^(?:[-*•>#]+\s+|\d{1,3}[.)]\s+|\*\*|__)+")
_CITATIONS = re.compile(r"\s*\[\d{1,4}(?:\s*[,;–-]\s*\d{1,4})*\]")
_WORD = re.compile(r"\w+")
#: Where an item of a numbered list written on one line starts ("… 2023 4. The …").
_NUMBERED_ITEM = re.compile(r"(?:^|\s)\d{1,3}[.)](?=\s|$)")
#: The fewest words of a title a list item must be to be the title pasted back ("Crag Halt", a
#: name a title holds, is an answer's word as often).
_TITLE_WORDS = 3
_DIGITS = re.compile(r"\d+")
#: A question that asks which document, whose answer may well be titles.
_DOCUMENTS = re.compile(r"\b(?:documents?|reports?|files?|sources?|titles?|papers?)\b")
#: A unit: a line, or a sentence within one, with what follows it.
_UNIT_END = re.compile(r"\n|(?<=[.!?])[\"'”’)\]]*[ \t]+")
#: Where a sentence ends (for trimming an answer to whole sentences).
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]*_]*(?=\s|$)|\n\s*\n")


@dataclass(frozen=True, slots=True)
class Scaffolding:
    """What a request showed the model that its answer must not paste back: the question, the
    heads of the numbered passages, and the passages' titles."""

    question: str = ""
    heads: tuple[str, ...] = ()  # a passage head without its number: "path, lines 3-9 — Title"
    sources: tuple[str, ...] = ()  # the paths the heads name
    titles: tuple[str, ...] = ()  # titles and Markdown headings of the passages

    @classmethod
    def of(cls, messages: Sequence[Message], question: str) -> Scaffolding:
        """The scaffolding of a request's ``messages`` (its user turns) for ``question``."""
        heads: list[str] = []
        sources: list[str] = []
        titles: list[str] = []
        for message in messages:
            if message.role != "user":
                continue
            for raw in message.content.splitlines():
                line = raw.strip()
                number = _NUMBER.match(line)
                if number is not None and ", " in line:
                    head = line[number.end() :]
                    heads.append(_key(head))
                    sources.append(head.split(", ", 1)[0].lower())
                    if " — " in head:
                        titles.append(_key(re.sub(r"\s*\([^)]*\)$", "", head.split(" — ", 1)[1])))
                elif line.startswith("#") or (
                    line.isupper() and len(_WORD.findall(line)) >= 2  # a heading in capitals
                ):
                    titles.append(_key(line.lstrip("#")))
        return cls(
            question=_key(question),
            heads=tuple(dict.fromkeys(h for h in heads if h)),
            sources=tuple(dict.fromkeys(s for s in sources if s)),
            titles=tuple(dict.fromkeys(t for t in titles if len(t) >= 4)),
        )

    @classmethod
    def plain(cls, question: str, sources: Sequence[str]) -> Scaffolding:
        """The scaffolding of a request that showed ``question`` and passages headed by their
        paths alone (``sources``)."""
        paths = tuple(dict.fromkeys(source.lower() for source in sources if source))
        return cls(question=_key(question), heads=tuple(map(_key, paths)), sources=paths)

    def echoes(self, line: str) -> bool:
        """Whether ``line`` of an answer is this scaffolding pasted back."""
        plain = _MARKS.sub("", line.strip()).strip()
        low = plain.lower()
        if not low:
            return False
        if low.startswith(_LABELS) or _SEARCHED.match(low) or _HEAD.match(low):
            return True
        if _bare_head(low):
            return True
        unnumbered = _NUMBER.sub("", low)
        if _NUMBER.match(low) and unnumbered.startswith(tuple(s + "," for s in self.sources)):
            return True
        key = _key(unnumbered)
        if key and key in self.heads:
            return True
        # The question itself, whole (a few of its words quoted in a sentence are not an echo).
        return len(self.question.split()) >= 3 and key == self.question

    def made_up_head(self, line: str) -> bool:
        """Whether ``line`` is written as a passage's head that the request never showed
        ("2. finance/faq.md, lines 7-10 — …" where lines 1-6 were shown): a source made up, which
        no answer opens with."""
        plain = _MARKS.sub("", line.strip()).strip().lower()
        if not (_HEAD.match(plain) or _bare_head(plain)):
            return False
        return _key(_NUMBER.sub("", plain)) not in self.heads

    def is_title(self, line: str) -> bool:
        """Whether ``line`` is only a passage's title or heading, or a numbered list of the
        titles' words ("3. The annual report 2023 4. The annual report 2022 5. The Tarn Valley
        Railway"), a number in them changed or not."""
        key = _key(_MARKS.sub("", line.strip()))
        if not key:
            return False
        if key in self.titles:
            return True
        items = [item for item in _NUMBERED_ITEM.split(line) if _WORD.search(item)]
        return len(items) >= 2 and all(self._in_a_title(item) for item in items)

    def only_titles(self, answer: str) -> bool:
        """Whether ``answer`` is nothing but a numbered list of the titles' words, a line an
        item ("3. The annual report 2023\n4. The annual report 2022\n5. The Tarn Valley
        Railway"), to a question that does not ask which document."""
        if _DOCUMENTS.search(self.question):
            return False
        named: list[str] = []
        for line in filter(_WORD.search, answer.splitlines()):
            plain = _CITATIONS.sub("", line).strip()
            if plain.strip(" .").isdigit():
                continue  # a list's number left on a line of its own ("6 [1].")
            if not _NUMBERED_ITEM.match(plain):
                return False
            if _WORD.search(item := _NUMBERED_ITEM.sub("", plain).strip()):
                named.append(item)
        return len(named) >= 2 and all(self._in_a_title(item) for item in named)

    def _in_a_title(self, text: str) -> bool:
        """Whether ``text`` is three or more words of a title, in their order."""
        key = re.sub(r"^(?:the|a|an) ", "", _key(_CITATIONS.sub("", text)))
        if len(key.split()) < _TITLE_WORDS:
            return False
        shape = f" {_DIGITS.sub('#', key)} "
        return any(shape in f" {_DIGITS.sub('#', title)} " for title in self.titles)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Where a runaway answer's sound part ends (``keep`` characters), and what ran away."""

    kind: RunawayKind
    keep: int
    detail: str

    @property
    def why(self) -> str:
        """In words, within a sentence: why the answer was cut."""
        if self.kind == "loop":
            return "the model's answer began repeating itself"
        return "the model's answer began copying its instructions back"


@dataclass
class _Unit:
    start: int
    key: str
    words: list[str]


@dataclass
class Watch:
    """Reads one answer as it streams (:meth:`feed`) and says when it runs away (see the module
    docstring). Once it has, :attr:`verdict` is set and nothing more is read."""

    scaffolding: Scaffolding = field(default_factory=Scaffolding)
    verdict: Verdict | None = None
    text: str = ""
    _done: int = 0  # characters read as whole units
    _units: list[_Unit] = field(default_factory=list)
    _seen: Counter[str] = field(default_factory=Counter)
    _firsts: dict[str, list[int]] = field(default_factory=dict)  # a key's unit starts
    _answer_begun: bool = False
    _echoes: int = 0
    _line_start: int = 0
    _lines: list[tuple[str, int]] = field(default_factory=list)  # the last lines' keys and starts
    # The phrase check: the words so far, where each starts and ends, and per period the run of
    # words equal to the one that many words before.
    _words: list[str] = field(default_factory=list)
    _word_spans: list[tuple[int, int]] = field(default_factory=list)
    _runs: list[int] = field(default_factory=lambda: [0] * (MAX_PERIOD + 1))
    _word_done: int = 0
    # Where each run of LOOP_NGRAM words began (by word index), its copies not overlapping.
    _ngrams: dict[tuple[str, ...], list[int]] = field(default_factory=dict)

    def feed(self, piece: str) -> Verdict | None:
        """Read the next ``piece`` of the answer; the verdict once it has run away."""
        if self.verdict is not None or not piece:
            return self.verdict
        self.text += piece
        self.verdict = self._units_check() or self._phrase_check() or self._head_inside()
        return self.verdict

    def finish(self) -> Verdict | None:
        """The answer is complete: read its last unit too."""
        if self.verdict is None:
            self.verdict = (
                self._head_inside()
                or self._units_check(final=True)
                or self._phrase_check(final=True)
            )
        return self.verdict

    def _head_inside(self) -> Verdict | None:
        """After a sentence of the answer, one that pastes a passage's head ('The passage is
        from "finance/travel.docx, lines 5-7 — …"'): cut where it starts, as soon as the head is
        written. In the answer's first sentence a head is left to the line checks, which keep
        an answer that cites its source so."""
        if not self._answer_begun:
            return None
        writing = self.text[self._done :]
        if _HEAD_INSIDE.search(writing) is None:
            return None
        return Verdict("echo", self._done, writing.strip()[:120])

    @property
    def kept(self) -> str:
        """The answer's sound part: all of it, or what came before it ran away."""
        if self.verdict is None:
            return self.text
        return self.text[: self.verdict.keep].rstrip()

    # --- lines and sentences ----------------------------------------------------------------

    def _units_check(self, *, final: bool = False) -> Verdict | None:
        text = self.text
        while True:
            end = _UNIT_END.search(text, self._done)
            if end is None:
                if not final or self._done >= len(text):
                    return None
                stop, after = len(text), len(text)
            else:
                stop, after = end.start(), end.end()
            start, self._done = self._done, after
            newline = end is not None and end.group() == "\n"
            verdict = self._unit(start, text[start:stop], line_ends=newline or final)
            if newline or final:
                self._line_start = after
            if verdict is not None:
                return verdict
            if end is None:
                return None

    def _unit(self, start: int, raw: str, *, line_ends: bool) -> Verdict | None:
        if not raw.strip():
            return None
        if line_ends:
            line = self.text[self._line_start : start + len(raw)]
            if self.scaffolding.echoes(line):
                self._echoes += 1
                made_up = self.scaffolding.made_up_head(line)
                if self._answer_begun or made_up or self._echoes >= ECHOES_BEFORE_ANSWER:
                    keep = self._line_start if self._answer_begun else 0
                    return Verdict("echo", keep, line.strip()[:120])
                return None
        plain = _CITATIONS.sub("", _MARKS.sub("", raw.strip())).strip()
        key = " ".join(plain.lower().split())
        words = _WORD.findall(key)
        self._answer_begun |= len(words) >= 2 and not self.scaffolding.is_title(raw)
        if line_ends and start == self._line_start and key:
            self._lines = [*self._lines[-2:], (key, start)]
        return self._repeated(start, raw, key, words)

    def _repeated(self, start: int, raw: str, key: str, words: list[str]) -> Verdict | None:
        """A loop when the unit ``raw`` (``key`` as compared, of ``words``) repeats."""
        lines = self._lines
        if len(lines) == 3 and lines[-1][1] == start and all(line == key for line, _ in lines):
            # A short line (a value, a date) the same as the two lines before it: a list that
            # says nothing new, too short for the check below.
            return Verdict("loop", lines[1][1], raw.strip()[:120])
        if len(key) >= MIN_REPEATED_CHARS:
            self._seen[key] += 1
            starts = self._firsts.setdefault(key, [])
            starts.append(start)
            if self._seen[key] >= 3:
                return Verdict("loop", starts[1], raw.strip()[:120])
        unit = _Unit(start, key, words)
        if len(words) >= NEAR_COPY_WORDS and not raw.lstrip().startswith("|"):
            near = [
                before
                for before in self._units[-NEAR_COPY_WINDOW:]
                if before.key != key
                and len(before.words) >= NEAR_COPY_WORDS
                and _near_copy(before.words, words)
            ]
            if len(near) >= 2:
                return Verdict("loop", near[1].start, raw.strip()[:120])
        self._units.append(unit)
        return None

    # --- phrases without line or sentence ends -----------------------------------------------

    def _phrase_check(self, *, final: bool = False) -> Verdict | None:
        text = self.text
        for match in _WORD.finditer(text, self._word_done):
            if match.end() == len(text) and not final:
                break  # the word may go on in the next piece
            self._word_done = match.end()
            start, end = match.span()
            if text[start - 1 : start] == "[" and text[end : end + 1] == "]":
                continue  # a citation's number: "[3] 2026-02-24 [4] 2026-02-24 …" loops all alike
            verdict = self._word(match.group().lower(), match.start(), match.end())
            if verdict is not None:
                return verdict
        return None

    def _word(self, word: str, start: int, end: int) -> Verdict | None:
        words = self._words
        words.append(word)
        self._word_spans.append((start, end))
        last = len(words) - 1
        for period in range(1, min(MAX_PERIOD, last) + 1):
            run = self._runs[period] + 1 if words[last - period] == word else 0
            self._runs[period] = run
            if run >= max(2 * period, MIN_LOOP_WORDS - period):
                first_copy_end = last - run  # the last word of the phrase's first copy
                keep = self._word_spans[first_copy_end][1]
                return Verdict("loop", keep, " ".join(words[last - period + 1 :])[:120])
        return self._ngram(last, start)

    def _ngram(self, last: int, start: int) -> Verdict | None:
        """A loop when the run of :data:`LOOP_NGRAM` words ending at word ``last`` (which
        starts at ``start``) is written a third time."""
        first = last - LOOP_NGRAM + 1
        line = self.text[self.text.rfind("\n", 0, start) + 1 :].lstrip()
        gram = tuple(self._words[max(0, first) :])
        # A table's rows may repeat their cells; a word or two over and over is the phrase
        # check's to judge.
        if first < 0 or line.startswith("|") or len(set(gram)) < LOOP_NGRAM // 2:
            return None
        starts = self._ngrams.setdefault(gram, [])
        if starts and first < starts[-1] + LOOP_NGRAM:
            return None  # overlapping its last copy: the phrase check's to judge
        starts.append(first)
        if len(starts) < 3:
            return None
        one, two, three = starts[-3:]
        if self._words[one:two] == self._words[two:three]:
            return None  # copies back to back, nothing else between: the phrase check's
        keep = self._word_spans[starts[1]][0]
        return Verdict("loop", keep, " ".join(self._words[first:])[:120])


def _near_copy(one: list[str], other: list[str]) -> bool:
    shorter, longer = sorted((len(one), len(other)))
    if shorter < NEAR_COPY * longer * 0.6:  # the ratio cannot reach NEAR_COPY
        return False
    return SequenceMatcher(None, one, other, autojunk=False).ratio() >= NEAR_COPY


def _bare_head(line: str) -> bool:
    """Whether ``line`` (lower-cased, without list marks) is a passage's head written without its
    number, with no more than a title after it: "finance/faq.md, lines 7-10 — expense claims".
    One with a value after it ("…, lines 1-8 — 61,200 (2022: 55,800)") quotes what it says."""
    head = _UNNUMBERED_HEAD.match(line)
    return head is not None and not _DIGITS.search(line[head.end() :])


def _key(text: str) -> str:
    """A line compared as words: lower-cased, without punctuation or spacing differences."""
    return " ".join(_WORD.findall(text.lower()))


def whole_sentences(text: str) -> str:
    """``text`` cut at its last whole sentence (for an answer cut at its length), or as it is
    when no sentence in it ends; stripped."""
    text = text.rstrip()
    ends = list(_SENTENCE_END.finditer(text))
    if not ends or ends[-1].end() >= len(text):
        return text
    return text[: ends[-1].end()].rstrip()


def without_dangling_lead_in(text: str) -> str:
    """``text`` without a last line or sentence that only leads in to what never came ("The
    answer is:"); stripped. A colon that opens a list or a quote that follows is left alone."""
    text = text.rstrip()
    while text.endswith(":"):
        cut = max(text.rfind("\n"), *(text.rfind(m) for m in (". ", "! ", "? ")))
        text = text[: cut + 1].rstrip() if cut >= 0 else ""
    return text


def sound_answer(text: str, scaffolding: Scaffolding) -> str:
    """What of a finished answer is the model's own: without lines that paste the request back
    or only repeat a passage's title, and without a dangling lead-in; empty when nothing is."""
    kept = [  # by "\n" alone: a CR or a line separator inside a line is the answer's own
        line
        for line in text.split("\n")
        if not scaffolding.echoes(line) and not scaffolding.is_title(line)
    ]
    rest = without_dangling_lead_in("\n".join(kept).strip())
    if scaffolding.only_titles(rest):
        return ""
    return rest if _WORD.search(rest) else ""
