"""medasr inside Prefect's process: the API a run uses, its start-up, its logging.

prefect_api.py     which Prefect API a command's flow run uses: a long-running server,
                   checked first, or a temporary one started early
prefect_launch.py  the temporary server's child process
head_start.py      the drain begun with the plain functions while that server starts
held_logs.py       log records of the head start, held until Prefect's logging is set up
loggers.py         the names of medasr's loggers
run_logs.py        medasr's lines in the flow run's logs (Prefect's Logs tab)
quiet_errors.py    medasr's typed errors logged by Prefect without their traceback

May import flows/setup/ (the Run) and the drain's plain batch loops (flows/batch_loops.py),
besides tasks/, service/, storage/, config/ and audit/; never flows/reporting/ nor the
command line. Importing this package imports no Prefect: only prefect_launch.py and
run_logs.py import it at their top (a command that runs no flow imports neither).
"""
