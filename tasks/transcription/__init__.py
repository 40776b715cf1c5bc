"""Transcription: one claimed recording end to end, and the run's bookkeeping around it.

What it holds (import from the module that names it):

    file_run.py     process_batch / transcribe_file: fetch, fingerprint, reuse or split,
                    send chunks with bounded concurrency, join, record (BatchContext)
    file_end.py     FileRun, a file's state in flight, and how it ends (transcript, review)
    batch.py        BatchContext: what every file of a run shares
    batch_claim.py  claim_batch: a batch of pending items claimed under the run's lease
    recorder.py     FileRecorder: one claimed file's whole life in the store
    reuse.py        decide_reuse: the one reuse decision of the run and the dry run
    coverage.py     audio already answered, reused by range whatever the new split
    backlog_plan.py the dry run: what a run would send, from listing, store and a decode
    quality_gate.py the quality gate: flags that hold a transcript for review
    progress.py     FileOutcome, RunStats and the progress observer of the command line
    bookkeeping.py  the run row, what a drain expects, re-queuing failures

Claims, renewal and the paid-answer journal are the work queue's (tasks/work/);
requests pass the throttle (tasks/throttle/); audio comes from tasks/audio/.
"""
