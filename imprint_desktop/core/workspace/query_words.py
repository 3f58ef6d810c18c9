"""The words of a query worth searching for: a question's content words, without the function
words of its language ("what does the …" matches everything and nothing).

The language is the one whose function words the question uses most; a question in none of them
keeps every word. The engine's own first search (:mod:`~imprint_desktop.core.research.seed`),
the search by words (:func:`.search.fts_terms`) and the built-in embedder's reading of a query
(:mod:`.embedding`) all read a question this way, so a question searched as written finds what
its content words would.
"""

from __future__ import annotations

import re
from collections.abc import Sequence


def word_set(text: str) -> frozenset[str]:
    """The words of ``text``, split at white space."""
    return frozenset(text.split())


WORD = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*", re.UNICODE)

# Function words of the languages a question is most likely to come in. Lists are short on
# purpose: what matters is that the words a question is built from ("what", "when", "does",
# "the") do not reach the search as if they were what it is about.
STOPWORDS: dict[str, frozenset[str]] = {
    "en": word_set(
        "a about above after again against all am an and any are as at be because been before "
        "being below between both but by can could did do does doing down during each few for "
        "from further had has have having he her here hers herself him himself his how i if in "
        "into is it its itself just me more most my myself no nor not now of off on once only or "
        "other our ours ourselves out over own same she should so some such than that the their "
        "theirs them themselves then there these they this those through to too under until up "
        "very was we were what when where which while who whom whose why will with would you your "
        "yours yourself yourselves tell please know find show give list explain describe say says "
        "said ever many much"
    ),
    "de": word_set(
        "der die das den dem des ein eine einer eines einem einen und oder aber wie was wer wann "
        "wo warum welche welcher welches ist sind war waren wird wurde wurden hat haben hatte im "
        "in am an auf aus bei mit nach von vor zu zum zur über unter für gegen ohne um es er sie "
        "ich du wir ihr nicht auch noch nur schon sehr bitte"
    ),
    "fr": word_set(
        "le la les un une des du de d l et ou mais comment que qui quoi quand où pourquoi quel "
        "quelle quels quelles est sont était étaient a ont avait au aux dans en sur sous pour par "
        "avec sans ce cet cette ces il elle ils elles je tu nous vous ne pas plus"
    ),
    "es": word_set(
        "el la los las un una unos unas y o pero cómo como qué que quién quien cuándo cuando "
        "dónde donde por porqué cuál cual es son era eran fue fueron ha han había al del de en "
        "con sin para sobre entre lo le les se su sus no sí muy"
    ),
    "nl": word_set(
        "de het een en of maar hoe wat wie wanneer waar waarom welke welk is zijn was waren werd "
        "werden heeft hebben had in op aan bij met naar van voor tot om uit over onder niet ook "
        "nog er ik je jij wij we zij ze hij"
    ),
}


#: Function words that say something of what they stand beside ("costs going *up*", "*not*
#: allowed", "*more* than"): nothing to a search by words, which finds them everywhere, but part
#: of what a text means (:func:`meaning_words`).
MEANINGFUL = word_set(
    "up down over under off out above below against before after again further more most few "
    "no nor not only same too very between during until"
)


def content_words(question: str) -> list[str]:
    """The words of ``question`` worth searching for, in order, each once (lower-cased): without
    the function words of its language."""
    words = [word.lower() for word in WORD.findall(question)]
    if not words:
        return []
    stop = function_words(words)
    kept = [word for word in words if word not in stop and not _is_noise(word)]
    return list(dict.fromkeys(kept or words))


def function_words(words: Sequence[str]) -> frozenset[str]:
    """The function words of the language ``words`` (lower-cased) use most of them, or none
    when they use none: what a search of those words leaves out."""
    language = max(STOPWORDS, key=lambda name: sum(word in STOPWORDS[name] for word in words))
    used = any(word in STOPWORDS[language] for word in words)
    return STOPWORDS[language] if used else frozenset()


def _is_noise(word: str) -> bool:
    """One-letter words other than digits carry nothing a search can use."""
    return len(word) == 1 and not word.isdigit()


def is_function_word(word: str) -> bool:
    """Whether ``word`` (lower-cased) is a function word of any of the languages known."""
    return any(word in words for words in STOPWORDS.values())


def meaning_words(text: str) -> str:
    """``text`` as an embedder that averages its words' vectors reads it: its words as written
    (the case the documents were embedded in), without the function words of its language but
    for those that carry meaning (:data:`MEANINGFUL`); ``text`` itself when nothing is left."""
    words = WORD.findall(text)
    stop = function_words([word.lower() for word in words]) - MEANINGFUL
    kept = [word for word in words if word.lower() not in stop and not _is_noise(word)]
    return " ".join(dict.fromkeys(kept)) or text
