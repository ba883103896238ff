"""Ten small QM9-like molecules (every ring and bond kind the tests need), shared by the data
and experiment tests."""

TEN_SMILES = [
    "CCO",
    "c1ccccc1",
    "CC#N",
    "C1CC1N",
    "NC(=O)C",
    "c1ccncc1",
    "CCCC",
    "OCCO",
    "C1CCOC1",
    "CN(C)C",
]
