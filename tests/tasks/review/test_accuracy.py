"""Word accuracy of hand-made pairs, against figures worked out by hand."""

from __future__ import annotations

import random
import re
import unicodedata

import pytest

from tasks.review.word_accuracy import corrections_of, measure_words, words_of

# (machine text, final text, (words, S, D, I), accuracy): worked out by hand.
PAIRS = [
    ("patient has a fever", "patient has no fever", (4, 1, 0, 0), 0.75),  # a -> no
    ("take twice daily", "take tablets twice daily", (4, 0, 1, 0), 0.75),  # tablets missed
    ("the the patient is stable", "the patient is stable", (4, 0, 0, 1), 0.75),  # extra "the"
    ("Blood pressure, 120/80. Stable!", "blood pressure 120/80 stable", (4, 0, 0, 0), 1.0),
    ("", "no acute distress", (3, 0, 3, 0), 0.0),  # empty machine text: every word missed
    ("", "", (0, 0, 0, 0), 1.0),
    ("five mg follow-up", "5 mg follow up", (4, 0, 0, 0), 1.0),  # number word, hyphen
    ("met for men 500 mg", "metformin 500 mg", (3, 1, 0, 2), 1 - 3 / 3),
    ("dose 2.5 mg bd", "dose 2,5 mg twice daily", (5, 2, 1, 0), 1 - 3 / 5),
]


@pytest.mark.parametrize(("machine", "final", "counts", "accuracy"), PAIRS)
def test_hand_made_pairs(
    machine: str, final: str, counts: tuple[int, int, int, int], accuracy: float
) -> None:
    figures = measure_words(machine, final, language="en-IN")
    found = (figures.words, figures.substitutions, figures.deletions, figures.insertions)
    assert found == counts
    assert figures.accuracy == pytest.approx(accuracy)


def test_a_decimal_stays_one_word_and_other_punctuation_splits() -> None:
    assert words_of("BP 120/80, temp 37.5; follow-up.", language="en") == [
        "bp", "120/80", "temp", "37.5", "follow", "up",
    ]  # fmt: skip


def test_number_words_are_digits_in_english_only() -> None:
    assert words_of("Five days", language="en-US") == ["5", "days"]
    assert words_of("five days", language="hi-IN") == ["five", "days"]


def test_corrections_are_word_pairs_never_a_sentence() -> None:
    machine = "the patient takes met for men daily and the whole plan was not discussed at all"
    final = "the patient takes metformin daily and we will review the medication list next week"
    pairs = corrections_of(machine, final, language="en")
    assert ("met for men", "metformin") in pairs
    assert all(len(said.split()) <= 3 and len(meant.split()) <= 3 for said, meant in pairs)


# The rule of a word spelled character by character (the module's first spelling): a
# run of letters and digits, and . , : / each between two digits.
_RULE = re.compile(r"(?:[^\W_]|(?<=\d)[.,:/](?=\d))+")


def test_words_follow_the_rule_on_tricky_text() -> None:
    alphabet = ["a", "Z", "5", "0", "\u0967", "\u00e9", "_", "\uff3f", ".", ",", ":", "/", " ", "-"]
    rng = random.Random(44)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        folded = unicodedata.normalize("NFKC", text).casefold()
        assert words_of(text, language="hi-IN") == _RULE.findall(folded), text
    assert words_of("five.6 1..2 x_1.5 \uff3f3:4", language="en") == [
        "5", "6", "1", "2", "x", "1.5", "3:4",
    ]  # fmt: skip
