"""structlearn.estimators: scikit-learn estimators for structured outputs."""

from .crf import GraphCRF, SequenceCRF
from .perceptron import SequencePerceptron
from .ssvm import MultiLabelSSVM, SequenceSSVM

#: Keys of every ``history_`` record of every estimator (each estimator adds
#: its own keys after these): the 1-based pass, seconds since ``fit`` started,
#: the training objective (NaN where not computed) and the certified duality
#: gap (NaN for methods without one).
HISTORY_KEYS = ("iter", "time", "objective", "gap")

__all__ = ["GraphCRF", "HISTORY_KEYS", "MultiLabelSSVM", "SequenceCRF", "SequencePerceptron",
           "SequenceSSVM"]
