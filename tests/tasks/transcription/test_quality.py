"""The quality gate's flags, one rule at a time (pure functions, no audio)."""

from __future__ import annotations

import random

import pytest

from config.quality import QualitySettings
from service.contract import LANGUAGES
from tasks.transcription.quality_gate import (
    FLAGS,
    SCRIPTS,
    ChunkSpeech,
    assess_recording,
    has_repetition,
    has_script_mismatch,
    rate_flags,
    words_of,
)

DEFAULTS = QualitySettings()
MINUTE_MS = 60_000
CLEAN_EN = "patient is a 54 year old male admitted with chest pain. troponin negative."
# A sentence per language in its own script, some with English drug names inside.
NATIVE = {
    "en-IN": "bp 130/80, continue amlodipine 5 mg once daily.",
    "en-US": "no fever, lungs clear.",
    "hi": "मरीज़ को metformin 500 mg दिन में दो बार दें।",
    "mr": "रुग्णाला paracetamol 650 mg द्या.",
    "ta": "நோயாளிக்கு காய்ச்சல் இல்லை, aspirin 75 mg.",
    "te": "రోగికి జ్వరం లేదు.",
    "kn": "ರೋಗಿಗೆ ಜ್ವರ ಇಲ್ಲ.",
    "ml": "രോഗിക്ക് പനി ഇല്ല, ecg normal.",
    "bn": "রোগীর জ্বর নেই।",
    "gu": "દર્દીને તાવ નથી.",
    "pa": "ਮਰੀਜ਼ ਨੂੰ ਬੁਖਾਰ ਨਹੀਂ ਹੈ।",
}


def sentence_of(words: int) -> str:
    """`words` distinct words and a trailing space."""
    return "".join(f"w{i} " for i in range(words))


def speech(text: str, *, voiced_s: float, index: int = 1) -> ChunkSpeech:
    return ChunkSpeech(index=index, voiced_ms=int(voiced_s * 1000), text=text)


def assess(*chunks: ChunkSpeech, language: str = "en-IN", **extras: object) -> tuple[str, ...]:
    return assess_recording(chunks, language=language, extras=extras, settings=DEFAULTS).flags


def test_the_scripts_cover_exactly_the_service_languages() -> None:
    assert set(SCRIPTS) == set(LANGUAGES)
    assert set(NATIVE) == set(LANGUAGES)


@pytest.mark.parametrize("language", sorted(NATIVE))
def test_a_native_sentence_in_every_language_raises_no_flag(language: str) -> None:
    assert assess(speech(NATIVE[language], voiced_s=3), language=language) == ()


@pytest.mark.parametrize(
    ("text", "language", "mismatch"),
    [
        ("mareez ko bukhaar nahin hai", "hi", True),
        ("patient stable, discharge tomorrow", "hi", True),
        ("मरीज़ को metformin 500 mg दें", "hi", False),
        ("नोयाल metformin amlodipine atorvastatin aspirin", "hi", False),
        ("நோயாளிக்கு காய்ச்சல் இல்லை", "en-IN", True),
        ("नोयाल", "en-US", True),
        ("நோயாளிக்கு காய்ச்சல் இல்லை", "ml", True),
        ("bp 130/80", "en-IN", False),
        ("130/80 98% 72", "hi", False),
        ("", "ta", False),
        ("ಜ್ವರ", "te", True),
        ("ਬੁਖਾਰ", "pa", False),
        ("ਬੁਖਾਰ", "hi", True),
    ],
    ids=[
        "hi-romanized",
        "hi-english-only",
        "hi-with-english-drug",
        "hi-one-native-word-many-drugs",
        "en-IN-tamil",
        "en-US-devanagari",
        "ml-tamil",
        "en-IN-latin-and-digits",
        "hi-digits-only",
        "ta-empty",
        "te-kannada",
        "pa-gurmukhi",
        "hi-gurmukhi",
    ],
)
def test_script_mismatch_needs_letters_none_of_them_in_the_script(
    text: str, language: str, mismatch: bool
) -> None:
    assert has_script_mismatch(text, language=language) is mismatch


def test_script_mismatch_is_not_judged_for_an_unknown_language() -> None:
    assert has_script_mismatch("anything", language="xx") is False


