"""One module per reproduced finding: `icl_regression` (the paper's low-data toy) and
`vq_digits` (VQ codes of sklearn digits); `reproduce` runs both."""
