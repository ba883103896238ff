"""One module per reproduced finding, called by the CLI."""
