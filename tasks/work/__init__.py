"""Claimed work, whatever its kind: the discipline every unit of work under a lease keeps.

What it holds:

    lease_keeper.py  LeaseKeeper: renews, on a timer, every lease this process holds and
                     tells the holder which claims were lost
    store_calls.py   in_store: a store call from async code, off the event loop, on a
                     fresh unit of work in a worker thread
    journal.py       Journal: a paid answer (or an accepted upload) kept on local disk
                     (0600) until the store has it, replayed at the next start
    group_commit.py  GroupWriter: a run's file writes share transactions, one commit
                     per group; a call that raises fails alone (its group runs again,
                     each call in a savepoint of its own)
    paid_answers.py  store_chunk_answer: a chunk answer journaled, then committed in a
                     group; what a crash and a power cut cost

Transcription items and deliveries are both claimed through the store's one work queue
(storage/); these are the pieces a holder of such a claim uses.
"""
