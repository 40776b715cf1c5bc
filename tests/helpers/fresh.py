"""A snippet of Python in a fresh interpreter (nothing imported, nothing cached), read
back as the JSON it prints on its last line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def json_printed_by(code: str, *, cwd: Path, env: dict[str, str] | None = None) -> Any:
    """Run `python -c code` in `cwd` (with `env`, else this one); it must exit 0."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])
