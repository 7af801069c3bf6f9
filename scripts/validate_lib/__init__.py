"""Helpers for scripts/validate: metrics and ground-truth row parsing (standard library only)."""
