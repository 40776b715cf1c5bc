"""Orchestration and the face: Prefect flows and the `medasr` command."""

from config.runtime import prepare_prefect_environment

# Before any flows module imports prefect, which reads its settings on first use.
prepare_prefect_environment()
