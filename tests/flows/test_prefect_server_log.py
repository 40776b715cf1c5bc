"""The shared Prefect-server helper fails a test whose server logged a failing service."""

from __future__ import annotations

from tests.flows.prefect_server import service_failures

# Prefect 3.8.8's server on SQLAlchemy 2.1.9, as it logged each scheduler pass (issue 40).
SCHEDULER_FAILING = (
    "01:04:37.101 | INFO    | uvicorn.error - Application startup complete.\n"
    "01:04:38.865 | ERROR   | docket.dependencies - \u21a9 [   171ms] "
    "schedule_recent_deployments(){schedule_recent_deployments}\n"
    "Traceback (most recent call last):\n"
    '  File "prefect/server/services/scheduler.py", line 273, in schedule_deployments\n'
    '  File "sqlalchemy/ext/hybrid.py", line 1851, in prop\n'
    "sqlalchemy.exc.InvalidRequestError: Can't evaluate bulk DML statement; "
    "please supply a bulk_dml decorated function\n"
    "01:04:40.002 | INFO    | prefect.server - something else\n"
)

HEALTHY = """\
01:04:37.101 | INFO    | uvicorn.error - Application startup complete.
01:04:38.865 | INFO    | docket.worker - \u21aa [   171ms] schedule_recent_deployments()
01:04:39.000 | ERROR   | prefect.flow_runs - a flow run's own failure is not the server's
"""


def test_a_failing_service_is_found_with_its_exception() -> None:
    [found] = service_failures(SCHEDULER_FAILING)
    assert "schedule_recent_deployments" in found
    assert found.endswith(
        "InvalidRequestError: Can't evaluate bulk DML statement; "
        "please supply a bulk_dml decorated function"
    )


def test_a_healthy_log_has_no_failure() -> None:
    assert service_failures(HEALTHY) == []


# Two workers polling a SQLite-backed server on a busy host (CI, issue 40): the pass waited
# out the write lock; the next pass marks the queues ready.
LOCKED_ONCE = (
    "03:50:54.980 | ERROR   | docket.dependencies - \u21a9 [ 60273ms] "
    "mark_work_queues_ready(polled_work_queue_ids=...){mark_work_queues_ready:work_pool:294d}\n"
    "Traceback (most recent call last):\n"
    '  File "sqlalchemy/engine/default.py", line 951, in do_execute\n'
    "sqlite3.OperationalError: database is locked\n"
)


def test_a_pass_lost_to_sqlite_write_contention_is_not_a_failing_service() -> None:
    assert service_failures(LOCKED_ONCE) == []
    assert service_failures(LOCKED_ONCE + SCHEDULER_FAILING) != []
