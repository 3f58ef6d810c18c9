"""Search before answering (DESIGN §1, ``chat.research_first``): the engine's own first search.

Before the first model request of a research conversation the engine runs ``search_workspace``
itself with the question, so every model — a tiny local one that would pick the wrong tool as much
as a large remote one — starts from passages of the person's documents. This module builds that
call (its query and id) and plans how much of the result fits the model's context window; the
round loop (:mod:`.rounds`) runs it like any read.

A question is searched as written: the search by words and the built-in embedder read only its
content words (:mod:`~imprint_desktop.core.workspace.query_words`: "what does the …" matches
everything and nothing), while a sentence encoder reads the whole sentence, which it places
better than the words alone (on the Flask paraphrases, 23 of 30 answering documents in the three
passages against 20 from the content words). A follow-up that refers back is searched for as a
person would write it out (:func:`seed_query`).
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from collections.abc import Sequence

from imprint_desktop.core.providers.base import ToolCall
from imprint_desktop.core.providers.estimate import chars_for_tokens

# Read from here by the grounding and the sources too.
from imprint_desktop.core.workspace.query_words import STOPWORDS as STOPWORDS  # noqa: PLC0414
from imprint_desktop.core.workspace.query_words import WORD, is_function_word, word_set
from imprint_desktop.core.workspace.query_words import content_words as content_words  # noqa: PLC0414

log = logging.getLogger(__name__)

#: The call id of the engine's own search; a conversation's later calls never reuse an id.
SEED_CALL_ID = "imprint_seed_search"
#: At most this many passages seed a small model's conversation (under
#: :data:`SMALL_MODEL_PARAMETERS`; see :func:`seed_limit` for the others).
SEED_LIMIT = 3
#: Passages that seed the conversation of a model of 1 to 4 billion parameters, and of a larger or
#: unknown one (a server's); the characters they may take grow with them (:func:`seed_chars`).
MID_SEED_LIMIT = 5
LARGE_SEED_LIMIT = 8
LARGE_MODEL_PARAMETERS = 4_000_000_000
#: Of the room left in the window after the prompt and the research output allowance, the seed
#: takes at most this share, so the model still has room to research after it.
SEED_SHARE_OF_ROOM = 0.5
#: Never seed with less than this many characters (the search tool's smallest useful result).
MIN_SEED_CHARS = 600
#: Nor with more: the passages are cut around what matched the question (the rest is a
#: read_document away), so a small model reads the facts rather than the headings around them.
#: A larger model reads more of each of its passages (:func:`seed_chars`).
MAX_SEED_CHARS = 2400
#: Characters a seed passage may take at most, past a small model's.
PASSAGE_CHARS = 1200


#: Words by which a follow-up refers to what an earlier question was about ("When was *it*
#: automated?"), in the languages of :data:`STOPWORDS`.
REFERRING = word_set(
    "it its it's that this these those there they them their he him his she her hers "
    "es ihn ihm dort dies diese dieser dieses "
    "il elle ils elles lui leur là cette ces celui celle "
    "él ella ellos ellas allí allá ahí ese esa esos esas este esta "
    "hij zij hem haar daar deze dit"
)


def refers_back(question: str) -> bool:
    """Whether ``question`` leans on an earlier one: it refers to something ("it", "there")
    or has nothing of its own to search for."""
    words = [word.lower() for word in WORD.findall(question)]
    own = [word for word in content_words(question) if not is_function_word(word)]
    return any(word in REFERRING for word in words) or len(own) < 2


def subject_words(question: str) -> list[str]:
    """What ``question`` is about, for a follow-up's search: its names and numbers (capitalised
    words past the first, digits), else all its content words."""
    words = WORD.findall(question)
    named = [
        word.lower()
        for index, word in enumerate(words)
        if (index > 0 and word[:1].isupper()) or any(char.isdigit() for char in word)
    ]
    content = set(content_words(question))
    named = [word for word in named if word in content]
    return list(dict.fromkeys(named)) or content_words(question)


def subject_phrase(question: str) -> str:
    """What ``question`` is about, as written: its longest run of capitalised words past the
    first word ("Gannet Point" in "Who kept Gannet Point?"), with what the question says it is
    (:func:`_named_thing`: "the Gannet Point light", "Thornbeck water treatment works", "the
    turbidity incident at Marl Lane in August 2024"); without one, an English question's closing
    "the …" phrase of up to four words after its verb ("the smart metering pilot" in "Who led the
    smart metering pilot?"); or ""."""
    words = [word.strip(_PUNCTUATION) for word in question.split()]
    lowered = [word.lower() for word in words]
    best: list[str] = []
    best_start = run_start = 0
    run: list[str] = []
    for index, bare in enumerate(words[1:], start=1):
        if bare[:1].isupper():
            run_start = run_start if run else index
            run.append(bare)
            if len(run) > len(best):
                best, best_start = list(run), run_start
        else:
            run = []
    if best:
        return _named_thing(words, best_start, best_start + len(best))
    if "the" not in lowered[1:]:
        return ""
    start = len(lowered) - 1 - lowered[::-1].index("the")
    tail = lowered[start + 1 :]
    # The object of the question's verb: "led the …", not "was the light lit" or "of the town".
    after_verb = not is_function_word(lowered[start - 1])
    if after_verb and 1 <= len(tail) <= 4 and not any(map(is_function_word, tail)):
        return " ".join(["the", *tail])
    return ""


#: Words that come before the subject of an English question ("When *did* Lakeside station
#: open?"), whose verb follows the subject bare: the subject runs from there to that verb. ("Was"
#: and "is" are left out: "When was Gannet Point first lit?" has no noun after the name.)
_AUXILIARIES = word_set("do does did can could will would should")
#: Words between a subject and its verb that are not part of the subject ("When did Crag Halt
#: *first* open?"); so is any word ending in "-ly".
_ADVERBS = word_set("first last ever still also never always already once again even just")
_MONTHS = word_set(
    "january february march april may june july august september october november december"
)
#: At most this many nouns follow a name in the thing it names ("water treatment works"), or
#: end a question after a possessive ("maximum output").
_MAX_HEAD_WORDS = 3


def _named_thing(words: Sequence[str], start: int, end: int) -> str:
    """The name ``words[start:end]`` with what the question says it is:

    - the nouns after it, when an auxiliary comes before it and the question's verb after them
      ("Lakeside station" in "When did Lakeside station open?", "Thornbeck water treatment works"
      in "What does Thornbeck water treatment works use to …?");
    - "the" and the noun closing the question ("the Gannet Point light" in "What is the range of
      the Gannet Point light?");
    - the noun before it ("the locomotive Curlew" in "Who built the locomotive Curlew?");
    - the thing at the place, and when it was ("the turbidity incident at Marl Lane in August
      2024" in "What caused the turbidity incident at Marl Lane in August 2024?").
    """
    lowered = [word.lower() for word in words]
    name = " ".join(words[start:end])
    before = lowered[start - 1] if start > 0 else ""
    tail = list(itertools.takewhile(lambda word: not is_function_word(word), lowered[end:]))
    if any(word in _ADVERBS or word.endswith("ly") for word in tail):
        tail = []
    if before in _AUXILIARIES and 2 <= len(tail) <= _MAX_HEAD_WORDS + 1:
        return " ".join([name, *tail[:-1]])  # the last word is the question's verb
    if before == "the" and 1 <= len(tail) <= 2 and end + len(tail) == len(lowered):
        return " ".join(["the", name, *tail])
    if start >= 3 and lowered[start - 2] == "the" and not is_function_word(before):
        return f"the {before} {name}"  # "the locomotive Curlew"
    thing = _thing_at(lowered, start)
    return thing + name + _when(lowered, end) if thing else name


def _thing_at(lowered: Sequence[str], name_start: int) -> str:
    """The "the … at " before a place's name, when the question is about a thing there ("the
    turbidity incident at " in "What caused the turbidity incident at Marl Lane?"), or ""."""
    if name_start < 3 or lowered[name_start - 1] != "at":
        return ""
    for start in range(name_start - 3, max(0, name_start - 5), -1):
        if lowered[start] == "the":
            head = lowered[start + 1 : name_start - 1]
            if any(map(is_function_word, head)):
                return ""
            return " ".join(["the", *head, "at", ""])
    return ""


def _when(lowered: Sequence[str], end: int) -> str:
    """ " in August 2024" or " in 1912" when the words from ``end`` say when, or ""."""
    after = list(lowered[end : end + 3])
    if after[:1] != ["in"]:
        return ""
    if len(after) == 3 and after[1] in _MONTHS and _YEAR.fullmatch(after[2]):
        return f" in {after[1].capitalize()} {after[2]}"
    if len(after) >= 2 and _YEAR.fullmatch(after[1]):
        return f" in {after[1]}"
    return ""


_PUNCTUATION = "?!.,;:()\"'“”‘’"

#: "that year" and its like in an English follow-up: the year the earlier question named.
_THAT_YEAR = re.compile(r"\b(?:in )?(?:that|this|the same) year\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(?:1[5-9]|20)\d\d\b")


def _with_year(question: str, earlier: Sequence[str]) -> str:
    """``question`` with "that year" written as the year the latest earlier question names
    ("And what was leakage that year?" → "And what was leakage in 2022?")."""
    year = next((found[-1] for found in map(_YEAR.findall, reversed(earlier)) if found), "")
    return _THAT_YEAR.sub(f"in {year}", question, count=1) if year else question


#: English words that stand for a subject, and what takes their place: the subject itself or its
#: possessive (a trailing "there" becomes "at" the place). "This", "that" and "her" are left out:
#: they are as often a determiner, a relative pronoun or an object ("the engine that pulled").
_STANDS_FOR = {
    **dict.fromkeys(("it", "he", "she", "they", "him", "them"), "{}"),
    **dict.fromkeys(("its", "his", "their"), "{}'s"),
}


_POSSESSIVE = word_set("its his their")


def _closing_noun_phrase(before: str, after: str) -> str:
    """The one to three words ending a question after a possessive ("maximum output" in "What
    is its maximum output?"), or "" when the question goes on past them or ends on its verb
    ("When did its line close?")."""
    verb_last = before.split()[-1:] in (["do"], ["does"], ["did"])
    words = after.rstrip(" ?!.").split()
    if (
        not verb_last
        and 1 <= len(words) <= _MAX_HEAD_WORDS
        and not any(is_function_word(word.lower()) or not word.isalpha() for word in words)
    ):
        return " ".join(words)
    return ""


def resolved_question(question: str, earlier: Sequence[str]) -> str:
    """``question`` with the subject it refers to named: the English word that stands for it is
    replaced ("When was it automated?" → "When was Gannet Point automated?", "How long is the
    platform there?" → "… at Lakeside?"), the way a person would write the question out; in the
    other languages the subject is named beside the word ("Wann wurde es (Gannet Point)
    automatisiert?"). Unchanged when no earlier question names one."""
    question = _with_year(question, earlier)
    subject = next((s for s in map(subject_phrase, reversed(earlier)) if s), "")
    if not subject:
        return question
    for match in WORD.finditer(question):
        word = match.group(0).lower()
        if word not in REFERRING:
            continue
        before, after = question[: match.start()], question[match.end() :]
        if word in _POSSESSIVE and (owned := _closing_noun_phrase(before, after)):
            # "What is its maximum output?" → "What is the maximum output of Thornbeck water
            # treatment works?": no "works's" or "the smart metering pilot's".
            return f"{before}the {owned} of {subject}{after[len(after.rstrip(' ?!.')) :]}"
        if word in _STANDS_FOR:
            return before + _STANDS_FOR[word].format(subject) + after
        if word == "there" and not after.strip(" ?!.").strip():  # "… the platform there?"
            return f"{before}at {subject}{after}"
        return f"{question[: match.end()]} ({subject}){after}"
    body = question.rstrip()
    end = len(body.rstrip("?!."))
    return f"{body[:end]} ({subject}){body[end:]}"


def seed_query(question: str, earlier: Sequence[str] = ()) -> str:
    """The engine's search query for ``question``: the question as written, or for a follow-up
    the words it stands for (:func:`seed_words`)."""
    if earlier and refers_back(question):
        return seed_words(question, earlier)
    return question.strip()


def seed_words(question: str, earlier: Sequence[str] = ()) -> str:
    """The words the engine searches for ``question`` by: its content words, or the question
    itself when it has none.

    A follow-up that refers back to the questions ``earlier`` (see :func:`earlier_questions`)
    searches for the question as written out (:func:`resolved_question`), and for their names
    too: "What population equivalent does it serve?" after a question about "Kelham Sands
    wastewater works" searches for "population equivalent kelham sands wastewater works serve",
    as a person who wrote the question out would.
    """
    if earlier and refers_back(question):
        written_out = content_words(resolved_question(question, earlier))
        named = itertools.chain.from_iterable(map(subject_words, earlier))
        own = (word for word in written_out if not is_function_word(word))
        words = list(dict.fromkeys(itertools.chain(own, named)))
    else:
        words = content_words(question)
    return " ".join(words) if words else question.strip()


def earlier_questions(questions: Sequence[str]) -> tuple[str, ...]:
    """What a follow-up to ``questions`` (a conversation's questions, oldest first) may refer to:
    the last one, and — when that one itself refers back — the last one before it that names its
    subject ("When was it automated?" after "What is the range of the Gannet Point light?")."""
    asked = [question.strip() for question in questions if question.strip()]
    if not asked:
        return ()
    last = asked[-1]
    if not refers_back(last):
        return (last,)
    subject = next((q for q in reversed(asked[:-1]) if not refers_back(q)), "")
    return (subject, last) if subject else (last,)


#: Models with fewer parameters answer from the passages found first: their first request offers
#: no tools (``chat.first_request_tools = "auto"``). Measured on the starter model (135M) with
#: ``bench/bench_quality.py``'s questions: with any tool description in the prompt, a full one or
#: a one-line one, it wrote the fact in about 7 answers of 30, and in 11 of 30 without (four
#: sampling seeds each). Models of 1B parameters and more are told about the tools, as are servers.
SMALL_MODEL_PARAMETERS = 1_000_000_000


def first_request_offers_tools(setting: str, parameters: int | None) -> bool:
    """Whether the first request after a search that found passages offers the tools
    (``chat.first_request_tools``; ``parameters``: the model's, None when not known)."""
    if setting == "offered":
        return True
    if setting == "withheld":
        return False
    return parameters is None or parameters >= SMALL_MODEL_PARAMETERS


def seed_limit(parameters: int | None) -> int:
    """How many passages seed the conversation of a model of ``parameters`` (None: not known, a
    server's). A 135M model answered right less often from more passages than three (it copies
    the first heading it meets, and each passage lengthens the prompt it must first read on a
    laptop's cores); a model of billions reads eight well, and each is a search it need not make.
    The hybrid search lays the best of both its halves in them (:mod:`~..workspace.search`)."""
    if parameters is not None and parameters < SMALL_MODEL_PARAMETERS:
        return SEED_LIMIT
    if parameters is not None and parameters < LARGE_MODEL_PARAMETERS:
        return MID_SEED_LIMIT
    return LARGE_SEED_LIMIT


def seed_arguments(query: str, limit: int = SEED_LIMIT) -> str:
    """The arguments of the engine's ``search_workspace`` call, as the model would send them."""
    return json.dumps({"query": query, "limit": limit}, ensure_ascii=False)


def seed_call(
    text: str,
    used: set[str],
    round_number: int | None = None,
    *,
    earlier: Sequence[str] = (),
    limit: int = SEED_LIMIT,
) -> ToolCall:
    """The engine's own ``search_workspace`` call for ``text`` (the question, or a worker's
    section; ``earlier``: the question a follow-up follows) of ``limit`` passages
    (:func:`seed_limit`), with an id no call in ``used`` had (it is added there): the
    coordinator's is :data:`SEED_CALL_ID`, a worker's carries its ``round_number``."""
    call_id = SEED_CALL_ID if round_number is None else f"{SEED_CALL_ID}_{round_number}"
    while call_id in used:  # a conversation continued: an earlier reply's seed
        call_id += "_"
    used.add(call_id)
    query = seed_query(text, earlier)
    return ToolCall(call_id, "search_workspace", seed_arguments(query, limit))


def seed_chars(
    *,
    context_window: int,
    prompt_tokens: int,
    output_tokens: int,
    cap: int,
    question: str,
    limit: int = SEED_LIMIT,
) -> int:
    """How many characters the seed result of ``limit`` passages may take: a share of the
    window's spare room, at most :data:`MAX_SEED_CHARS` for a small model's three and
    :data:`PASSAGE_CHARS` a passage for more.

    Tokens become characters at the rate of the question's script (the passages that match it
    are written in it, mostly). ``cap`` is the tool result size limit (``tools.max_result_chars``);
    the seed never exceeds it.
    """
    room = max(0, context_window - prompt_tokens - output_tokens)
    planned = chars_for_tokens(int(room * SEED_SHARE_OF_ROOM), question)
    most = MAX_SEED_CHARS if limit <= SEED_LIMIT else limit * PASSAGE_CHARS
    return max(MIN_SEED_CHARS, min(cap, planned, most))
