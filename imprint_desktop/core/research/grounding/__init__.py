"""Which passage sentence each claim of an answer stands on, and what nothing supports.

A small model often states a number, date or name that is not the one its passages give — the
number in the next table row, another lighthouse's year, a construction cost offered as a ticket
price — in the same confident voice as a right answer. This package checks an answer against the
passages of its reply deterministically (no model request) and says, per sentence of the answer:

- which passage sentences hold what it claims (its numbers with their units, dates, times and
  names), so the answer can cite them inline and its Sources quote them; and
- which of its numbers, dates and names no passage holds ("not in your documents"), or only a
  passage sentence about something else holds ("the passage says this of Gannet Point").

The call tree, module by module::

    answer.ground(question, answer, passages)  -> Grounded: the answer with its cites, its
                                                  GroundingView and the quotes for Sources
      passages.units_of(passage)                a passage's sentences, list items and table
                                                rows, each with its heading, title, file name
      question.Question.read(question)          its subject names and key terms, the kind of
                                                value it wants, the years it names
      anchors.anchors_in(text)                  numbers (value + unit), dates, times, names
      checker.Checker.check(anchor, claim)      the sentences holding it; is one about the
                                                question?
      asked.unanswered(checker, given, answer)  does the answer as a whole give what the
                                                question asks for?
      measures.measures_asked(question)         the measures it asks its answer in: a sentence
                                                without one is not offered ("Your documents
                                                say: …") nor asked again from
    second_look.worth_a_second_look(…)          a flagged answer: the sentence to ask again from
    second_look.confirms(…)                     does the answer asked again stand?
    second_look.what_stands(…)                  … or the opening of it that does
    asked.unmentioned(question, passages)       do the passages hold any of the question's
                                                names and key terms at all? (else: "not found")
    words                                       stems, stopwords, units: what all of them share

A sentence *about the question* holds the anchor and nothing says it is about something else:

- **another subject**: a sentence holding the question's terms and more of them (a superset) holds
  a different value of the same kind ("Marrow Head was automated in 1991" beside "Gannet Point
  … 1986"); within one sentence, the anchor's clause names another name and a clause naming the
  question's subject holds a rival value; within one table row, the anchor's cell is labelled
  otherwise than a cell the question names ("Q2: 61%" when it asks about Q1);
- **another matter**: the question's key terms (what it asks about, not its subject's name nor
  the kind of answer it wants — "ticket", not "Skerry Rock" or "cost") are not all in the
  documents, and the sentence holds none of them;
- **a narrower thing**: a word that narrows what the question asks about ("a *senior* fare", "the
  *original* viaduct") is in no passage, or not in the sentence while another sentence holds it
  with another value; the question names a year and the sentence, with what it stands under,
  names none.

And the answer as a whole (:mod:`.asked`) gives a value of the kind asked for (a time to "what
time"), not only the question's own words, from a sentence about what it asks.

The rules are lenient on purpose: a right answer flagged teaches a person to ignore the flags, so a
sentence is only said to be about something else when the passages show what it is about instead.
Paraphrase costs nothing (words are compared by their first letters, units by what they measure).
"""

from imprint_desktop.core.research.grounding.answer import Grounded, declines, ground
from imprint_desktop.core.research.grounding.asked import unmentioned
from imprint_desktop.core.research.grounding.checker import NOT_IN_DOCUMENTS
from imprint_desktop.core.research.grounding.passages import QUOTE_CHARS, PassageText, quote
from imprint_desktop.core.research.grounding.second_look import (
    SecondLook,
    confirms,
    what_stands,
    worth_a_second_look,
)

__all__ = [
    "NOT_IN_DOCUMENTS",
    "QUOTE_CHARS",
    "Grounded",
    "PassageText",
    "SecondLook",
    "confirms",
    "declines",
    "ground",
    "quote",
    "unmentioned",
    "what_stands",
    "worth_a_second_look",
]