def test_a_setting_turns_the_script_check_off_for_a_romanized_service() -> None:
    romanized = QualitySettings(script_check=False)
    chunk = speech("mareez ko bukhaar nahin hai", voiced_s=2)
    on = assess_recording([chunk], language="hi", extras={}, settings=DEFAULTS)
    off = assess_recording([chunk], language="hi", extras={}, settings=romanized)
    assert on.flags == ("script_mismatch",)
    assert off.flags == ()


@pytest.mark.parametrize(
    ("text", "repeated"),
    [
        ("the patient " * 6, True),
        ("no " * 8, True),
        ("no " * 7, False),
        ("chest pain chest pain", False),
        ("twice daily " * 4, True),
        ("twice daily " * 3, False),
        ("take one tablet at night " * 3, True),
        ("take one tablet at night " * 2, False),
        ("Pain. pain, PAIN pain pain pain pain pain", True),
        ("intro words then " + "a b c d e f g h i j k l " * 3, True),
        (sentence_of(21) * 3, False),
        (sentence_of(20) * 3, True),
        ("very very mild pain, no no fever", False),
        (CLEAN_EN, False),
        ("", False),
    ],
    ids=[
        "2-gram-x6",
        "1-gram-x8",
        "1-gram-x7",
        "2-gram-x2",
        "2-gram-x4",
        "2-gram-x3-spans-6-words",
        "5-gram-x3",
        "5-gram-x2",
        "case-and-punctuation-folded",
        "12-gram-x3-after-a-prefix",
        "21-gram-longer-than-looked-for",
        "20-gram-x3",
        "doubled-words",
        "clean-dictation",
        "empty",
    ],
)
def test_repetition_is_a_loop_of_copies_back_to_back(text: str, repeated: bool) -> None:
    found = has_repetition(text.split(), min_copies=3, min_words=8)
    assert found is repeated


def _copies_block_by_block(words: list[str], *, size: int) -> int:
    """The definition, slowly: most equal `size`-word blocks back to back, any phase."""
    best = 1
    for start in range(size):
        copies = 1
        for at in range(start + size, len(words) - size + 1, size):
            copies = copies + 1 if words[at : at + size] == words[at - size : at] else 1
            best = max(best, copies)
    return best


