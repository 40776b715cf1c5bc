"""When the next nightly run is due, asked of the Prefect server that `medasr serve` uses.

`medasr status` never imports Prefect (seconds of CPU for a table of counts), so the
server's REST API is asked directly over HTTP: the nightly deployment by name, then its
earliest scheduled flow run. Only where it can know: PREFECT_API_URL in the environment
names the server; without it there is no server to ask and nothing is said. An answer
takes at most `_TIMEOUT_S`; a server that does not answer is one line, never an error.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from config.runtime import prefect_api_url_in_environment

NIGHTLY = "transcribe-backlog/nightly-backlog"  # flows/deploy.py's NIGHTLY_DEPLOYMENT
_TIMEOUT_S = 10.0  # a busy server answers late; `status` waits no longer


def next_nightly_line() -> str | None:
    """One line saying when the nightly run is next due (in its schedule's time zone), that
    none is scheduled, or that the server did not answer; None without PREFECT_API_URL."""
    api_url = prefect_api_url_in_environment()
    if api_url is None:
        return None
    import httpx  # only where there is a server to ask: `status` stays a quick command

    try:
        with httpx.Client(base_url=api_url, timeout=_TIMEOUT_S) as http:
            deployment = http.get(f"/deployments/name/{NIGHTLY}")
            if deployment.status_code == 404:
                return f"next nightly run: none ({NIGHTLY} is not deployed: `medasr serve`)"
            deployment.raise_for_status()
            found = deployment.json()
            runs = http.post("/flow_runs/filter", json=_scheduled_filter(found["id"]))
            runs.raise_for_status()
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        failure = type(exc).__name__
        return f"next nightly run: unknown (the Prefect server did not answer: {failure})"
    scheduled = runs.json()
    if not scheduled:
        return f"next nightly run: none scheduled ({NIGHTLY} on {api_url})"
    due = datetime.fromisoformat(scheduled[0]["expected_start_time"])
    return f"next nightly run: {_in_zone(due, found).strftime('%Y-%m-%d %H:%M %Z')}"


def _scheduled_filter(deployment_id: str) -> dict[str, object]:
    return {
        "deployments": {"id": {"any_": [deployment_id]}},
        "flow_runs": {"state": {"type": {"any_": ["SCHEDULED"]}}},
        "sort": "EXPECTED_START_TIME_ASC",
        "limit": 1,
    }


def _in_zone(moment: datetime, deployment: dict[str, object]) -> datetime:
    """`moment` in the time zone of the deployment's first schedule (else as given)."""
    schedules = deployment.get("schedules") or []
    try:
        zone = schedules[0]["schedule"]["timezone"]  # type: ignore[index]
        return moment.astimezone(ZoneInfo(str(zone)))
    except (IndexError, KeyError, TypeError, ZoneInfoNotFoundError):
        return moment
