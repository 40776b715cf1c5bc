"""Each recording's language: the manifest's `language` cell, else the run's `--language`.

A mixed archive is one run: the manifest names each file's language, `--language` is the
default for rows without one and for files the manifest does not name. A value is kept
as written (cut to the store's 16 characters): one the service does not take fails that
recording alone when it is claimed (`metadata_invalid`, tasks/transcription/file_run.py),
never the listing. A file with neither is registered under NO_LANGUAGE and fails so too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from storage.records import SourceFile

LANGUAGE_COLUMN = "language"
NO_LANGUAGE = ""  # neither a cell nor --language: the recording fails, saying so
_STORED_CHARS = 16  # items.language is String(16)


def manifest_gives_languages(metadata: Mapping[str, Mapping[str, str]] | None) -> bool:
    """Whether any row of the manifest names a language (the run then claims every
    language of its source)."""
    return bool(metadata) and any(LANGUAGE_COLUMN in row for row in (metadata or {}).values())


class FileLanguages:
    """The language of each listed file, from the manifest's metadata and the default."""

    def __init__(
        self, metadata: Mapping[str, Mapping[str, str]] | None, *, default: str | None
    ) -> None:
        self._metadata = metadata or {}
        self._default = default
        self._mixed = manifest_gives_languages(metadata)

    @property
    def default(self) -> str:
        """The language of files the manifest gives none (NO_LANGUAGE without --language)."""
        return self._default if self._default is not None else NO_LANGUAGE

    def of(self, uri: str) -> str:
        """The language `uri` is registered, claimed and sent in."""
        if self._mixed:
            cell = self._metadata.get(uri, {}).get(LANGUAGE_COLUMN)
            if cell:
                return cell[:_STORED_CHARS]
        return self.default

    def grouped(self, files: Sequence[SourceFile]) -> Iterator[tuple[str, list[SourceFile]]]:
        """The files by language, in order of first appearance (one group without a
        language column: the listing registers as it always did)."""
        if not self._mixed:
            yield self.default, list(files)
            return
        groups: dict[str, list[SourceFile]] = {}
        for file in files:
            groups.setdefault(self.of(file.uri), []).append(file)
        yield from groups.items()

    def metadata_by_language(self) -> Iterator[tuple[str, dict[str, dict[str, str]]]]:
        """The manifest's rows by the language of the item they describe."""
        groups: dict[str, dict[str, dict[str, str]]] = {}
        for uri, columns in self._metadata.items():
            groups.setdefault(self.of(uri), {})[uri] = dict(columns)
        yield from groups.items()
