"""The cut rule on hand-made frame levels, and the level-relative thresholds."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.audio.pauses import (
    FRAME_SAMPLES,
    LevelHistogram,
    choose_cut,
    frame_levels_db,
    is_silent,
)

SPEECH_DB, QUIET_DB = -20.0, -60.0
CAP_FRAMES = 100  # a 2 s chunk: window = frames 60..99


def _levels(quiet_runs: list[tuple[int, int]], *, frames: int = CAP_FRAMES) -> np.ndarray:
    levels = np.full(frames, SPEECH_DB, dtype=np.float32)
    for start, end in quiet_runs:
        levels[start:end] = QUIET_DB
    return levels


def _cut(levels: np.ndarray, *, min_pause_ms: int = 250, first_frame: int = 0) -> int:
    start = first_frame * FRAME_SAMPLES
    return choose_cut(
        levels,
        first_frame=first_frame,
        start_sample=start,
        limit_sample=start + CAP_FRAMES * FRAME_SAMPLES,
        quiet_below_db=-40.0,
        min_pause_ms=min_pause_ms,
    )


@pytest.mark.parametrize(
    ("quiet_runs", "expected_frame_x2"),
    [
        pytest.param([(62, 76), (80, 97)], 80 + 97, id="longest-wins"),
        pytest.param([(62, 77), (80, 95)], 80 + 95, id="tie-takes-the-later"),
        pytest.param([(20, 50), (70, 84)], 70 + 84, id="pause-before-window-ignored"),
        pytest.param([(50, 75)], 60 + 75, id="pause-clipped-at-window-start"),
        pytest.param([(86, 120)], 86 + 100, id="pause-clipped-at-cap"),
    ],
)
def test_cut_in_the_middle_of_the_longest_pause(
    quiet_runs: list[tuple[int, int]], expected_frame_x2: int
) -> None:
    levels = _levels(quiet_runs, frames=120)
    assert _cut(levels) == expected_frame_x2 * FRAME_SAMPLES // 2


def test_pause_shorter_than_the_minimum_is_no_pause() -> None:
    levels = _levels([(70, 82)])  # 240 ms < 250 ms
    levels[91] = -35.0  # the quietest of the speech frames
    levels[70:82] = -41.0  # quiet, but too short; and ...
    levels[75] = -50.0  # ... this frame is the quietest of all
    assert _cut(levels) == 75 * FRAME_SAMPLES + FRAME_SAMPLES // 2
    assert _cut(levels, min_pause_ms=240) == (70 + 82) * FRAME_SAMPLES // 2


def test_quietest_frame_tie_takes_the_later() -> None:
    levels = _levels([])
    levels[65] = levels[90] = -30.0
    assert _cut(levels) == 90 * FRAME_SAMPLES + FRAME_SAMPLES // 2


def test_frame_grid_is_absolute() -> None:
    levels = _levels([(65, 85)])
    shifted = _cut(levels, first_frame=1000)
    assert shifted == 1000 * FRAME_SAMPLES + (65 + 85) * FRAME_SAMPLES // 2


def test_frame_levels_in_dbfs() -> None:
    full_scale = np.full(FRAME_SAMPLES * 3, 32767, dtype=np.int16)
    full_scale[FRAME_SAMPLES : 2 * FRAME_SAMPLES] = 0
    levels = frame_levels_db(np.concatenate([full_scale, np.ones(10, dtype=np.int16)]))
    assert len(levels) == 3
    assert levels[0] == pytest.approx(0.0, abs=0.01)
    assert levels[1] == -120.0


def _histogram(levels: np.ndarray) -> LevelHistogram:
    histogram = LevelHistogram()
    histogram.add(levels.astype(np.float32))
    return histogram


def test_threshold_follows_the_noise_floor() -> None:
    rng = np.random.default_rng(0)
    speech = rng.uniform(-25, -10, 600)
    clean = _histogram(np.concatenate([speech, np.full(400, -120.0)])).thresholds()
    noisy = _histogram(np.concatenate([speech, rng.normal(-40, 0.5, 400)])).thresholds()
    assert clean.has_speech
    assert noisy.has_speech
    midpoint = (clean.floor_db + clean.speech_db) / 2
    assert clean.quiet_below_db == pytest.approx(min(clean.speech_db - 35, midpoint), abs=0.01)
    assert noisy.quiet_below_db == pytest.approx(noisy.floor_db + 6, abs=0.01)
    assert noisy.floor_db < noisy.quiet_below_db < speech.min()


@pytest.mark.parametrize(
    "levels",
    [
        pytest.param(np.full(500, -120.0), id="digital-zero"),
        pytest.param(np.random.default_rng(1).normal(-50, 1, 500), id="steady-hiss"),
        pytest.param(np.random.default_rng(2).uniform(-95, -75, 500), id="near-silence"),
    ],
)
def test_no_speech_without_dynamics_or_level(levels: np.ndarray) -> None:
    thresholds = _histogram(levels).thresholds()
    assert not thresholds.has_speech
    assert is_silent(levels.astype(np.float32), thresholds)


def test_a_single_click_is_not_speech() -> None:
    rng = np.random.default_rng(3)
    history = _histogram(np.concatenate([rng.uniform(-30, -10, 500), np.full(500, -80.0)]))
    thresholds = history.thresholds()
    quiet = np.full(200, -80.0, dtype=np.float32)
    assert is_silent(quiet, thresholds)
    quiet[50] = -10.0
    assert is_silent(quiet, thresholds)
    quiet[51] = -10.0
    assert not is_silent(quiet, thresholds)
