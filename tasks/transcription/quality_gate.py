"""The quality gate: flags a transcript that is empty or absurd, per chunk and per recording.

Pure functions over what the pipeline already knows: each chunk's voiced audio (the
splitter's speech frames), its text, the recording's language and its extras. No I/O,
no Prefect, no SQLAlchemy. Any flag sends the recording to `needs_review`.

Flags (DESIGN.md §9):

* `empty_text`: no word for a chunk holding at least `empty_min_voiced_s` of speech,
  or no word at all for a recording that holds speech;
* `too_few_words` / `too_many_words`: words per minute of voiced audio outside the
  settings' range, judged over at least `rate_min_voiced_s` of voiced audio;
* `repetition`: one word sequence repeated back to back (a decoder loop);
* `script_mismatch`: the text has letters, but not one in the language's script;
* `partial`: the recording's extras say its tail was damaged (`extras["partial"]`).
"""

from __future__ import annotations

import operator
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, count, pairwise
from typing import Any, Final

from config.quality import QualitySettings

FLAGS: Final = (
    "empty_text",
    "too_few_words",
    "too_many_words",
    "repetition",
    "script_mismatch",
    "partial",
)

# The Unicode script of each language's letters (the first word of a letter's Unicode
# name, e.g. "DEVANAGARI LETTER KA"). Keys are exactly service.contract.LANGUAGES.
SCRIPTS: Final[dict[str, str]] = {
    "en-IN": "LATIN",
    "en-US": "LATIN",
    "hi": "DEVANAGARI",
    "mr": "DEVANAGARI",
    "ta": "TAMIL",
    "te": "TELUGU",
    "kn": "KANNADA",
    "ml": "MALAYALAM",
    "bn": "BENGALI",
    "gu": "GUJARATI",
    "pa": "GURMUKHI",
}

_MS_PER_MIN = 60_000
_MAX_LOOP_WORDS = 20  # longest repeated sequence looked for, in words (a long sentence)
_EDGE_PUNCTUATION = re.compile(r"^\W+|\W+$")
_ALNUM = re.compile(r"[^\W_]")  # what str.isalnum() holds true: \w but the underscore


@dataclass(frozen=True)
class ChunkSpeech:
    """One chunk as the gate sees it: its key (index or start ms; ordered as the text),
    voiced audio (ms) and text."""

    index: int
    voiced_ms: int
    text: str


@dataclass(frozen=True)
class QualityReport:
    """The flags of one recording (sorted, as in FLAGS) and of each flagged chunk."""

    flags: tuple[str, ...]
    chunk_flags: dict[int, tuple[str, ...]] = field(default_factory=dict)
    words: int = 0
    voiced_ms: int = 0

    def annotated(self, extras: Mapping[str, Any]) -> dict[str, Any]:
        """`extras` plus, when flagged, this report under "quality" (counts, never text)."""
        return {**extras, "quality": self.extras()} if self.flags else dict(extras)

    def extras(self) -> dict[str, Any]:
        """What the store keeps beside the flags (counts only, never text)."""
        return {
            "words": self.words,
            "voiced_ms": self.voiced_ms,
            "chunk_flags": {str(k): list(v) for k, v in sorted(self.chunk_flags.items())},
        }


def words_of(text: str) -> list[str]:
    """The words of `text`: whitespace-separated tokens that hold a letter or a digit."""
    return [token for token in text.split() if _ALNUM.search(token)]


def script_of_letter(char: str) -> str:
    """The script of a letter from its Unicode name ("LATIN", "TAMIL", ...); "" if unnamed."""
    name = unicodedata.name(char, "")
    return name.split(" ", 1)[0]


def has_script_mismatch(text: str, *, language: str) -> bool:
    """True when `text` has letters and not one of them is in `language`'s script.

    Digits, punctuation and marks are not letters. A language outside SCRIPTS is
    never judged (False).
    """
    script = SCRIPTS.get(language)
    if script is None:
        return False
    has_letters = False
    for char in text:  # the first letter in the script settles it (most texts: the first)
        if char.isalpha():
            if script_of_letter(char) == script:
                return False
            has_letters = True
    return has_letters


