"""A reviewed note's word accuracy: the machine's text aligned word by word with the final one.

The final text is the reference (what the note should say), the machine's the
hypothesis. Both are normalized first (`words_of`), so only what a listener would
call a different word counts:

- Unicode NFKC and case folded ("Metformin" = "metformin", full-width digits = digits);
- punctuation is a word boundary, not a word ("follow-up," = "follow up"), except
  between two digits, where it is part of the number ("2.5", "120/80", "10:30");
- whitespace of any kind and amount is one boundary;
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

import jiwer

MAX_PHRASE_WORDS = 3

_BETWEEN_DIGITS = re.compile(r"(?<=\d)[.,:/](?=\d)")
_KEEP = "\x00"  # a punctuation mark held inside a number while the rest is split off

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
    folded = unicodedata.normalize("NFKC", text).casefold()
    held = _BETWEEN_DIGITS.sub(lambda match: _KEEP + str(ord(match.group())) + _KEEP, folded)
    spaced = "".join(" " if _is_punctuation(char) else char for char in held)
    numbers = _NUMBER_WORDS.get(language.split("-")[0], {})
    return [numbers.get(word, word) for word in _unhold(spaced).split()]


def measure_words(machine_text: str, final_text: str, *, language: str) -> WordFigures:
    """The alignment of the machine's words against the final text's."""
    reference, hypothesis = (
        words_of(final_text, language=language),
        words_of(machine_text, language=language),
    )
    if not reference or not hypothesis:
        return WordFigures(len(reference), 0, len(reference), len(hypothesis))
    found = jiwer.process_words(" ".join(reference), " ".join(hypothesis))
    return WordFigures(len(reference), found.substitutions, found.deletions, found.insertions)


def accepted_figures(text: str, *, language: str) -> WordFigures:
    """A note accepted as it is: every word read and kept."""
    return WordFigures(len(words_of(text, language=language)), 0, 0, 0)


def corrections_of(machine_text: str, final_text: str, *, language: str) -> list[tuple[str, str]]:
    """The stretches a reviewer changed, as (machine words, final words), in text order;
    a side may be empty (words added or removed); longer stretches are left out."""
    reference, hypothesis = (
        words_of(final_text, language=language),
        words_of(machine_text, language=language),
    )
    if not reference or not hypothesis:
        return []
    found = jiwer.process_words(" ".join(reference), " ".join(hypothesis))
    pairs: list[tuple[str, str]] = []
    pending: list[jiwer.AlignmentChunk] = []
    for chunk in [*found.alignments[0], None]:
        if chunk is not None and chunk.type != "equal":
            pending.append(chunk)
            continue
        if pending:
            said = hypothesis[pending[0].hyp_start_idx : pending[-1].hyp_end_idx]
            meant = reference[pending[0].ref_start_idx : pending[-1].ref_end_idx]
            if max(len(said), len(meant)) <= MAX_PHRASE_WORDS:
                pairs.append((" ".join(said), " ".join(meant)))
            pending = []
    return pairs


def _is_punctuation(char: str) -> bool:
    return unicodedata.category(char).startswith("P")


def _unhold(text: str) -> str:
    return re.sub(_KEEP + r"(\d+)" + _KEEP, lambda match: chr(int(match.group(1))), text)
