"""A file's state while its chunks are in flight, and how it ends.

`FileRun` is what tasks/transcription/file_run.py keeps of one file: the texts and
voiced time of its chunks, its errors, the chunks still unrecorded. `require_finishable`
raises what stops the file from being finished; `ending` is the transcript joined from
its chunk texts, its review (tasks/transcription/quality_gate.py) and the outcome to
report; `is_last_answer` says when an answer may carry that end into its own commit
(one commit per file saved: tasks/transcription/recorder.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from config.errors import MedasrError
from storage.errors import LeaseLost
from storage.records import ItemRecord, ItemStatus
from tasks.audio import Chunk
from tasks.errors import CorruptAudio, DamagedTail, SilentAudio
from tasks.throttle.gate import RUN_STOP_ERRORS
from tasks.transcription.batch import BatchContext
from tasks.transcription.progress import FileOutcome
from tasks.transcription.quality_gate import review_transcript
from tasks.transcription.recorder import FileEnd, FileRecorder
from tasks.transcription.review_routing import ALL, recording_identity


@dataclass
class FileRun:
    """Mutable state of one file while its chunks are in flight."""

    recorder: FileRecorder
    texts: dict[int, str] = field(default_factory=dict)
    voiced_ms: dict[int, int] = field(default_factory=dict)  # by start_ms, for the quality gate
    answer_keys: dict[int, int] = field(default_factory=dict)  # reused answer start -> key
    decoded_all: bool = False  # every chunk was read (and sent or reused)
    extras: list[dict[str, Any]] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    damage: DamagedTail | None = None  # the tail could not be read: the item is partial
    requests: int = 0
    last: Chunk | None = None  # the last chunk read so far
    all_silent: bool = True  # every chunk read so far was silence (and not answered before)
    sending: int = 0  # chunks whose answer is not recorded yet
    ended: FileOutcome | None = None  # finished: by its last answer's commit, or by _finish

    @property
    def item(self) -> ItemRecord:
        """The claimed item this run settles."""
        return self.recorder.item


def is_last_answer(run: FileRun, *, ctx: BatchContext) -> bool:
    """Every chunk is read and this answer is the only one not yet recorded: the file can
    end with it (what `require_finishable` lets through, and a run not stopping)."""
    return (
        run.decoded_all
        and run.sending == 1
        and not run.errors
        and ctx.gate.stopped is None
        and run.last is not None
        and not run.all_silent
    )


def require_finishable(run: FileRun, *, ctx: BatchContext) -> None:
    """Raise what stops the file from being finished: its worst error, a stop part-way,
    nothing heard."""
    if run.errors:
        raise worst(run.errors)
    if ctx.gate.stopped is not None and not run.decoded_all:
        # Stopped part-way: the rest goes back to pending. A file whose every chunk was
        # answered before the stop is finished: its answers are paid for.
        raise ctx.gate.stopped
    if run.last is None or run.all_silent:
        if run.damage is not None:
            raise CorruptAudio(run.damage.reason, path=run.damage.path)
        raise SilentAudio(f"no speech found in {run.item.source_uri}; nothing was sent")


@dataclass(frozen=True)
class Ending:
    """What finishing a file writes (its end) and reports (its outcome)."""

    end: FileEnd
    outcome: FileOutcome


def ending(run: FileRun, *, ctx: BatchContext) -> Ending:
    """The file's transcript from its chunk texts, its review, and the outcome to report."""
    last = run.last
    assert last is not None  # require_finishable / is_last_answer
    text = " ".join(t.strip() for _, t in sorted(run.texts.items()) if t.strip())
    extras: dict[str, Any] = {"chunks": run.extras} if run.extras else {}
    if run.damage is not None:
        extras["partial"] = run.damage.as_partial()
    review = review_transcript(
        run.texts, run.voiced_ms, language=run.item.language, extras=extras, settings=ctx.quality
    )
    hold_reason = _hold_reason(run.item, review.flags, ctx=ctx)
    routine = hold_reason is not None and not review.flags
    if routine and hold_reason != ALL:  # under `all` every transcript waits: no reason kept
        extras["review_reason"] = hold_reason
    end = FileEnd(
        text=text,
        duration_ms=last.end_ms,
        chunk_count=last.index,
        extras=review.annotated(extras),
        flags=review.flags,
        hold_for_review=routine,
    )
    outcome = FileOutcome(
        run.item.source_uri,
        ItemStatus.NEEDS_REVIEW if review.flags else ItemStatus.DONE,
        duration_ms=last.end_ms,
        requests=run.requests,
        chunks=last.index,
        reason=f"held for review: {', '.join(review.flags)}" if review.flags else None,
        hold_reason=hold_reason,
    )
    return Ending(end, outcome)


def _hold_reason(item: ItemRecord, flags: Sequence[str], *, ctx: BatchContext) -> str | None:
    """Why the routing rules hold this transcript for a person (None: they do not)."""
    return ctx.routing.reason_for(
        flags=flags,
        metadata=item.metadata,
        language=item.language,
        identity=recording_identity(
            source_uri=item.source_uri, language=item.language, source_version=item.source_version
        ),
    )


def worst(errors: list[BaseException]) -> BaseException:
    """Credentials first (they stop the run), a lost lease (not ours to record), terminal, first."""
    for kind in (*RUN_STOP_ERRORS, LeaseLost):
        for error in errors:
            if isinstance(error, kind):
                return error
    for error in errors:
        if isinstance(error, MedasrError) and not error.transient:
            return error
    return errors[0]


__all__ = ["Ending", "FileRun", "ending", "is_last_answer", "require_finishable", "worst"]
