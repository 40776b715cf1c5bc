"""`medasr web`: the review workstation, a face over the store like the command line.

A person reads a transcript beside its audio, corrects it and signs it off; the
decisions are tasks/review's plain functions, each in one unit of work with its audit
event. app.py builds the Starlette application; sessions.py signs people in and out;
pages.py shows the queue and a recording; review_actions.py takes decisions;
audio_stream.py decodes a stretch of a recording on demand; command.py serves it all
with uvicorn.
"""
