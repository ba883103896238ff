"""The PyTorch twin of ConvT3: the SSM layer, blocks, frame predictors and the ConvLSTM baseline."""

from convt3.torch.layer import ConvT3SSM
from convt3.torch.model import (
    ConvLSTMCell,
    ConvSSMBlock,
    FramePredictor,
    PredictorConfig,
    convlstm_hidden_for,
    count_parameters,
)
from convt3.torch.scan import parallel_scan, sequential_scan

__all__ = [
    "ConvLSTMCell",
    "ConvSSMBlock",
    "ConvT3SSM",
    "FramePredictor",
    "PredictorConfig",
    "convlstm_hidden_for",
    "count_parameters",
    "parallel_scan",
    "sequential_scan",
]
