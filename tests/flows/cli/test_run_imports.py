"""`medasr run` imports its own flow, not the deployments' nor the delivery wing's models.

What the command imports beside its first requests holds the interpreter while they
are sent (flows/cli/flow_run.py): a deployment's flow builds its parameter schema at
import (pydantic.v1 comes with it), and the delivery step's FHIR and HL7 models are for
MEDASR_DELIVER=true nights only. The command runs in a fresh interpreter over one
recording, against a devserver and the worker's shared Prefect API, and reports every
module it imported.
"""

from __future__ import annotations

from pathlib import Path

import soundfile

from devserver import RunningDevServer
from devserver.tone import encode_tone_dictation
from tests.flows.prefect_server import clean_env
from tests.helpers.cli import modules_imported_by

ROOT = Path(__file__).resolve().parents[3]
# What a night without delivery never calls, and the libraries only they bring in.
NOT_IMPORTED = ("flows.backlog", "flows.rerun", "pydantic.v1", "fhir", "hl7apy", "hl7")


def test_a_run_imports_neither_the_deployments_flows_nor_fhir_and_hl7(
    tmp_path: Path, devserver: RunningDevServer, prefect_api: dict[str, str]
) -> None:
    source = tmp_path / "recordings"
    source.mkdir()
    soundfile.write(source / "note.wav", encode_tone_dictation("review in 6 weeks."), 16_000)
    env = (
        clean_env(
            tmp_path / "prefect",
            MEDASR_BASE_URL=devserver.url,
            MEDASR_TOKEN=devserver.token,
            MEDASR_DATABASE_URL=f"sqlite:///{tmp_path / 'medasr.db'}",
            MEDASR_PIPELINE__SETTLE_S="0",
        )
        | prefect_api
    )
    args = ["run", str(source), "--language", "en-IN", "--quiet"]
    modules = modules_imported_by(args, env=env, cwd=ROOT, timeout_s=180)
    assert "flows.backlog_run" in modules  # the run's own flow
    imported = {name for name in modules if name.split(".")[0] in NOT_IMPORTED}
    imported |= {name for name in NOT_IMPORTED if name in modules}
    assert not imported, f"`medasr run` imported {sorted(imported)[:8]}"
