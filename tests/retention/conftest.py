"""Retention tests run on SQLite and on a real PostgreSQL."""

from tests.audit.conftest import audit_store, audit_store_url

__all__ = ["audit_store", "audit_store_url"]
