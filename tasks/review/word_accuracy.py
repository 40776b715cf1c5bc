"""A reviewed note's word accuracy: the machine's text aligned word by word with the final one.

The final text is the reference (what the note should say), the machine's the
hypothesis. Both are normalized first (`words_of`), so only what a listener would
call a different word counts:

- Unicode NFKC and case folded ("Metformin" = "metformin", full-width digits = digits);
- a word is a run of letters and digits: punctuation, symbols and whitespace of any
  kind and amount are boundaries, not words ("follow-up," = "follow up"), except
  . , : / between two digits, which are part of the number ("2.5", "120/80", "10:30");
- in English, the number words zero to twenty and the tens become digits ("five" =
  "5"), the usual dictation/typing difference; compounds ("five hundred") are left
  as words. Other languages keep their number words (their compounds are written as
  one word, where a table of single words would be wrong more often than right).

jiwer (on rapidfuzz) aligns the two word lists: substitutions, deletions (words of the
final text the machine missed) and insertions (machine words the reviewer removed).
Word accuracy = 1 - (S + D + I) / N over the N words of the final text, floored at 0;
a note with no final words is 1.0 when the machine's text is empty too, else 0.0.
`corrections_of` gives the edited stretches as (machine words, final words) pairs of at
most `MAX_PHRASE_WORDS` words a side: a rewritten sentence is not a misrecognition.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rapidfuzz.distance import Opcode

MAX_PHRASE_WORDS = 3

# A word: letters and digits, with . , : / kept between two digits ("2.5", "120/80").
# Spelled for speed (the Quality page splits 2,000 notes a view): underscores are turned
# into spaces first, so \w is a letter or digit; a run of them is matched whole and a
# separator is tried only after it ends, not at every character (tests/tasks/review/
# test_accuracy.py checks it against the rule's character-by-character spelling).
_WORD = re.compile(r"\w+(?:(?<=\d)[.,:/](?=\d)\w+)*")

_EN_UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
_EN_TENS = "thirty forty fifty sixty seventy eighty ninety"
_EN_NUMBERS = {word: str(n) for n, word in enumerate(_EN_UNITS.split())} | {
    word: str(10 * tens) for tens, word in enumerate(_EN_TENS.split(), start=3)
}
_NUMBER_WORDS = {"en": _EN_NUMBERS}


@dataclass(frozen=True)
class WordFigures:
    """One note's alignment counts and its word accuracy."""

    words: int  # in the final text, normalized
    substitutions: int
    deletions: int
    insertions: int

    @property
    def errors(self) -> int:
        """Words changed, missed or removed."""
        return self.substitutions + self.deletions + self.insertions

    @property
    def accuracy(self) -> float:
        """1 - WER, floored at 0."""
        if self.words == 0:
            return 1.0 if self.errors == 0 else 0.0
        return max(0.0, 1.0 - self.errors / self.words)


def words_of(text: str, *, language: str) -> list[str]:
    """The normalized words of a text (see the module's docstring)."""
    folded = unicodedata.normalize("NFKC", text).casefold().replace("_", " ")
    numbers = _NUMBER_WORDS.get(language.split("-")[0], {})
    words: list[str] = _WORD.findall(folded)
    return list(map(numbers.get, words, words)) if numbers else words


def measure_words(machine_text: str, final_text: str, *, language: str) -> WordFigures:
    """The alignment of the machine's words against the final text's."""
    reference, hypothesis = (
        words_of(final_text, language=language),
        words_of(machine_text, language=language),
    )
    if not reference or not hypothesis:
        return WordFigures(len(reference), 0, len(reference), len(hypothesis))
    import jiwer  # here, not at the top: `medasr quality` reads sums and never aligns

    found = jiwer.process_words(" ".join(reference), " ".join(hypothesis))
    return WordFigures(len(reference), found.substitutions, found.deletions, found.insertions)


def accepted_figures(text: str, *, language: str) -> WordFigures:
    """A note accepted as it is: every word read and kept."""
    return WordFigures(len(words_of(text, language=language)), 0, 0, 0)


def corrections_of(machine_text: str, final_text: str, *, language: str) -> list[tuple[str, str]]:
    """The stretches a reviewer changed, as (machine words, final words), in text order;
    a side may be empty (words added or removed); longer stretches are left out.

    rapidfuzz's opcodes (the alignment jiwer itself runs on) straight over the word
    lists: the corrections of thousands of notes are read at once."""
    said_words, meant_words = (
        words_of(machine_text, language=language),
        words_of(final_text, language=language),
    )
    if not said_words or not meant_words:
        return []
    from rapidfuzz.distance import Levenshtein  # as jiwer, only when a note is aligned

    pairs: list[tuple[str, str]] = []
    pending: list[Opcode] = []
    for opcode in [*Levenshtein.opcodes(said_words, meant_words), None]:
        if opcode is not None and opcode.tag != "equal":
            pending.append(opcode)
            continue
        if pending:
            said = said_words[pending[0].src_start : pending[-1].src_end]
            meant = meant_words[pending[0].dest_start : pending[-1].dest_end]
            if max(len(said), len(meant)) <= MAX_PHRASE_WORDS:
                pairs.append((" ".join(said), " ".join(meant)))
            pending = []
    return pairs
