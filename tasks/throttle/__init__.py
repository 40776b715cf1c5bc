"""Throttling: how many requests are in flight, here and across every worker.

What it holds:

    limiter.py       AdaptiveLimiter: AIMD under a ceiling (MEDASR_CONCURRENCY) that backs
                     off on 429/503 and Retry-After and remembers where it was throttled
    gate.py          RequestGate: the gate every request passes (the limiter, an optional
                     rate cap, the shared limit, a stop switch)
    global_limit.py  SharedLimit: one Prefect global concurrency limit (`medasr-requests`)
                     shared by every worker (MEDASR_GLOBAL_CONCURRENCY)
"""
