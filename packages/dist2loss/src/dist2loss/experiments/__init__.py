"""One module per reproduced finding: `icl_regression` (the paper's low-data toy)."""
