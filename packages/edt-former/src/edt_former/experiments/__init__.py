"""Reproduction experiments: `qa` (molecular yes/no QA through a frozen LLM)."""
