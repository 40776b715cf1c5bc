"""Seeded faults in the text of a successful answer, to provoke the quality gate's flags.

One draw per answer that carries a text, from a random stream of its own (seeded by
the devserver's seed), so adding text faults never changes which requests get the
network faults of faults.py:

* `empty`: the text is replaced by "" (flag `empty_text`);
* `repeat`: the first words are looped at the end, a decoder stuck in a loop
  (flag `repetition`);
* `wrong_script`: every Latin letter is written in another script, Tamil (Devanagari
  for a Tamil request): an `en-IN` request answered in Tamil (flag `script_mismatch`).
"""

from __future__ import annotations

import random
import threading
import unicodedata
from typing import Final

TEXT_FAULT_NAMES: Final = ("empty", "repeat", "wrong_script")

_LOOP_WORDS = 4  # words of the looped phrase, at most
_LOOP_MIN_WORDS = 24  # the loop spans at least this many words
_FALLBACK_PHRASE = ("the", "patient")  # looped when the answer had no word


def _letters_of(block_start: int, prefix: str) -> str:
    """The first 26 letters named `prefix...` from a 128-code-point Unicode block."""
    letters = [
        chr(code)
        for code in range(block_start, block_start + 0x80)
        if unicodedata.name(chr(code), "").startswith(prefix) and chr(code).isalpha()
    ]
    return "".join(letters[:26])


_TAMIL = str.maketrans("abcdefghijklmnopqrstuvwxyz", _letters_of(0x0B80, "TAMIL LETTER"))
_DEVANAGARI = str.maketrans("abcdefghijklmnopqrstuvwxyz", _letters_of(0x0900, "DEVANAGARI LETTER"))


class TextFaults:
    """Decides, per answer, whether (and how) to spoil its text; thread-safe."""

    def __init__(self, *, p_empty: float, p_repeat: float, p_wrong_script: float, seed: int):
        self._rates = {"empty": p_empty, "repeat": p_repeat, "wrong_script": p_wrong_script}
        self._rng = random.Random(f"text-faults-{seed}")
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        """True when any text fault has a nonzero rate."""
        return any(rate > 0 for rate in self._rates.values())

    def draw(self) -> str | None:
        """The text fault for the next answer (one of TEXT_FAULT_NAMES) or None."""
        if not self.active:
            return None  # no draw at all: the stream stays as it was without text faults
        with self._lock:
            roll = self._rng.random()
        for name, rate in self._rates.items():
            if roll < rate:
                return name
            roll -= rate
        return None


def spoil_text(text: str, *, fault: str, language: str) -> str:
    """`text` as the fault `fault` (one of TEXT_FAULT_NAMES) answers it for `language`."""
    if fault == "empty":
        return ""
    if fault == "repeat":
        words = text.split()
        phrase = tuple(words[:_LOOP_WORDS]) or _FALLBACK_PHRASE
        copies = max(3, -(-_LOOP_MIN_WORDS // len(phrase)))
        return " ".join([*words, *(phrase * copies)])
    if fault == "wrong_script":
        tamil = language == "ta"
        spoiled = text.lower().translate(_DEVANAGARI if tamil else _TAMIL)
        if not any(ch.isalpha() for ch in spoiled):  # "120/80": add a word to be wrong in
            spoiled = f"{spoiled} {'रोगी' if tamil else 'நோயாளி'}".strip()  # "patient"
        return spoiled
    raise ValueError(f"unknown text fault {fault!r} (use {TEXT_FAULT_NAMES})")


def text_fault_problems(p_empty: float, p_repeat: float, p_wrong_script: float) -> list[str]:
    """What is wrong with these rates, one sentence each (empty when they are fine)."""
    rates = {"--p-empty": p_empty, "--p-repeat": p_repeat, "--p-wrong-script": p_wrong_script}
    problems = [
        f"{flag} must be between 0 and 1 (got {rate})"
        for flag, rate in rates.items()
        if not 0.0 <= rate <= 1.0
    ]
    if sum(rates.values()) > 1.0 + 1e-9:
        problems.append("the text fault rates (--p-*) add up to more than 1")
    return problems
