"""EDT-Former."""
