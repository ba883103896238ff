import math

import torch
from pgm.evaluation import DigitClassifier


def test_classifier_features_shape():
    clf = DigitClassifier(levels=4)
    f = clf.features(torch.randint(0, 4, (5, 64)))
    assert f.shape == (5, 64) and torch.all(f >= 0)
    with torch.no_grad():
        assert math.isfinite(float(clf(torch.zeros(1, 64, dtype=torch.long)).sum()))
