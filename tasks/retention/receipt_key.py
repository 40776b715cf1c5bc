"""The key of the purge receipts' keyed hashes: outside the store, in the data dir.

A purge keeps, for each text it removes, an HMAC-SHA256 under this key. Whoever holds
the store alone (a backup, a dump) cannot find a removed value by hashing candidates
(every six-digit patient id takes seconds unkeyed); a site that keeps the key can
still match a copy kept elsewhere to its receipt. 32 random bytes, made by the first
purge, mode 0600; losing it only stops that matching.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from config.private_files import create_private_file, make_private_folders
from tasks.errors import RetentionInvalid

KEY_FILE = "receipt.key"
_KEY_BYTES = 32


def receipt_key(data_dir: Path) -> bytes:
    """The receipt key kept in `data_dir`, made on first use; raises RetentionInvalid
    when the file there is not a key."""
    path = data_dir / KEY_FILE
    if not path.exists():
        make_private_folders(data_dir)
        try:
            descriptor = create_private_file(path)
        except FileExistsError:  # another purge made it first
            pass
        else:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(secrets.token_bytes(_KEY_BYTES))
    key = path.read_bytes()
    if len(key) != _KEY_BYTES:
        raise RetentionInvalid(
            f"{path} is not a purge receipt key ({_KEY_BYTES} bytes); move it away and purge "
            "again (a new key is made)"
        )
    return key
