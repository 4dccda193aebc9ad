"""compat/ — PyTorch's odds and ends (what it may import: README.md)."""
