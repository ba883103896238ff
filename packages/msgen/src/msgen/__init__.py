"""MSGEN (ICLR 2026): hierarchical multi-scale conformer generation.

Generate the coarse key substructure first (heavy atoms; or the Murcko scaffold, then heavy
atoms), upsample it onto the next scale, and refine with the same kind of generator
conditioned on the upsampled guide. The base generator is pluggable
(`ConformerGenerator`); `DiffusionGenerator` is GeoDiff's per-edge diffusion model (the
paper's base generator, `EpsNetConfig`), or an EGNN DDPM as an option.
Names are loaded on first use, so ``import msgen`` (and the CLI's ``--help``) imports
neither torch nor RDKit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_core.lazy import lazy_exports

if TYPE_CHECKING:
    from msgen.data import (
        coarse_atoms,
        heavy_atoms,
        molecule,
        qm9_conformers,
        scaffold_atoms,
        subgraph,
    )
    from msgen.diffusion import (
        ConformerGenerator,
        DiffusionConfig,
        DiffusionGenerator,
        LangevinConfig,
        ancestral_sample,
        langevin_sample,
        respaced_betas,
        sigmoid_betas,
    )
    from msgen.epsnet import DualEncoderEpsNet, EpsNetConfig, eq_transform
    from msgen.evaluation import bond_quality, etkdg, evaluate, random_conformers, rmsd_matrix
    from msgen.model import DenoiserConfig, EGNNDenoiser, GraphBatch, pack, pair_template
    from msgen.multiscale import MSGEN, Hierarchy, guide_error, hierarchy, upsample_guide
    from msgen.pretrained import MSGENConfig, MSGENModel
    from msgen.upsampling import TAU, UpsamplingPlan, upsample, upsampling_plan

_HOME = {
    "data": (
        "coarse_atoms",
        "heavy_atoms",
        "molecule",
        "qm9_conformers",
        "scaffold_atoms",
        "subgraph",
    ),
    "diffusion": (
        "ConformerGenerator",
        "DiffusionConfig",
        "DiffusionGenerator",
        "LangevinConfig",
        "ancestral_sample",
        "langevin_sample",
        "respaced_betas",
        "sigmoid_betas",
    ),
    "epsnet": ("DualEncoderEpsNet", "EpsNetConfig", "eq_transform"),
    "evaluation": ("bond_quality", "etkdg", "evaluate", "random_conformers", "rmsd_matrix"),
    "model": ("DenoiserConfig", "EGNNDenoiser", "GraphBatch", "pack", "pair_template"),
    "multiscale": ("MSGEN", "Hierarchy", "guide_error", "hierarchy", "upsample_guide"),
    "pretrained": ("MSGENConfig", "MSGENModel"),
    "upsampling": ("TAU", "UpsamplingPlan", "upsample", "upsampling_plan"),
}
_MODULE_OF = {name: module for module, names in _HOME.items() for name in names}

__all__ = [
    "MSGEN",
    "TAU",
    "ConformerGenerator",
    "DenoiserConfig",
    "DiffusionConfig",
    "DiffusionGenerator",
    "DualEncoderEpsNet",
    "EGNNDenoiser",
    "EpsNetConfig",
    "GraphBatch",
    "Hierarchy",
    "LangevinConfig",
    "MSGENConfig",
    "MSGENModel",
    "UpsamplingPlan",
    "ancestral_sample",
    "bond_quality",
    "coarse_atoms",
    "eq_transform",
    "etkdg",
    "evaluate",
    "guide_error",
    "heavy_atoms",
    "hierarchy",
    "langevin_sample",
    "molecule",
    "pack",
    "pair_template",
    "qm9_conformers",
    "random_conformers",
    "respaced_betas",
    "rmsd_matrix",
    "scaffold_atoms",
    "sigmoid_betas",
    "subgraph",
    "upsample",
    "upsample_guide",
    "upsampling_plan",
]


__getattr__, __dir__ = lazy_exports(__name__, _MODULE_OF, distribution="msgen")