def has_repetition(words: Sequence[str], *, min_copies: int, min_words: int) -> bool:
    """True when some sequence of 1-20 words occurs `min_copies` times back to back and
    the copies span at least `min_words` words (case and edge punctuation ignored)."""
    folded = [_EDGE_PUNCTUATION.sub("", word.casefold()) for word in words]
    for size in range(1, _MAX_LOOP_WORDS + 1):
        copies_needed = max(min_copies, -(-min_words // size))
        if copies_needed * size > len(folded):
            continue
        if _longest_loop(folded, size=size) >= copies_needed:
            return True
    return False


def _longest_loop(words: Sequence[str], *, size: int) -> int:
    """Most back-to-back copies of any `size`-word sequence in `words`.

    c copies from position a are a run of (c - 1) * size positions from a whose word equals
    the word `size` after it. Those positions are found in C (compress over map); the loop
    walks only them, and a text without loops has few.
    """
    same = list(compress(count(), map(operator.eq, words, words[size:])))
    longest = run = 0
    for previous, position in pairwise([-2, *same]):
        run = run + 1 if position == previous + 1 else 1
        longest = max(longest, run)
    return longest // size + 1


def rate_flags(*, words: int, voiced_ms: int, settings: QualitySettings) -> list[str]:
    """too_few_words / too_many_words for `words` over `voiced_ms`, if enough is voiced."""
    if voiced_ms < settings.rate_min_voiced_s * 1000:
        return []
    per_min = words * _MS_PER_MIN / voiced_ms
    if per_min < settings.min_words_per_voiced_min:
        return ["too_few_words"]
    if per_min > settings.max_words_per_voiced_min:
        return ["too_many_words"]
    return []


def text_flags(
    text: str, *, voiced_ms: int, empty_min_ms: float, language: str, settings: QualitySettings
) -> list[str]:
    """Flags of one text over `voiced_ms` of speech; empty_text from `empty_min_ms` voiced."""
    words = words_of(text)
    if not words:
        return ["empty_text"] if voiced_ms > 0 and voiced_ms >= empty_min_ms else []
    flags = rate_flags(words=len(words), voiced_ms=voiced_ms, settings=settings)
    copies, span = settings.repeat_min_copies, settings.repeat_min_words
    if has_repetition(words, min_copies=copies, min_words=span):
        flags.append("repetition")
    if settings.script_check and has_script_mismatch(text, language=language):
        flags.append("script_mismatch")
    return flags


def assess_recording(
    chunks: Iterable[ChunkSpeech],
    *,
    language: str,
    extras: Mapping[str, Any],
    settings: QualitySettings,
) -> QualityReport:
    """The flags of a transcribed recording from its chunks (silent ones included)."""
    chunk_list = sorted(chunks, key=lambda chunk: chunk.index)
    per_chunk: dict[int, tuple[str, ...]] = {}
    for chunk in chunk_list:
        found = text_flags(
            chunk.text,
            voiced_ms=chunk.voiced_ms,
            empty_min_ms=settings.empty_min_voiced_s * 1000,
            language=language,
            settings=settings,
        )
        if found:
            per_chunk[chunk.index] = _ordered(found)
    text = " ".join(chunk.text.strip() for chunk in chunk_list if chunk.text.strip())
    voiced_ms = sum(chunk.voiced_ms for chunk in chunk_list)
    # The whole recording: any speech with no word at all is empty, however little.
    whole = text_flags(
        text, voiced_ms=voiced_ms, empty_min_ms=0, language=language, settings=settings
    )
    found_all = [*whole, *(flag for flags in per_chunk.values() for flag in flags)]
    if extras.get("partial"):
        found_all.append("partial")
    return QualityReport(
        flags=_ordered(found_all),
        chunk_flags=per_chunk,
        words=len(words_of(text)),
        voiced_ms=voiced_ms,
    )


def _ordered(flags: Iterable[str]) -> tuple[str, ...]:
    """Distinct flags in the order of FLAGS."""
    present = set(flags)
    return tuple(flag for flag in FLAGS if flag in present)


def review_transcript(
    texts: Mapping[int, str],
    voiced_ms: Mapping[int, int],
    *,
    language: str,
    extras: Mapping[str, Any],
    settings: QualitySettings,
) -> QualityReport:
    """The report of a recording from its chunks' texts and voiced ms, both keyed alike
    (the pipeline keys them by the chunk's start ms)."""
    chunks = [
        ChunkSpeech(index=index, voiced_ms=voiced_ms.get(index, 0), text=texts.get(index, ""))
        for index in sorted(set(texts) | set(voiced_ms))
    ]
    return assess_recording(chunks, language=language, extras=extras, settings=settings)
