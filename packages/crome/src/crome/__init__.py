"""CROME: Causally Robust Reward Modeling (Srivastava et al., ICLR 2026).

An oracle LLM names the causal rubrics of each prompt; causal augmentations (answers
upgraded or degraded along one rubric) teach sensitivity, neutral augmentations (tie pairs
that differ only in spurious attributes) teach invariance; a reward model is trained with
Bradley-Terry plus a tie loss on the original and filtered augmented pairs.
"""

from crome.augment import (
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
from crome.model import RewardModel, minilm_path
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
from crome.train import TrainConfig, train_reward_model
from crome.world import World, WorldConfig, make_world

__version__ = "0.1.0"

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
    "TrainConfig",
    "TransformersBackend",
    "World",
    "WorldConfig",
    "__version__",
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