def test_repetition_agrees_with_comparing_block_by_block() -> None:
    """Random texts of few distinct words (loops of every size and phase): whether a
    loop is flagged is what comparing each block with the one before it says."""
    rng = random.Random(45)
    for _ in range(3000):
        words = [rng.choice("abcd"[: rng.randint(1, 4)]) for _ in range(rng.randint(0, 60))]
        copies, span = rng.randint(2, 4), rng.randint(1, 12)
        expected = any(
            _copies_block_by_block(words, size=size) >= max(copies, -(-span // size))
            for size in range(1, 21)
            if max(copies, -(-span // size)) * size <= len(words)
        )
        assert has_repetition(words, min_copies=copies, min_words=span) is expected, words


def test_repetition_across_a_chunk_boundary_flags_the_recording() -> None:
    first = speech("history of cough " + "the patient " * 2, voiced_s=3, index=1)
    second = speech("the patient " * 2 + "was seen", voiced_s=3, index=2)
    report = assess_recording([first, second], language="en-IN", extras={}, settings=DEFAULTS)
    assert report.flags == ("repetition",)
    assert report.chunk_flags == {}


@pytest.mark.parametrize(
    ("words", "voiced_s", "expected"),
    [
        (5, 60, ["too_few_words"]),
        (30, 60, []),
        (29, 60, ["too_few_words"]),
        (450, 60, []),
        (451, 60, ["too_many_words"]),
        (150, 60, []),
        (0, 9.9, []),
        (500, 9.9, []),
        (1, 10, ["too_few_words"]),
        (100, 10, ["too_many_words"]),
    ],
    ids=[
        "5-per-min",
        "30-per-min-lower-bound",
        "29-per-min",
        "450-per-min-upper-bound",
        "451-per-min",
        "150-per-min-typical",
        "too-little-voiced-to-judge-few",
        "too-little-voiced-to-judge-many",
        "6-per-min-over-10s",
        "600-per-min-over-10s",
    ],
)
def test_rates_are_words_per_voiced_minute_inside_the_range(
    words: int, voiced_s: float, expected: list[str]
) -> None:
    assert rate_flags(words=words, voiced_ms=int(voiced_s * 1000), settings=DEFAULTS) == expected


def test_the_rate_range_is_a_setting() -> None:
    strict = QualitySettings(min_words_per_voiced_min=100, max_words_per_voiced_min=200)
    assert rate_flags(words=99, voiced_ms=MINUTE_MS, settings=strict) == ["too_few_words"]
    assert rate_flags(words=201, voiced_ms=MINUTE_MS, settings=strict) == ["too_many_words"]
    assert rate_flags(words=150, voiced_ms=MINUTE_MS, settings=strict) == []


def test_a_rate_range_upside_down_is_refused() -> None:
    with pytest.raises(ValueError, match="must be below"):
        QualitySettings(min_words_per_voiced_min=300, max_words_per_voiced_min=200)


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        ([speech("", voiced_s=5)], ("empty_text",)),
        ([speech("  . , ", voiced_s=5)], ("empty_text",)),
        ([speech("", voiced_s=0)], ()),
        ([speech("", voiced_s=0.1)], ("empty_text",)),
        ([speech("bp stable", voiced_s=1), speech("", voiced_s=0.1, index=2)], ()),
        ([speech("bp stable", voiced_s=1), speech("", voiced_s=2, index=2)], ("empty_text",)),
        ([speech("bp stable", voiced_s=1), speech("", voiced_s=0.3, index=2)], ("empty_text",)),
        ([speech("bp stable", voiced_s=1), speech("", voiced_s=0.2, index=2)], ()),
    ],
    ids=[
        "speech-no-text",
        "punctuation-only",
        "silent-chunk-no-text",
        "little-speech-whole-recording-empty",
        "a-cough-chunk-no-text",
        "a-spoken-chunk-no-text",
        "a-syllable-chunk-no-text",
        "under-a-syllable-no-text",
    ],
)
def test_empty_text_is_no_word_where_there_was_speech(
    chunks: list[ChunkSpeech], expected: tuple[str, ...]
) -> None:
    assert assess(*chunks) == expected


def test_a_long_empty_chunk_is_flagged_empty_not_too_few() -> None:
    report = assess_recording(
        [speech(CLEAN_EN, voiced_s=4, index=1), speech("", voiced_s=60, index=2)],
        language="en-IN",
        extras={},
        settings=DEFAULTS,
    )
    assert report.chunk_flags == {2: ("empty_text",)}
    assert "empty_text" in report.flags


def test_partial_comes_from_the_extras_the_audio_wing_writes() -> None:
    partial = {"damaged_at_ms": 61_000, "reason": "the tail is damaged", "error_kind": "corrupt"}
    assert assess(speech(CLEAN_EN, voiced_s=4), partial=partial) == ("partial",)
    assert assess(speech(CLEAN_EN, voiced_s=4), partial=None) == ()


def test_flags_are_distinct_and_in_a_stable_order() -> None:
    looped = "patient " * 300
    report = assess_recording(
        [speech(looped, voiced_s=20, index=1), speech(looped, voiced_s=20, index=2)],
        language="hi",
        extras={"partial": {"damaged_at_ms": 1}},
        settings=DEFAULTS,
    )
    assert report.flags == ("too_many_words", "repetition", "script_mismatch", "partial")
    assert list(report.flags) == [flag for flag in FLAGS if flag in report.flags]
    assert report.chunk_flags[1] == ("too_many_words", "repetition", "script_mismatch")


def test_the_report_extras_hold_counts_not_text() -> None:
    report = assess_recording(
        [speech("", voiced_s=2, index=3), speech(CLEAN_EN, voiced_s=4, index=1)],
        language="en-IN",
        extras={},
        settings=DEFAULTS,
    )
    assert report.extras() == {
        "words": len(words_of(CLEAN_EN)),
        "voiced_ms": 6000,
        "chunk_flags": {"3": ["empty_text"]},
    }
    assert "patient" not in repr(report.extras())


@pytest.mark.parametrize(
    ("text", "count"),
    [("a b  c", 3), ("bp 130/80.", 2), (" - , . ", 0), ("", 0), ("मरीज़ को", 2)],
    ids=["spaces", "digits-and-slash", "punctuation-only", "empty", "devanagari"],
)
def test_words_are_tokens_with_a_letter_or_digit(text: str, count: int) -> None:
    assert len(words_of(text)) == count
