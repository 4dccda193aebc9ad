"""core/ — the tensor and what it stands on (what it may import: README.md)."""
