"""A recording is named for a person by its path relative to the source, on one line."""

from __future__ import annotations

import pytest

from tasks.discovery.recording_names import one_line, reason_about, recording_name


@pytest.mark.parametrize(
    ("uri", "root", "name"),
    [
        ("/data/ward 7/beds/a.wav", "/data/ward 7", "beds/a.wav"),
        ("/data/ward 7/a.wav", "/data/ward 7/", "a.wav"),
        ("/data/ward 70/a.wav", "/data/ward 7", "/data/ward 70/a.wav"),  # a folder, not a prefix
        ("/data/one.wav", "/data/one.wav", "one.wav"),  # a single-file source
        ("/a.wav", "/", "a.wav"),
        ("s3://bucket/night/x/y.m4a", "s3://bucket/night", "x/y.m4a"),
        ("s3://bucket/nightly/y.m4a", "s3://bucket/night", "s3://bucket/nightly/y.m4a"),
        ("/data/a.wav", None, "/data/a.wav"),  # a rerun over every source: the whole URI
        ("/data/new\nline\t.wav", "/data", "new\\nline\\t.wav"),
        ("/data/esc\x1b[31m.wav", "/data", "esc\\u001b[31m.wav"),
    ],
)
def test_recording_name(uri: str, root: str | None, name: str) -> None:
    assert recording_name(uri, roots=() if root is None else (root,)) == name


def test_one_line_is_the_console_escaper() -> None:
    from flows.cli.console import one_line as console_one_line

    assert console_one_line is one_line
    assert one_line(None) == ""
    assert one_line("a\u2028b\r") == "a\\u2028b\\r"


def test_a_reason_names_the_recording_by_its_path_in_the_source() -> None:
    uri = "/data/ward 7/bed\n3.wav"
    message = f"not an audio file: {uri} (it holds text)"

    assert reason_about(message, uri=uri, roots=("/data",)) == (
        "not an audio file: ward 7/bed\\n3.wav (it holds text)"
    )
    assert reason_about(message, uri=uri) == one_line(message)
    assert reason_about(None, uri=uri, roots=("/data",)) == ""


def test_one_line_escapes_every_control_and_bidi_override() -> None:
    controls = "".join(map(chr, [*range(0x20), 0x7F, *range(0x80, 0xA0)]))
    shown = one_line(f"a{controls}b")
    assert shown.isprintable()
    assert shown.startswith("a\\u0000\\u0001")
    assert "\\u001b" in shown
    assert "\\u0007" in shown
    # A right-to-left override shows "report\u202egpj.exe" as "reportexe.jpg".
    assert one_line("report\u202egpj.exe") == "report\\u202egpj.exe"
    assert one_line("\u2066x\u2069") == "\\u2066x\\u2069"
    assert one_line("नमस्ते\u00a0café") == "नमस्ते\u00a0café"  # text is kept
