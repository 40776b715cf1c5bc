"""The review workstation's decisions as plain functions over a unit of work.

accounts.py: reviewers' passwords (argon2id) and sign-in with lockout; decisions.py:
save a draft, finalize, accept as is, send back; events.py: the audit events they
produce. The web face (web/) and the command line call these; nothing here is Prefect.
"""
