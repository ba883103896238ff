"""One module per reproduced finding: `planted` (planted-preference world, tiny Llama) and
`smollm2` (SmolLM2-135M with LoRA on Shakespeare characters, ``--scale small``)."""
