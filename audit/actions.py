"""The names of audit events: a contract read by tools outside medasr (extend, never rename)."""

from __future__ import annotations

from enum import StrEnum


class AuditAction(StrEnum):
    """What happened: PHI seen or sent, a note changed, an account used, data removed."""

    TRANSCRIPT_VIEWED = "transcript_viewed"
    AUDIO_SERVED = "audio_served"
    REVISION_SAVED = "revision_saved"
    FINALIZED = "finalized"
    ACCEPTED = "accepted"
    SENT_BACK = "sent_back"
    LOGIN = "login"
    LOGIN_FAILED = "login_failed"
    LOCKED_OUT = "locked_out"
    LOGOUT = "logout"
    EXPORTED = "exported"
    DELIVERED = "delivered"
    DELIVERY_IN_DOUBT = "delivery_in_doubt"
    RESENT = "resent"
    PURGED = "purged"
    REVIEWER_ADDED = "reviewer_added"
    SETTINGS_CHANGED = "settings_changed"
    DELIVERY_FAILED = "delivery_failed"
    AUDIT_EXPORTED = "audit_exported"
    REVIEWER_DISABLED = "reviewer_disabled"
    REVIEWER_UNLOCKED = "reviewer_unlocked"
    REQUEUED = "requeued"
    PURGE_PAGE = "purge_page"
    QUALITY_EXPORTED = "quality_exported"
    LANGUAGE_CHANGED = "language_changed"
    RECORDINGS_SEARCHED = "recordings_searched"
    AUDIO_CHANGED = "audio_changed"
