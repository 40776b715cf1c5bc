"""The quality gate's settings section (MEDASR_QUALITY__*): what makes a transcript suspect.

Rate bounds are words per minute of *voiced* audio (the 20 ms frames the splitter
counts as speech; pauses are not counted), so they compare with articulation rate,
not with speaking rate over the whole recording:

* conversational English is spoken at about 150-210 words a minute including pauses
  (Tauroza & Allison 1990, "Speech rates in British English"); articulation rate,
  pauses excluded, is 4-6 syllables a second in read and spontaneous speech (Jacewicz
  et al. 2009), i.e. about 160-320 English words a minute at 1.5 syllables a word, and
  roughly half that in words for agglutinative Tamil or Malayalam (about 3 syllables a
  word). The bounds sit far outside both: 30 and 450 words a voiced minute.
* A rate measured over a few seconds is noise: speaking-rate estimates settle after
  about 9 s of speech (Arantes, "Speech rate estimation: how long should the utterance
  be?"), hence rates are judged only over at least 10 s of voiced audio.
* A chunk with a quarter second of voiced audio holds at least a syllable (the audio
  wing's own shortest speech, tasks/audio/splitter.py): no word for it is `empty_text`. Less
  (a click, a cough) answered with nothing is normal.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, model_validator


class QualitySettings(BaseModel):
    """When a transcript is flagged for review instead of being marked done."""

    min_words_per_voiced_min: float = Field(
        30.0,
        ge=0,
        le=1_000,
        description="Fewer words per minute of voiced audio flag too_few_words.",
    )
    max_words_per_voiced_min: float = Field(
        450.0,
        ge=1,
        le=5_000,
        description="More words per minute of voiced audio flag too_many_words.",
    )
    rate_min_voiced_s: float = Field(
        10.0,
        ge=1,
        le=3_600,
        description="Least voiced audio, seconds, over which a words-per-minute rate is judged.",
    )
    empty_min_voiced_s: float = Field(
        0.25,
        ge=0,
        le=600,
        description="A chunk with this much voiced audio, seconds, and no words flags empty_text.",
    )
    repeat_min_copies: int = Field(
        3,
        ge=2,
        le=100,
        description="Back-to-back copies of one word sequence that flag repetition.",
    )
    repeat_min_words: int = Field(
        8,
        ge=2,
        le=1_000,
        description="Fewest words a repeated loop must span to flag repetition.",
    )
    script_check: bool = Field(
        True,
        description="Flag script_mismatch (off for a service that answers in romanized form).",
    )

    @model_validator(mode="after")
    def _bounds_in_order(self) -> QualitySettings:
        if self.min_words_per_voiced_min >= self.max_words_per_voiced_min:
            raise ValueError(
                "min_words_per_voiced_min must be below max_words_per_voiced_min "
                f"(got {self.min_words_per_voiced_min} and {self.max_words_per_voiced_min})"
            )
        return self
