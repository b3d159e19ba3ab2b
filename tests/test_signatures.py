"""No function of the package takes more than 12 parameters, except the
ones listed in CONTRIBUTING.md ("Kernel state and parameter counts"), each
for a stated reason.  Solver state goes to kernels as a few named tuples
(``TokenSlots``, ``ActiveSets``, ``PairwiseModel``, ...)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "structlearn"
MAX_PARAMETERS = 12

# scikit-learn constructors: one parameter per hyperparameter
ESTIMATOR_CONSTRUCTORS = {
    "compat.CRF.__init__",
    "estimators.crf.GraphCRF.__init__",
    "estimators.ssvm.SequenceSSVM.__init__",
    "estimators.ssvm.MultiLabelSSVM.__init__",
}
# learners' entry points: keyword-only parameters mirroring an estimator's
LEARNER_ENTRY_POINTS = {
    "learners.chain_crf.fit_chain_crf_lbfgs",
    "learners.chain_crf_cluster.fit_chain_crf_cluster",
    "learners.convex_bp_learning.fit_convex_bp_crf",
    "learners.gdmm_chain.fit_gdmm_chain",
    "learners.gdmm_chain_cluster.fit_gdmm_chain_cluster",
    "learners.gdmm_multilabel.fit_gdmm_multilabel",
    "learners.gdmm_multilabel_cluster.fit_gdmm_multilabel_cluster",
    "learners.multilabel.fit_multilabel",
    "learners.online_chain.fit_online_chain",
    "learners.sgd_chain.fit_chain_crf_sgd",
}
# MAP back-ends: keyword-only options that solve_map and the command line pass
MAP_BACKENDS = {
    "inference.exact.branch_and_bound.branch_and_bound_map",
}
# helpers called per factor step or per list entry in the hottest loops:
# grouping their arrays into tuples made the kernels measurably slower
# (tuples of arrays are reference-counted on every call)
HOT_HELPERS = {
    "oracles._indicator_kernels._both_listed",
    "oracles._indicator_kernels._neither_listed",
    "oracles._indicator_kernels._line_best",
    "oracles._indicator_kernels.indicator_fmo",
    "oracles._indicator_kernels.indicator_fmo_above",
    "oracles._pair_kernels._static_search",
    "oracles._pair_kernels.static_pair_argmax",
    "oracles._pair_kernels.static_pair_argmax_excluding",
    "oracles._inner_kernels.inner_product_fmo32",
    "oracles._inner_kernels.inner_product_fmo_sampled",
    "oracles._binary_kernels._walk_pairs",
    "learners._gdmm_multilabel_kernels._activate_violated",
    "inference.chains._kbest_kernels._pop_merged",
    "inference.chains._chain_kernels._fb_log_seq",
}
DOCUMENTED = ESTIMATOR_CONSTRUCTORS | LEARNER_ENTRY_POINTS | MAP_BACKENDS | HOT_HELPERS


def _parameter_counts():
    counts = {}
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        tree = ast.parse(path.read_text())
        scopes = [(tree, module)]
        while scopes:
            node, prefix = scopes.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    scopes.append((child, f"{prefix}.{child.name}"))
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    a = child.args
                    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
                    n = len(names) + (a.vararg is not None) + (a.kwarg is not None)
                    if names and names[0] in ("self", "cls"):
                        n -= 1
                    counts[f"{prefix}.{child.name}"] = n
                    scopes.append((child, f"{prefix}.{child.name}"))
    return counts


def test_no_function_takes_more_than_twelve_parameters_outside_the_list():
    counts = _parameter_counts()
    over = sorted(name for name, n in counts.items()
                  if n > MAX_PARAMETERS and name not in DOCUMENTED)
    assert over == [], over


def test_the_list_names_only_functions_that_need_it():
    counts = _parameter_counts()
    stale = sorted(name for name in DOCUMENTED
                   if name not in counts or counts[name] <= MAX_PARAMETERS)
    assert stale == [], stale


def test_the_walk_counts_parameters():
    counts = _parameter_counts()
    assert counts["learners._gdmm_chain_kernels.gdmm_chain_pass"] == 11
    assert counts["estimators.ssvm.SequenceSSVM.__init__"] > MAX_PARAMETERS
