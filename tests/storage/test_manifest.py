"""The metadata manifest: read strictly (ManifestInvalid sentences), stored at discovery."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.settings import StorageSettings
from storage import open_store
from storage.errors import ManifestInvalid
from storage.manifest import metadata_by_uri, read_manifest
from tasks.discovery.discover import discover_and_register


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    return path


def test_rows_by_clean_relative_path_blank_cells_left_out(tmp_path: Path) -> None:
    manifest = write(
        tmp_path / "m.csv",
        "\ufeffpath, patient_id ,doc_type,author\n"
        'ward/a.wav,P-1,progress,"Rao, Dr."\n'
        "./ward/../b.wav,P-2,,\n",
    )
    assert read_manifest(manifest) == {
        "ward/a.wav": {"patient_id": "P-1", "doc_type": "progress", "author": "Rao, Dr."},
        "b.wav": {"patient_id": "P-2"},
    }
    assert metadata_by_uri(read_manifest(manifest), source_root=str(tmp_path)) == {
        str(tmp_path / "ward" / "a.wav"): {
            "patient_id": "P-1",
            "doc_type": "progress",
            "author": "Rao, Dr.",
        },
        str(tmp_path / "b.wav"): {"patient_id": "P-2"},
    }
    assert metadata_by_uri({"x/a.wav": {}}, source_root="s3://bucket/pre/") == {
        "s3://bucket/pre/x/a.wav": {}
    }


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("", "is empty"),
        ("file,patient_id\na.wav,P1\n", "no 'path' column"),
        ("path,patient_id,patient_id\na.wav,P1,P2\n", "appears twice"),
        ("path,patient_id\na.wav,P1\na.wav,P2\n", "line 3: 'a.wav' is listed twice"),
        ("path,patient_id\n,P1\n", "line 2: the 'path' cell is empty"),
        ("path,patient_id\n../etc/a.wav,P1\n", "not a path inside the source"),
        ("path,patient_id\n/abs/a.wav,P1\n", "not a path inside the source"),
        ("path,patient_id\na.wav,P1,extra\n", "line 2: more cells than columns"),
        ('path,patient_id\n"a.wav,P1\n', "not valid CSV"),
        (b"path,patient_id\na.wav,\xff\xfe\n", "not UTF-8"),
    ],
)
def test_a_bad_manifest_is_one_sentence(tmp_path: Path, content: str | bytes, words: str) -> None:
    manifest = write(tmp_path / "medasr.csv", content)
    with pytest.raises(ManifestInvalid) as caught:
        read_manifest(manifest)
    assert words in str(caught.value)
    assert str(manifest) in str(caught.value)


def test_a_missing_or_folder_manifest_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ManifestInvalid, match="manifest not found"):
        read_manifest(tmp_path / "nope.csv")
    with pytest.raises(ManifestInvalid, match="is a folder"):
        read_manifest(tmp_path)


def test_discovery_stores_the_manifest_at_the_source_root_on_each_recording(
    tmp_path: Path,
) -> None:
    source = tmp_path / "archive"
    for name in ("a.wav", "sub/b.wav", "c.wav"):
        write(source / name, b"RIFF....")
    write(source / "medasr.csv", "path,patient_id,doc_type\na.wav,P-1,note\nsub/b.wav,P-2,\n")
    store = open_store(StorageSettings(database_url=f"sqlite:///{tmp_path / 'm.db'}"))
    try:
        discover_and_register(source=str(source), language="hi", store=store, settle_s=0)
        with store.unit_of_work(read_only=True) as uow:
            items = uow.item_queries.find_items(
                source_uris=[str(source / n) for n in ("a.wav", "sub/b.wav", "c.wav")],
                language="hi",
            )
        assert items[str(source / "a.wav")].metadata == {"patient_id": "P-1", "doc_type": "note"}
        assert items[str(source / "sub/b.wav")].metadata == {"patient_id": "P-2"}
        assert items[str(source / "c.wav")].metadata == {}
        other = write(tmp_path / "elsewhere.csv", "path,patient_id\nc.wav,P-3\n")
        discover_and_register(
            source=str(source), language="hi", store=store, settle_s=0, manifest=str(other)
        )
        with store.unit_of_work(read_only=True) as uow:
            item = uow.item_queries.find_item(source_uri=str(source / "c.wav"), language="hi")
        assert item is not None
        assert item.metadata == {"patient_id": "P-3"}
    finally:
        store.dispose()
