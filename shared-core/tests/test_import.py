import subprocess
import sys


def test_import_pulls_in_no_framework():
    code = (
        "import sys, shared_core, shared_core.data, shared_core.metrics, shared_core.report, "
        "shared_core.cli, shared_core.device, shared_core.distributed, shared_core.checkpoint\n"
        "bad = [m for m in ('torch', 'jax', 'flax') if m in sys.modules]\n"
        "assert not bad, bad"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_chem_and_model_modules_import_no_rdkit_torch_or_transformers():
    code = (
        "import sys, shared_core, shared_core.data, shared_core.metrics, shared_core.mol_metrics, "
        "shared_core.models\n"
        "bad = [m for m in ('torch', 'rdkit', 'transformers', 'torch_geometric') if m in sys.modules]\n"
        "assert not bad, bad"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
