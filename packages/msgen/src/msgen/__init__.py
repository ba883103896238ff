"""MSGEN."""
