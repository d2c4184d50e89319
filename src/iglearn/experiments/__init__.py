"""Reproductions of the paper's experiments."""
