"""The per-run audio cap (`--max-audio-hours`): recordings are sent whole or not at all.

Each recording about to be sent asks for its whole length (measured before decoding,
tasks/audio/length.py); one that would take the run past the cap is given back unsent
and stays pending for the next run, and the run claims nothing more. A recording whose
answers were reused costs nothing and asks for nothing. The cap is one run's: workers on
one store each keep their own. Mutated on the event loop thread only.
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.interface import UnitOfWorkFactory

MS_PER_HOUR = 3_600_000


@dataclass
class AudioBudget:
    """What is left of one run's audio cap, and whether a recording did not fit."""

    cap_ms: int
    taken_ms: int = 0
    reached: bool = False  # a recording did not fit: claim no more
    measured_ms: int = 0  # every recording measured, fitting or not (for the estimate left)
    measured_bytes: int = 0

    @classmethod
    def of_hours(cls, hours: float | None) -> AudioBudget | None:
        """The budget of a cap in hours; None without a cap."""
        return None if hours is None else cls(cap_ms=round(hours * MS_PER_HOUR))

    def take(self, *, audio_ms: int, size_bytes: int) -> bool:
        """Reserve a whole recording of `audio_ms`; False (and `reached`) when it does not
        fit in what is left."""
        self.measured_ms += audio_ms
        self.measured_bytes += size_bytes
        if self.taken_ms + audio_ms > self.cap_ms:
            self.reached = True
            return False
        self.taken_ms += audio_ms
        return True

    def ms_per_byte(self) -> float | None:
        """Audio per byte of the recordings measured in this run (None before any)."""
        return self.measured_ms / self.measured_bytes if self.measured_bytes else None


@dataclass(frozen=True)
class LeftForNextRun:
    """Pending recordings a run left because of its cap, and their audio (estimated from
    their size where no run has measured them yet)."""

    recordings: int
    audio_ms: int

    @property
    def hours(self) -> float:
        return round(self.audio_ms / MS_PER_HOUR, 3)

    def sentence(self) -> str:
        """What the summary, the run row's readers, Prefect's state and the artifact say."""
        return (
            f"budget reached: {self.recordings} recordings ({self.hours:g} hours) "
            "left for the next run"
        )


def left_for_next_run(
    store: UnitOfWorkFactory,
    budget: AudioBudget,
    *,
    language: str | None,
    source_prefix: str | None,
) -> LeftForNextRun:
    """The pending recordings of the run's scope after it stopped at its cap; the audio of
    those no run measured yet is their size at the audio per byte this run measured."""
    with store.unit_of_work(read_only=True) as uow:
        pending = uow.spend.pending_audio(language=language, source_prefix=source_prefix)
    ratio = budget.ms_per_byte() or 0.0
    estimated_ms = round(pending.unmeasured_bytes * ratio)
    return LeftForNextRun(pending.recordings, pending.measured_ms + estimated_ms)
