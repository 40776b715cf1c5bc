"""medasr inside Prefect's process: the API a run uses, its start-up, its logging.

prefect_api.py     which Prefect API a command's flow run uses: a long-running server,
                   checked first, or a temporary one started early
prefect_launch.py  the temporary server's child process
prefect_schema.py  whether that server's database needs Prefect's schema upgrade
head_start.py      the drain begun with the plain functions while that server starts
held_logs.py       log records of the head start, held until Prefect's logging is set up
loggers.py         the names of medasr's loggers
run_logs.py        medasr's lines in the flow run's logs (Prefect's Logs tab)
quiet_errors.py    medasr's typed errors logged by Prefect without their traceback
next_nightly.py    when the next nightly run is due, asked over HTTP (`medasr status`)

Which set-up each part serves:

- `medasr run` / `rerun-failures` without PREFECT_API_URL (one machine, a cron job, the
  demo): prefect_api.py starts Prefect's temporary server in a child at once (through
  prefect_launch.py when a profile or prefect.toml must be read), and it dies with the
  command; head_start.py sends the first requests during the seconds it boots,
  held_logs.py keeps their log lines until Prefect's logging exists, and
  flows/cli/nothing_to_do.py ends a run with nothing to claim without waiting for it.
- `medasr run` with PREFECT_API_URL (a long-running server): prefect_api.py asks its
  health endpoint once, so an unreachable server is one sentence (exit 2). There is
  nothing to wait for: no head start, no temporary server, and held_logs.py holds
  nothing (Prefect is imported by then).
- `medasr serve` (deployments on a long-running server): Prefect's runner runs the flows;
  only run_logs.py (the Logs tab) is used, and prefect_api.py's health check at start.
- Every command's flow run: quiet_errors.py (one sentence for medasr's typed errors) and
  run_logs.py.

May import flows/setup/ (the Run) and the drain's plain batch loops (flows/batch_loops.py),
besides tasks/, service/, storage/, config/ and audit/; never flows/reporting/ nor the
command line. Importing this package imports no Prefect: only prefect_launch.py and
run_logs.py import it at their top (a command that runs no flow imports neither).
"""
