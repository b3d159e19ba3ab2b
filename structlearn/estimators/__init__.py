"""structlearn.estimators: scikit-learn estimators for structured outputs."""

from .crf import GraphCRF, SequenceCRF
from .perceptron import SequencePerceptron
from .ssvm import MultiLabelSSVM, SequenceSSVM

__all__ = ["GraphCRF", "MultiLabelSSVM", "SequenceCRF", "SequencePerceptron", "SequenceSSVM"]
