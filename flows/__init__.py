"""Orchestration and the face: Prefect flows and the `medasr` command.

Importing changes nothing in the process: the command's `main` fills in medasr's Prefect
defaults (config/runtime.py) before Prefect is imported.
"""
