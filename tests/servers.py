"""Devserver fixtures (filled in by the service work)."""
