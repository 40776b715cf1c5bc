"""Listing, fingerprinting and fetching audio in local folders."""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from storage import local_files
from storage.errors import SourceNotFound, SourceUnreadable, UnsupportedSource
from storage.sources import (
    Listing,
    fetch_and_fingerprint,
    fingerprint,
    list_audio,
    normalize_source,
)

HOUR_AGO_S = 3600


def put(root: Path, relative: str, content: bytes = b"RIFF....WAVE", *, age_s: float = HOUR_AGO_S):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def uris(listing: Listing) -> list[str]:
    return [f.uri for f in listing.files]


def reasons(listing: Listing) -> dict[str, str]:
    return {s.uri: s.reason for s in listing.skipped}


TRICKY_NAMES = {
    "space": "dictation 01.wav",
    "quotes": "dr 'o'brien \"final\".mp3",
    "newline": "line\nbreak.wav",
    "non-ascii": "ürologie-é-日本.m4a",
    "percent": "100%25 done.wav",
    "leading-dash": "-x.flac",
}


@pytest.mark.parametrize("name", TRICKY_NAMES.values(), ids=TRICKY_NAMES.keys())
def test_tricky_names_are_listed_as_plain_absolute_paths(tmp_path: Path, name: str) -> None:
    path = put(tmp_path, f"sub dir/{name}", b"x" * 17)
    listing = list_audio(str(tmp_path), settle_s=0)
    assert listing.skipped == []
    [listed] = listing.files
    assert listed.uri == str(path)  # not percent-encoded, no file:// prefix
    assert listed.size_bytes == 17
    assert listed.version == str(path.stat().st_mtime_ns)


def test_listing_is_recursive_sorted_and_filtered_by_extension(tmp_path: Path) -> None:
    for relative in ("b/2.wav", "a/1.MP3", "c.ogg", "notes.txt", "a/deep/er/3.opus", "x.wav.part"):
        put(tmp_path, relative)
    listing = list_audio(str(tmp_path), settle_s=0)
    expected = sorted(
        str(tmp_path / r) for r in ("b/2.wav", "a/1.MP3", "c.ogg", "a/deep/er/3.opus")
    )
    assert uris(listing) == expected
    assert uris(list_audio(str(tmp_path), settle_s=0)) == expected  # stable
    only_wav = list_audio(str(tmp_path), settle_s=0, extensions=(".wav",))
    assert uris(only_wav) == [str(tmp_path / "b/2.wav")]


@pytest.mark.parametrize(
    ("include", "exclude", "expected"),
    [
        ((), (), ["2024/jan/a.wav", "2024/tmp/b.wav", "2025/c.mp3", "d.wav"]),
        (("2024/*",), (), ["2024/jan/a.wav", "2024/tmp/b.wav"]),
        (("*.mp3",), (), ["2025/c.mp3"]),
        ((), ("*/tmp/*",), ["2024/jan/a.wav", "2025/c.mp3", "d.wav"]),
        (("2024/*",), ("**/tmp/*",), ["2024/jan/a.wav"]),
        ((), ("d.wav",), ["2024/jan/a.wav", "2024/tmp/b.wav", "2025/c.mp3"]),
    ],
    ids=["all", "include-folder", "include-ext", "exclude-folder", "both", "exclude-name"],
)
def test_include_and_exclude_globs(tmp_path: Path, include, exclude, expected) -> None:
    for relative in ("2024/jan/a.wav", "2024/tmp/b.wav", "2025/c.mp3", "d.wav"):
        put(tmp_path, relative)
    listing = list_audio(str(tmp_path), include=include, exclude=exclude, settle_s=0)
    assert uris(listing) == [str(tmp_path / r) for r in expected]


