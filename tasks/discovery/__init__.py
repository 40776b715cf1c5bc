"""Discovery: what a source holds, registered in the store, and how a person names it.

What it holds:

    discover.py  discover_and_register: list a folder or bucket and register what is there
    fetch.py     fetch and fingerprint a source file in one read, off the event loop
    recording_names.py  recording_name / one_line: a recording named by its path
                 relative to the source, on one line, control characters escaped
"""
