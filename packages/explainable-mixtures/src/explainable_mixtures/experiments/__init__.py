"""One module per reproduced finding; `reproduce` runs them all."""