@pytest.mark.parametrize(
    "spelling",
    [
        lambda root: str(root),
        lambda root: f"file://{root}",
        lambda root: "file://" + str(root).replace(" ", "%20"),
        lambda root: str(root) + "/",
        lambda root: os.path.relpath(root),
    ],
    ids=["absolute", "file-url", "file-url-encoded", "trailing-slash", "relative"],
)
def test_source_spellings_give_the_same_uris(tmp_path: Path, spelling: Callable) -> None:
    root = tmp_path / "my recordings"
    put(root, "a b.wav")
    assert uris(list_audio(spelling(root), settle_s=0)) == [str(root / "a b.wav")]
    assert normalize_source(spelling(root)) == str(root)


def test_a_source_reached_through_a_link_is_known_by_its_real_path(tmp_path: Path) -> None:
    real = tmp_path / "recordings"
    put(real, "ward/a.wav")
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    (tmp_path / "link-to-link").symlink_to(tmp_path / "link", target_is_directory=True)
    (tmp_path / "a-link.wav").symlink_to(real / "ward" / "a.wav")
    expected = [str(real / "ward" / "a.wav")]
    for spelling in ("link", "link/", "link-to-link", "./link/ward/..", "link/ward/a.wav"):
        assert uris(list_audio(str(tmp_path / spelling), settle_s=0)) == expected, spelling
        assert normalize_source(f"file://{tmp_path / spelling}").startswith(str(real))
    assert normalize_source(str(tmp_path / "link")) == str(real)
    assert uris(list_audio(str(tmp_path / "a-link.wav"), settle_s=0)) == expected


def test_a_link_inside_a_source_to_what_it_holds_lists_that_once(tmp_path: Path) -> None:
    source, elsewhere = tmp_path / "source", tmp_path / "elsewhere"
    put(source, "ward/a.wav")
    put(elsewhere, "far/b.wav")
    (source / "alias.wav").symlink_to(source / "ward" / "a.wav")
    (source / "again").symlink_to(source / "ward", target_is_directory=True)  # sorts first
    (source / "ward" / "sibling").symlink_to(source / "ward2", target_is_directory=True)
    put(source, "ward2/c.wav")
    (source / "far").symlink_to(elsewhere / "far", target_is_directory=True)
    (source / "b-alias.wav").symlink_to(elsewhere / "far" / "b.wav")
    listing = list_audio(str(source), settle_s=0)
    # Links to what lies elsewhere are listed under the link: inside the source's prefix.
    expected = ["b-alias.wav", "far/b.wav", "ward/a.wav", "ward2/c.wav"]
    assert uris(listing) == [str(source / r) for r in expected]
    assert listing.skipped == []


def test_a_single_file_can_be_the_source(tmp_path: Path) -> None:
    path = put(tmp_path, "one.wav")
    assert uris(list_audio(str(path), settle_s=0)) == [str(path)]


def test_recent_files_are_skipped_as_still_being_written(tmp_path: Path) -> None:
    old = put(tmp_path, "old.wav")
    fresh = put(tmp_path, "fresh.wav", age_s=0)
    listing = list_audio(str(tmp_path), settle_s=30)
    assert uris(listing) == [str(old)]
    assert "still being written" in reasons(listing)[str(fresh)]
    assert uris(list_audio(str(tmp_path), settle_s=0)) == sorted([str(old), str(fresh)])


def test_future_modification_time_is_not_taken_for_writing(tmp_path: Path) -> None:
    path = put(tmp_path, "clock-skew.wav", age_s=-86_400)
    assert uris(list_audio(str(tmp_path), settle_s=30)) == [str(path)]


def test_a_file_that_changes_between_two_looks_is_skipped(tmp_path: Path) -> None:
    path = put(tmp_path, "growing.wav", b"1234")
    first = os.stat(path)
    with path.open("ab") as handle:
        handle.write(b"more")
    skipped: list = []
    files = local_files._second_look([(str(path), first)], skipped=skipped)
    assert files == []
    assert "changed while listing" in skipped[0].reason


