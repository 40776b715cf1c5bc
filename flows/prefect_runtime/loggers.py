"""The names of medasr's loggers: every logger medasr writes to sits under one of them.

Module loggers use `__name__`, the pipeline's use "medasr.*". The command's log level
(flows/cli/log_level.py), the records held until Prefect's logging is set up
(held_logs.py) and the lines sent to the flow run's logs (run_logs.py) all act on these.
Plain: importing it imports no Prefect.
"""

MEDASR_LOGGERS = ("medasr", "config", "service", "devserver", "storage", "tasks", "flows")
