"""scikit-learn's estimator contract: tags, the generic estimator checks
(every check that does not apply listed with its reason), and the API checks
that apply to estimators of structured X."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import (check_estimator_cloneable,
                                            check_estimator_repr,
                                            check_estimator_tags_renamed,
                                            check_get_params_invariance,
                                            check_mixin_order,
                                            check_no_attributes_set_in_init,
                                            check_param_validation,
                                            check_parameters_default_constructible,
                                            check_set_params, check_valid_tag_types,
                                            estimator_checks_generator)

from structlearn.datasets import SequenceVectorizer
from structlearn.estimators import (GraphCRF, MultiLabelSSVM, SequenceCRF, SequencePerceptron,
                                    SequenceSSVM)

# The checks MultiLabelSSVM does not pass, and why they do not apply: the
# generic classifier checks draw single-column or multi-class targets, while
# a multilabel structural SVM takes a 0/1 indicator matrix with one column
# per label (as scikit-learn's multilabel meta-estimators do).
MULTILABEL_NOT_APPLICABLE = {
    "check_estimators_dtypes": "its targets hold class 2: Y must be a 0/1 indicator matrix",
    "check_classifier_data_not_an_array": "multi-class targets: Y must be 0/1 indicators",
    "check_classifiers_classes": "passes a 1-D multi-class y; Y is an (n, n_labels) indicator",
    "check_classifiers_train": "expects predict to return 1-D class labels; predict returns "
                               "the (n_samples, n_labels) indicator matrix",
    "check_classifiers_regression_target": "passes a 1-D continuous y; the error names the "
                                           "indicator shape Y needs instead",
    "check_fit2d_1feature": "multi-class targets are rejected before the feature count is "
                            "looked at",
}


# checks not run at all, and why
MULTILABEL_NOT_RUN = {
    "check_array_api_input": "structlearn computes with numpy and numba, not the array API",
    # passes or fails with the data: whether the learned interactions flip a sign
    "check_classifier_multioutput": "decision_function holds the per-label scores; predict "
                                    "adds the learned pairwise label interactions, so the sign "
                                    "of a score need not be the predicted label",
    "check_classifiers_multilabel_output_format_predict_proba":
        "a structural SVM has no predict_proba",
}


def _check_name(check):
    return getattr(check, "func", check).__name__


def _multilabel_checks():
    """(estimator, check) params; the expected failures come marked xfail."""
    out = []
    for item in estimator_checks_generator(
            MultiLabelSSVM(max_iter=5, tol=0.5, random_state=0), legacy=True,
            expected_failed_checks=MULTILABEL_NOT_APPLICABLE, mark="xfail", xfail_strict=True):
        values, marks = (item.values, item.marks) if hasattr(item, "values") else (item, ())
        name = _check_name(values[1])
        if name not in MULTILABEL_NOT_RUN:
            out.append(pytest.param(*values, marks=marks, id=name))
    return out


MULTILABEL_CHECKS = _multilabel_checks()


@pytest.mark.parametrize("estimator, check", MULTILABEL_CHECKS)
def test_multilabel_ssvm_passes_sklearn_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


STRUCTURED = [SequenceSSVM(), SequenceCRF(), SequencePerceptron(), GraphCRF()]
# checks that do not need a 2-D X: they apply to every estimator
API_CHECKS = [check_estimator_cloneable, check_estimator_repr, check_no_attributes_set_in_init,
              check_get_params_invariance, check_set_params, check_mixin_order,
              check_valid_tag_types, check_estimator_tags_renamed,
              check_parameters_default_constructible,
              # every parameter declared in _parameter_constraints, and a
              # value outside them refused by fit before the data is read
              check_param_validation]


@pytest.mark.parametrize("estimator", STRUCTURED + [MultiLabelSSVM(), SequenceVectorizer()],
                         ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("check", API_CHECKS, ids=lambda c: c.__name__)
def test_api_checks_that_need_no_2d_input(estimator, check):
    check(type(estimator).__name__, clone(estimator))


@pytest.mark.parametrize("estimator", STRUCTURED, ids=lambda e: type(e).__name__)
def test_tags_say_what_the_input_is(estimator):
    tags = get_tags(estimator)
    assert tags.input_tags.two_d_array is False  # lists of sequences / graphs
    assert tags.target_tags.required
    assert tags.input_tags.sparse == (not isinstance(estimator, GraphCRF))


def test_multilabel_tags():
    tags = get_tags(MultiLabelSSVM())
    assert tags.input_tags.two_d_array and tags.input_tags.sparse
    assert tags.target_tags.multi_output and not tags.target_tags.single_output
    assert tags.estimator_type == "classifier" and tags.classifier_tags.multi_label


def test_multilabel_errors_name_the_problem():
    X = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(ValueError, match="requires y to be passed"):
        MultiLabelSSVM().fit(X, None)
    with pytest.raises(ValueError, match="Unknown label type"):
        MultiLabelSSVM().fit(X, np.full((10, 2), 0.5))


@pytest.mark.parametrize("fit", [
    lambda: SequenceSSVM(max_iter=2).fit(*_chain()),
    lambda: SequenceSSVM(max_iter=2, solver="bcfw").fit(*_chain()),
    lambda: MultiLabelSSVM(max_iter=2).fit(*_multilabel()),
])
def test_convergence_warnings_point_at_the_users_call(fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    mine = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert mine and all(w.filename == __file__ for w in mine)


def _chain():
    from structlearn.datasets import make_chain_data

    return make_chain_data(20, length=5, n_labels=5, n_features=10, random_state=0)


def _multilabel():
    from structlearn.datasets import make_multilabel_pairwise

    return make_multilabel_pairwise(20, n_labels=5, n_features=10, random_state=0)[:2]


@pytest.mark.parametrize("make, data", [
    (SequenceSSVM, _chain), (SequenceCRF, _chain), (SequencePerceptron, _chain),
    (MultiLabelSSVM, _multilabel),
])
def test_fit_refuses_n_jobs_zero_even_where_it_would_not_be_used(make, data):
    """n_jobs=0 is refused by fit's parameter validation, also on data too
    small to be split into jobs."""
    with pytest.raises(ValueError, match="'n_jobs' parameter of .* Got 0 instead"):
        make(n_jobs=0).fit(*data())