def test_a_file_growing_while_listed_is_skipped(tmp_path: Path) -> None:
    """A recorder appending in the background: when the two looks differ, it is not listed."""
    growing = put(tmp_path, "a-growing.wav", b"RIFF")  # looked at first, and again last
    others = [str(put(tmp_path, f"b-{i:04d}.wav")) for i in range(1000)]
    writing, stop = threading.Event(), threading.Event()

    def append() -> None:
        with growing.open("ab", buffering=0) as handle:
            while not stop.is_set():
                handle.write(b"\0")  # one byte at a time: no dirty-page throttling
                writing.set()

    writer = threading.Thread(target=append, daemon=True)
    switch_s = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # let the writer in while the listing holds the GIL
    writer.start()
    try:
        assert writing.wait(5)
        listings = [list_audio(str(tmp_path), settle_s=0) for _ in range(5)]
    finally:
        stop.set()
        writer.join(5)
        sys.setswitchinterval(switch_s)
    why = [reasons(listing).get(str(growing)) for listing in listings]
    # A scheduler may pause the writer for a whole listing; it cannot pause it for five.
    assert "still being written (changed while listing)" in why
    for listing, reason in zip(listings, why, strict=True):
        assert [u for u in uris(listing) if u != str(growing)] == others
        assert (str(growing) in uris(listing)) == (reason is None)
    assert uris(list_audio(str(tmp_path), settle_s=0))[0] == str(growing)  # once it stops


def test_symbolic_link_loops_are_survived(tmp_path: Path) -> None:
    put(tmp_path, "real/a.wav")
    (tmp_path / "real" / "loop").symlink_to(tmp_path)
    (tmp_path / "real" / "self").symlink_to(tmp_path / "real" / "self")
    (tmp_path / "self.wav").symlink_to(tmp_path / "self.wav")
    (tmp_path / "broken.wav").symlink_to(tmp_path / "missing.wav")
    (tmp_path / "alias.wav").symlink_to(tmp_path / "real" / "a.wav")
    listing = list_audio(str(tmp_path), settle_s=0)
    assert uris(listing) == [str(tmp_path / "real/a.wav")]  # the alias is that file
    why = reasons(listing)
    assert why[str(tmp_path / "self.wav")] == "symbolic link loop"
    assert "broken symbolic link" in why[str(tmp_path / "broken.wav")]
    assert "link loop" in why[str(tmp_path / "real/loop")]


def test_special_files_are_skipped_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.wav")
    listing = list_audio(str(tmp_path), settle_s=0)
    assert listing.files == []
    assert reasons(listing) == {str(tmp_path / "pipe.wav"): "not a regular file"}
    with pytest.raises(SourceUnreadable):
        fingerprint(str(tmp_path / "pipe.wav"))


