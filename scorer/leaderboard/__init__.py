"""Batch scoring of many submissions into public and private leaderboards."""
