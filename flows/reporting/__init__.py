"""What a run tells afterwards: its summary, the recordings to check, its Prefect record.

summary.py     RunSummary, the one typed value for the CLI, the artifact, the run row and
               the exit code
attention.py   the recordings a person should look at (failed, skipped, held for review)
states.py      the state a flow run ends in      run_record.py  the run row in the store
artifacts.py   the run's Prefect artifacts       run_names.py   flow run names and tags

May import flows/setup/ (the Run) and the drain's plain counts (flows/batch_loops.py),
besides tasks/, service/, storage/, config/ and audit/; never the Prefect runtime
(flows/prefect_runtime/) nor the command line: a report says what happened, whoever
started the run.
"""
