"""structlearn.estimators: scikit-learn estimators for structured outputs."""

from .perceptron import SequencePerceptron

__all__ = ["SequencePerceptron"]
