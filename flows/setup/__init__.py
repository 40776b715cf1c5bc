"""A run set up before its flow: the one Run built from a request, the source listed.

bootstrap.py  RunRequest -> bootstrap(settings, request) -> Run (settings, the parsed
              source, its manifest, store, lease owner, client)
listing.py    the source listed and registered before the flow, or what listing raised

May import tasks/, service/, storage/, config/ and audit/; nothing else of flows/ (the
flows, the reports and the Prefect runtime are built on a Run, not the other way round).
No Prefect: a command builds its Run before Prefect is imported.
"""