def test_names_that_are_not_utf8_are_skipped_with_a_printable_uri(tmp_path: Path) -> None:
    raw = os.path.join(os.fsencode(tmp_path), b"bad-\xff.wav")
    with open(raw, "wb") as handle:
        handle.write(b"x")
    os.utime(raw, (time.time() - HOUR_AGO_S,) * 2)
    listing = list_audio(str(tmp_path), settle_s=0)
    assert listing.files == []
    [skipped] = listing.skipped
    assert skipped.uri == f"{tmp_path}/bad-\\xff.wav"
    skipped.uri.encode("utf-8")  # storable and printable
    assert "UTF-8" in skipped.reason


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder another user can traverse (pytest's tmp root is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="medasr-src-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def list_as_unprivileged(source: str) -> Listing:
    """list_audio as a user that permissions apply to (root ignores them)."""
    if os.geteuid() != 0:
        return list_audio(source, settle_s=0)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: drop to nobody, list, send the pickled listing back
        status = 1
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            with os.fdopen(write_fd, "wb") as out:
                pickle.dump(list_audio(source, settle_s=0), out)
            status = 0
        finally:
            os._exit(status)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as incoming:
        payload = incoming.read()
    _, status = os.waitpid(pid, 0)
    assert status == 0
    return pickle.loads(payload)  # our own child's output


def test_unreadable_files_and_folders_are_skipped(shared_dir: Path) -> None:
    ok = put(shared_dir, "ok.wav")
    secret = put(shared_dir, "secret.wav")
    secret.chmod(0o600)
    ok.chmod(0o644)
    put(shared_dir, "locked/inside.wav")
    (shared_dir / "locked").chmod(0o700)
    listing = list_as_unprivileged(str(shared_dir))
    assert uris(listing) == [str(ok)]
    why = reasons(listing)
    assert why[str(secret)] == "no permission to read"
    assert "cannot read folder" in why[str(shared_dir / "locked")]


def test_missing_source_raises_source_not_found(tmp_path: Path) -> None:
    with pytest.raises(SourceNotFound, match="not found"):
        list_audio(str(tmp_path / "nope"))


@pytest.mark.parametrize(
    "source", ["gs://bucket/x", "az://container/x", "nosuch://x"], ids=["gs", "az", "unknown"]
)
def test_schemes_without_their_package_are_configuration_errors(source: str) -> None:
    if source.startswith("gs://") and _installed("gcsfs"):
        pytest.skip("gcsfs is installed")
    if source.startswith("az://") and _installed("adlfs"):
        pytest.skip("adlfs is installed")
    with pytest.raises(UnsupportedSource):
        list_audio(source)


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_fingerprint_streams_sha256_and_size(tmp_path: Path) -> None:
    content = os.urandom(3 * 1024 * 1024 + 17)
    path = put(tmp_path, "big.wav", content)
    found = fingerprint(str(path))
    assert found.sha256 == hashlib.sha256(content).hexdigest()
    assert found.size_bytes == len(content)
    assert fingerprint(f"file://{path}") == found


def test_fetching_a_local_file_gives_the_file_itself(tmp_path: Path) -> None:
    path = put(tmp_path, "a.wav", b"abc")
    with fetch_and_fingerprint(str(path)) as fetched:
        assert fetched.path == path
        assert fetched.fingerprint.sha256 == hashlib.sha256(b"abc").hexdigest()
    assert path.exists()


@pytest.mark.parametrize("call", ["fingerprint", "fetch"])
def test_missing_file_raises_source_not_found(tmp_path: Path, call: str) -> None:
    missing = str(tmp_path / "gone.wav")
    with pytest.raises(SourceNotFound):  # noqa: PT012
        if call == "fingerprint":
            fingerprint(missing)
        else:
            with fetch_and_fingerprint(missing):
                pass


def test_every_file_but_the_stated_not_audio_ones_is_a_recording(tmp_path: Path) -> None:
    recordings = ("a.aiff", "b.wma", "c.dss", "d.ds2", "e.caf", "sub/f.3gp", "no-extension")
    not_audio = ("notes.txt", "medasr.csv", "scan.JPG", "sub/._a.wav", ".DS_Store", "x.wav.part")
    for relative in (*recordings, *not_audio):
        put(tmp_path, relative)
    listing = list_audio(str(tmp_path), settle_s=0)
    assert uris(listing) == sorted(str(tmp_path / r) for r in recordings)
    assert listing.ignored.count == len(not_audio)
    assert sorted(listing.ignored.examples) == sorted(str(tmp_path / r) for r in not_audio)
    assert listing.ignored.by_reason[".txt file"] == 1
    excluded = list_audio(str(tmp_path), settle_s=0, exclude=("*.txt",))
    assert excluded.ignored.count == len(not_audio) - 1  # what the user excluded is not counted


def test_a_file_named_directly_is_listed_whatever_its_extension(tmp_path: Path) -> None:
    path = put(tmp_path, "dictation.aiff")
    assert uris(list_audio(str(path), settle_s=0)) == [str(path)]
    notes = put(tmp_path, "notes.txt")
    named = list_audio(str(notes), settle_s=0)
    assert (uris(named), named.ignored.examples) == ([], [str(notes)])
