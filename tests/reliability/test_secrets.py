"""Part 5, secrets and patient data: with a recognizable token, JWE key and transcript text
and DEBUG logging everywhere, neither the token nor the key appears in any output, the
database, Prefect's database (flow parameters, logs, artifacts) or an error message, and
no transcript text appears in any log or anywhere under PREFECT_HOME.

Two runs: an encrypted one through retries (429, 500, a dropped connection) with an
undecodable file in the batch, and one with a wrong (equally recognizable) token that
stops with exit code 3.
"""

from __future__ import annotations

import base64
import time
import uuid
from pathlib import Path

from tests.reliability.corpus import age_files, age_paths, write_tone_wav
from tests.reliability.evidence import items

TOKEN = f"tok-SECRET-{uuid.uuid4().hex}"
WRONG_TOKEN = f"tok-WRONG-{uuid.uuid4().hex}"
JWE_KEY = f"KeY{uuid.uuid4().hex[:13]}"  # 16 characters
JWE_KID = "reliability-kid"
# Words no log line would hold by chance: finding one means transcript text leaked.
MARKERS = ("quokkaline", "xylotranscript", "zebrafinch")
DEBUG = {"MEDASR_LOG_LEVEL": "DEBUG", "PREFECT_LOGGING_LEVEL": "DEBUG"}


def secret_forms() -> dict[str, bytes]:
    raw_key = (JWE_KEY * 2).encode()
    return {
        "token": TOKEN.encode(),
        "wrong token": WRONG_TOKEN.encode(),
        "key": JWE_KEY.encode(),
        "raw key, base64": base64.b64encode(raw_key).rstrip(b"="),
        "raw key, base64url": base64.urlsafe_b64encode(raw_key).rstrip(b"="),
        "bearer token, base64": base64.b64encode(TOKEN.encode()).rstrip(b"="),
    }


def files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def places_holding(needle: bytes, paths: list[Path]) -> list[str]:
    return [str(p) for p in paths if needle in p.read_bytes()]


def test_no_secret_and_no_transcript_leaks_with_debug_logging(
    tmp_path: Path, tone_devserver, medasr_for, figures
) -> None:
    started = time.monotonic()
    corpus = tmp_path / "corpus"
    texts = {
        corpus / f"patient-{i}.wav": f"{MARKERS[i % 3]} {i}. {MARKERS[(i + 1) % 3]}."
        for i in range(6)
    }
    for path, text in texts.items():
        write_tone_wav(path, text)
    (corpus / "scanned-letter.wav").write_text("not audio: a scanned letter\n")
    age_files(corpus)
    database = tmp_path / "medasr-db" / "medasr.db"
    database.parent.mkdir()
    server = tone_devserver(
        token=TOKEN,
        jwe_key=JWE_KEY,
        jwe_kid=JWE_KID,
        fault_script=("429", "500", "reset", "503"),
        retry_after_s=0,
    )
    medasr = medasr_for(
        server,
        f"sqlite:///{database}",
        MEDASR_JWE_KEY=JWE_KEY,
        MEDASR_JWE_KID=JWE_KID,
        MEDASR_REQUEST_TIMEOUT_S="5",
        **DEBUG,
    )

    good = medasr.run("run", str(corpus), "--language", "en-IN", "--encrypt")
    late = {corpus / f"late-{i}.wav": f"{MARKERS[i]} late {i}." for i in range(2)}
    for path, text in late.items():
        write_tone_wav(path, text)
    age_paths(late)
    refused = medasr.run(
        "run", str(corpus), "--language", "en-IN", "--encrypt", MEDASR_TOKEN=WRONG_TOKEN
    )

    assert good.returncode == 1, good.describe()  # the scanned letter failed
    assert refused.returncode == 3, refused.describe()
    rows = {Path(r["source_uri"]): r for r in items(f"sqlite:///{database}")}
    assert {p: rows[p]["text"] for p in texts} == texts  # the run really transcribed
    assert rows[corpus / "scanned-letter.wav"]["error_kind"] == "not_audio"
    assert all(e.encrypted for e in server.ledger.entries() if e.status == 200)
    assert "DEBUG" in good.output  # DEBUG logging was really on
    assert "transcribe attempt=" in good.output  # ... for medasr's own loggers too
    outputs = {"run stdout": good.stdout, "run stderr": good.stderr}
    outputs |= {"refused stdout": refused.stdout, "refused stderr": refused.stderr}
    stored = files_under(medasr.prefect_home) + files_under(tmp_path) + [server.ledger.path]
    # The search can see: the transcripts are in our database, as they should be.
    assert places_holding(MARKERS[0].encode(), files_under(tmp_path / "medasr-db"))
    leaks = {
        name: [where for where, text in outputs.items() if form.decode() in text]
        + places_holding(form, [p for p in stored if p.parent != corpus])
        for name, form in secret_forms().items()
    }
    assert leaks == {name: [] for name in leaks}
    transcript_words = [*MARKERS, *texts.values(), *late.values()]
    in_logs = {w: [k for k, text in outputs.items() if w in text] for w in transcript_words}
    assert in_logs == {w: [] for w in transcript_words}
    in_prefect = {
        w: places_holding(w.encode(), files_under(medasr.prefect_home)) for w in transcript_words
    }
    assert in_prefect == {w: [] for w in transcript_words}
    figures(
        "secrets",
        files=len(texts) + 1,
        faults_injected=4 + server.ledger.statuses().count(403),
        kills=0,
        requests=len(server.ledger),
        retries=int(good.summary()["retries"]),
        places_searched=len(outputs) + len(stored),
        secret_hits=0,
        transcript_hits_in_logs=0,
        wall_s=round(time.monotonic() - started, 1),
    )
