"""The review workstation's decisions as plain functions over a unit of work.

accounts.py: reviewers' passwords (argon2id) and sign-in with lockout; account_changes.py:
an admin adds, disables, unlocks an account; workstation_sessions.py: a sign-in settled
with its session, a sign-out; decisions.py: save a draft, finalize, accept
as is, send back. The faces (web/, the command line) call these; each decision writes
its own audit event (audit.record_event) in the caller's unit of work, so no face
decides without it; nothing here is Prefect.
"""
