"""teaching/ — the course around the lessons (what it may import: README.md)."""
