"""In-memory stand-ins of the narrow interfaces, for the fast unit tier."""
