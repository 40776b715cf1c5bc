"""Helpers and fixtures shared by test modules of more than one folder."""
