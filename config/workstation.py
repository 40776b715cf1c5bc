"""The review workstation's settings (MEDASR_REVIEW__*, MEDASR_WEB__*).

`required`: `flagged` holds only what the quality gate flagged; `all` holds every new
transcript for a person (a site that files nothing unread); `measured` holds what the
gate flagged and the transcripts of authors (else departments, else languages) whose
measured word accuracy is below `min_accuracy` or who have too few reviewed notes.
`sample_rate` holds a reproducible share of the rest in every mode. The web section bounds a
browser session: idle time, lockout after wrong passwords, TLS for any host other than
loopback (MEDASR_ALLOW_INSECURE_HTTP=true allows plain HTTP there on purpose).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

# Wrong passwords in a row that lock an account (OWASP: lock after a handful).
MAX_FAILED_LOGINS = 5


class ReviewSettings(BaseModel):
    """Which transcripts wait for a person before they are filed."""

    required: Literal["flagged", "all", "measured"] = Field(
        "flagged",
        description=(
            "flagged: only what the quality gate flags waits for review; all: every one; "
            "measured: also authors below min_accuracy or with fewer than min_notes reviewed."
        ),
    )
    min_accuracy: float = Field(
        0.97,
        ge=0.0,
        le=1.0,
        description="measured: an author's word accuracy under this holds their notes.",
    )
    window_notes: int = Field(
        50, ge=1, le=10_000, description="measured: an author's accuracy over this many notes."
    )
    min_notes: int = Field(
        20,
        ge=0,
        le=10_000,
        description="measured: an author with fewer reviewed notes is reviewed until known.",
    )
    sample_rate: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description=(
            "Share of the notes not otherwise held kept for review, chosen from each "
            "recording's identity (default 0, or 0.05 under measured)."
        ),
    )

    segment_max_s: float = Field(
        30.0,
        ge=5.0,
        le=3600.0,
        description=(
            "Workstation: a transcribed chunk longer than this many seconds shows its pauses "
            "as sub-segment marks on the recording's waveform."
        ),
    )

    def effective_sample_rate(self) -> float:
        """The sample rate asked for, else the mode's default."""
        if self.sample_rate is not None:
            return self.sample_rate
        return 0.05 if self.required == "measured" else 0.0


class WebSettings(BaseModel):
    """`medasr web`: sessions, lockout and TLS of the review workstation."""

    idle_timeout_s: float = Field(
        900.0, ge=10, le=86_400, description="A session ends after this long without a request, s."
    )
    lockout_s: float = Field(
        900.0,
        ge=1,
        le=86_400,
        description="An account is locked this long after 5 wrong passwords in a row, s.",
    )
    tls_cert: Path | None = Field(
        None, description="PEM certificate of `medasr web` (needed off loopback)."
    )
    tls_key: Path | None = Field(
        None, description="PEM private key of `medasr web` (needed off loopback)."
    )
