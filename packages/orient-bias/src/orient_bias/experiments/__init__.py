"""One module per reproduced finding of the paper, each called by ``orient-bias reproduce``."""
