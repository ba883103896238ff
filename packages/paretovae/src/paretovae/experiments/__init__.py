"""The experiments behind ``paretovae reproduce`` (one module per data set family)."""
