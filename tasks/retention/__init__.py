"""Retention: remove the patient data of recordings finished longer ago than a period.

durations.py reads a period (90d, 12w, 1y); recording_purge.py pages through the
recordings a purge takes, removes their text in the store and their journal entries on disk, writes
a receipt per page to the audit trail, and gives the space back (VACUUM).
"""
