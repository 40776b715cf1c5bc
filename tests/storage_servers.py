"""PostgreSQL and S3 fixtures (filled in by the storage work)."""
