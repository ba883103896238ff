"""ToProVAR."""
