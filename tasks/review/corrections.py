"""Recurring corrections: which machine words reviewers changed into which, over notes.

Computed on demand from the machine and final texts still in the store (nothing of them
is copied anywhere): after `medasr purge` a note's texts are gone, and its pairs with
them; its figures stay. Only substitutions of at most three words a side are counted
(`word_accuracy.corrections_of`), each once per note however often it recurs there,
with how many authors it came from: a word pair, never a sentence of context.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from storage.accuracy_records import CorrectedNote
from tasks.review.group_quality import ALL_GROUP, NONE_GROUP
from tasks.review.word_accuracy import corrections_of


@dataclass(frozen=True)
class Correction:
    """One recurring substitution within a group."""

    group: str
    machine_words: str
    final_words: str
    notes: int
    authors: int


def recurring_corrections(
    notes: Iterable[CorrectedNote], *, by: str | None, top: int = 50
) -> list[Correction]:
    """The `top` substitutions by the number of notes they occur in, per group."""
    seen: dict[tuple[str, str, str], tuple[int, set[str]]] = {}
    for note in notes:
        group = _group_of(note, by)
        pairs = corrections_of(note.machine_text, note.final_text, language=note.language)
        for said, meant in dict.fromkeys(pairs):
            if not said or not meant:
                continue
            count, authors = seen.get((group, said, meant), (0, set()))
            authors.add(note.author or NONE_GROUP)
            seen[(group, said, meant)] = (count + 1, authors)
    ranked = sorted(seen.items(), key=lambda entry: (-entry[1][0], entry[0]))
    found = [
        Correction(group, said, meant, count, len(authors))
        for (group, said, meant), (count, authors) in ranked
    ]
    if by is None:
        return found[:top]
    kept: dict[str, int] = {}
    limited = []
    for correction in found:
        kept[correction.group] = kept.get(correction.group, 0) + 1
        if kept[correction.group] <= top:
            limited.append(correction)
    return sorted(limited, key=lambda c: (c.group, -c.notes, c.machine_words, c.final_words))


def _group_of(note: CorrectedNote, by: str | None) -> str:
    if by is None:
        return ALL_GROUP
    if by in ("author", "department", "language", "reviewer"):
        return str(getattr(note, by) or NONE_GROUP)
    if by == "month":
        return note.reviewed_at.strftime("%Y-%m")
    return note.metadata.get(by) or NONE_GROUP
