"""Shared fixtures: real local servers (devserver, PostgreSQL, S3) live in plugin modules."""

pytest_plugins = ["tests.servers", "tests.storage_servers"]
