"""The reproduced finding: QM9 conformer generation, MSGEN vs its base generator vs RDKit (`conformers`)."""
