"""record/ — how an op gets its node (what it may import: README.md)."""
