"""The review workstation's settings (MEDASR_REVIEW__*, MEDASR_WEB__*).

`required`: `flagged` holds only what the quality gate flagged; `all` holds every new
transcript for a person (a site that files nothing unread). The web section bounds a
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

    required: Literal["flagged", "all"] = Field(
        "flagged",
        description="flagged: only what the quality gate flags waits for review; all: every one.",
    )


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
