"""CROME: Causally Robust Reward Modeling (Srivastava et al., ICLR 2026).

An oracle LLM names the causal rubrics of each prompt; causal augmentations (answers
upgraded or degraded along one rubric) teach sensitivity, neutral augmentations (tie pairs
that differ only in spurious attributes) teach invariance; a reward model is trained with
Bradley-Terry plus a tie loss on the original and filtered augmented pairs.

The names below are imported on first use (PEP 562), so ``import crome`` and the console
script's ``--help`` do not pay for torch and transformers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_core.lazy import lazy_exports

if TYPE_CHECKING:
    from crome.augmentation import (
        AugmentConfig,
        AugmentStats,
        augment,
        basic_verifier,
        causal_augmentations,
        causally_aligned_neutrals,
        filter_augmentations,
        irrelevant_query_neutrals,
        world_irrelevant,
        world_verifier,
    )
    from crome.cache import OracleCache, request_key
    from crome.data import PairRow, read_pairs, split_by_label, write_pairs
    from crome.evaluate import (
        EXAMPLE_COUNTS,
        SUBSET_MAPPING,
        best_of_n,
        load_rewardbench,
        pairwise_accuracy,
        rewardbench_scores,
        section_scores,
        sensitivity,
    )
    from crome.losses import bradley_terry_loss, crome_loss, tie_loss
    from crome.model import RewardModel, RewardScorer, minilm_path
    from crome.oracle import (
        ChatBackend,
        LLMOracle,
        OpenAIBackend,
        Oracle,
        OracleError,
        ProgrammaticOracle,
        TransformersBackend,
        load_prompt,
    )
    from crome.sequence_model import SequenceRewardModel
    from crome.train import TrainConfig, train_reward_model
    from crome.verbs import load_reward_model
    from crome.world import World, WorldConfig, make_world

_EXPORTS: dict[str, str] = {
    "AugmentConfig": "crome.augmentation",
    "AugmentStats": "crome.augmentation",
    "augment": "crome.augmentation",
    "basic_verifier": "crome.augmentation",
    "causal_augmentations": "crome.augmentation",
    "causally_aligned_neutrals": "crome.augmentation",
    "filter_augmentations": "crome.augmentation",
    "irrelevant_query_neutrals": "crome.augmentation",
    "world_irrelevant": "crome.augmentation",
    "world_verifier": "crome.augmentation",
    "OracleCache": "crome.cache",
    "request_key": "crome.cache",
    "PairRow": "crome.data",
    "read_pairs": "crome.data",
    "split_by_label": "crome.data",
    "write_pairs": "crome.data",
    "EXAMPLE_COUNTS": "crome.evaluate",
    "SUBSET_MAPPING": "crome.evaluate",
    "best_of_n": "crome.evaluate",
    "load_rewardbench": "crome.evaluate",
    "pairwise_accuracy": "crome.evaluate",
    "rewardbench_scores": "crome.evaluate",
    "section_scores": "crome.evaluate",
    "sensitivity": "crome.evaluate",
    "bradley_terry_loss": "crome.losses",
    "crome_loss": "crome.losses",
    "tie_loss": "crome.losses",
    "RewardModel": "crome.model",
    "RewardScorer": "crome.model",
    "minilm_path": "crome.model",
    "ChatBackend": "crome.oracle",
    "LLMOracle": "crome.oracle",
    "OpenAIBackend": "crome.oracle",
    "Oracle": "crome.oracle",
    "OracleError": "crome.oracle",
    "ProgrammaticOracle": "crome.oracle",
    "TransformersBackend": "crome.oracle",
    "load_prompt": "crome.oracle",
    "SequenceRewardModel": "crome.sequence_model",
    "TrainConfig": "crome.train",
    "train_reward_model": "crome.train",
    "World": "crome.world",
    "WorldConfig": "crome.world",
    "make_world": "crome.world",
    "load_reward_model": "crome.verbs",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, distribution="crome")


__all__ = [
    "EXAMPLE_COUNTS",
    "SUBSET_MAPPING",
    "AugmentConfig",
    "AugmentStats",
    "ChatBackend",
    "LLMOracle",
    "OpenAIBackend",
    "Oracle",
    "OracleCache",
    "OracleError",
    "PairRow",
    "ProgrammaticOracle",
    "RewardModel",
    "RewardScorer",
    "SequenceRewardModel",
    "TrainConfig",
    "TransformersBackend",
    "World",
    "WorldConfig",
    "augment",
    "basic_verifier",
    "best_of_n",
    "bradley_terry_loss",
    "causal_augmentations",
    "causally_aligned_neutrals",
    "crome_loss",
    "filter_augmentations",
    "irrelevant_query_neutrals",
    "load_prompt",
    "load_reward_model",
    "load_rewardbench",
    "make_world",
    "minilm_path",
    "pairwise_accuracy",
    "read_pairs",
    "request_key",
    "rewardbench_scores",
    "section_scores",
    "sensitivity",
    "split_by_label",
    "tie_loss",
    "train_reward_model",
    "world_irrelevant",
    "world_verifier",
    "write_pairs",
]
