"""Listing, fingerprinting and fetching objects over the real S3 wire protocol (moto)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from storage.errors import SourceNotFound, SourceUnavailable
from storage.sources import fetch_and_fingerprint, fingerprint, list_audio
from tests.storage_servers import S3Server

KEYS = {
    "inbox/a.wav": b"a" * 10,
    "inbox/sub dir/dr 'o'brien \"final\".mp3": b"b" * 20,
    "inbox/ürologie-日本.m4a": b"c" * 30,
    "inbox/notes.txt": b"not audio",
    "inbox2/elsewhere.wav": b"d" * 40,
    "top.flac": b"e" * 50,
}


@pytest.fixture
def filled_bucket(s3_server: S3Server, s3_bucket: str) -> str:
    client = s3_server.client()
    for key, body in KEYS.items():
        client.put_object(Bucket=s3_bucket, Key=key, Body=body)
    return s3_bucket


def test_bucket_prefix_listing(s3_server: S3Server, filled_bucket: str) -> None:
    listing = list_audio(f"s3://{filled_bucket}/inbox", storage_options=s3_server.storage_options)
    expected = sorted(
        ["inbox/a.wav", "inbox/sub dir/dr 'o'brien \"final\".mp3", "inbox/ürologie-日本.m4a"]
    )
    assert [f.uri for f in listing.files] == [f"s3://{filled_bucket}/{k}" for k in expected]
    assert [f.size_bytes for f in listing.files] == [len(KEYS[k]) for k in expected]
    etag = s3_server.client().head_object(Bucket=filled_bucket, Key="inbox/a.wav")["ETag"]
    assert listing.files[0].version == etag
    assert listing.skipped == []


def test_whole_bucket_listing_with_globs(s3_server: S3Server, filled_bucket: str) -> None:
    listing = list_audio(
        f"s3://{filled_bucket}",
        exclude=["inbox/*"],
        storage_options=s3_server.storage_options,
    )
    assert [f.uri for f in listing.files] == [
        f"s3://{filled_bucket}/inbox2/elsewhere.wav",
        f"s3://{filled_bucket}/top.flac",
    ]


def test_changed_object_gets_a_new_version(s3_server: S3Server, s3_bucket: str) -> None:
    client, source = s3_server.client(), f"s3://{s3_bucket}"
    client.put_object(Bucket=s3_bucket, Key="a.wav", Body=b"first")
    before = list_audio(source, storage_options=s3_server.storage_options).files
    client.put_object(Bucket=s3_bucket, Key="a.wav", Body=b"second")
    after = list_audio(source, storage_options=s3_server.storage_options).files
    assert before[0].version != after[0].version  # no stale listing cache either


def test_empty_prefix_is_an_empty_listing(s3_server: S3Server, s3_bucket: str) -> None:
    listing = list_audio(f"s3://{s3_bucket}/nothing", storage_options=s3_server.storage_options)
    assert listing.files == []
    assert listing.skipped == []


def test_missing_bucket_raises_source_not_found(s3_server: S3Server) -> None:
    with pytest.raises(SourceNotFound):
        list_audio("s3://no-such-bucket-here/x", storage_options=s3_server.storage_options)


def test_fingerprint_and_fetch_stream_the_object(s3_server: S3Server, s3_bucket: str) -> None:
    content = os.urandom(2 * 1024 * 1024 + 5)
    s3_server.client().put_object(Bucket=s3_bucket, Key="dir/big file.m4a", Body=content)
    uri = f"s3://{s3_bucket}/dir/big file.m4a"
    options = s3_server.storage_options
    expected = hashlib.sha256(content).hexdigest()
    assert fingerprint(uri, storage_options=options).sha256 == expected
    with fetch_and_fingerprint(uri, storage_options=options) as fetched:
        local = fetched.path
        assert local.read_bytes() == content
        assert local.suffix == ".m4a"
        assert stat.S_IMODE(local.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(local.stat().st_mode) == 0o600  # patient audio: owner only
        assert local.parent.name.startswith(f"medasr-{os.getpid()}-")  # ours, by process
        assert fetched.fingerprint.sha256 == expected
        assert fetched.fingerprint.size_bytes == len(content)
        kept = local
    assert not kept.exists()
    assert not kept.parent.exists()


def test_fetched_copy_is_removed_when_the_caller_fails(s3_server: S3Server, s3_bucket: str) -> None:
    s3_server.client().put_object(Bucket=s3_bucket, Key="a.wav", Body=b"x")
    kept: Path | None = None
    uri = f"s3://{s3_bucket}/a.wav"
    with (  # noqa: PT012 - the failure happens inside the fetch
        pytest.raises(RuntimeError),
        fetch_and_fingerprint(uri, storage_options=s3_server.storage_options) as fetched,
    ):
        kept = fetched.path
        raise RuntimeError("decoder crashed")
    assert kept is not None
    assert not kept.parent.exists()


def test_missing_object_raises_source_not_found(s3_server: S3Server, s3_bucket: str) -> None:
    with pytest.raises(SourceNotFound):
        fingerprint(f"s3://{s3_bucket}/gone.wav", storage_options=s3_server.storage_options)
    with (
        pytest.raises(SourceNotFound),
        fetch_and_fingerprint(
            f"s3://{s3_bucket}/gone.wav", storage_options=s3_server.storage_options
        ),
    ):
        pass


def test_unreachable_endpoint_is_transient(s3_server: S3Server) -> None:
    options = {
        "endpoint_url": "http://127.0.0.1:9",
        "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 1},
    }
    with pytest.raises(SourceUnavailable) as caught:
        list_audio("s3://bucket/x", storage_options=options)
    assert caught.value.transient
