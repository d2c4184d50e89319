"""Adapters that let other tools run iglearn's learners (each needs its optional extra)."""
