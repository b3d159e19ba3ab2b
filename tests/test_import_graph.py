"""The package's import graph: no circle, and no import from a lower layer
into a higher one (graphs and datasets < oracles and inference < learners <
estimators).  Every ``import`` statement counts, also those inside functions;
the MAP and M-best registries load their back-ends by name
(``importlib.import_module``), the one sanctioned edge back, which this walk
does not see."""

import ast
import importlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "structlearn"
LAYERS = {"graphs": 0, "datasets": 0, "oracles": 1, "inference": 1, "learners": 2,
          "estimators": 3}


def _modules():
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _edges(mods):
    edges = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        out = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    out.add(sub if sub in mods else target)
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
        edges[name] = {t for t in out if t in mods and t != name}
    return edges


def _circles(edges):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _layer(module):
    parts = module.split(".")
    return LAYERS.get(parts[1]) if len(parts) > 1 else None


def test_the_walk_sees_the_package():
    edges = _edges(_modules())
    assert len(edges) > 100
    assert "structlearn.inference.registry" in edges["structlearn.inference.exact.branch_and_bound"]
    assert "structlearn.inference.chains._chain_kernels" in edges[
        "structlearn.inference.chains.viterbi"]


# back-ends that solve sub-problems with other back-ends by name
META_SOLVERS = {"structlearn.inference.exact.branch_and_bound",
                "structlearn.inference.mbest.nilsson"}


def test_back_ends_declare_their_methods_and_never_import_their_registry():
    """The registries read each back-end's table; only the meta-solvers,
    which call other back-ends by name, import the MAP registry, and no
    back-end imports the M-best registry."""
    from structlearn.inference import mbest, registry

    edges = _edges(_modules())
    for reg, name, table in ((registry._REGISTRY, "structlearn.inference.registry", "METHODS"),
                             (mbest._REGISTRY, "structlearn.inference.mbest", "MBEST_METHODS")):
        for rel in reg._builtin:
            module = "structlearn.inference" + rel
            assert module in edges, module
            back_end = importlib.import_module(module)
            assert getattr(back_end, table), module
            if module not in META_SOLVERS:
                assert name not in edges[module], module
            assert "structlearn.inference.mbest" not in edges[module], module
    assert set(registry.available_methods()) >= {"viterbi", "tree", "exact", "ad3", "ilp"}


def test_no_import_circle():
    assert _circles(_edges(_modules())) == []


def test_no_import_from_a_lower_layer_into_a_higher_one():
    up = [(m, t) for m, outs in _edges(_modules()).items() for t in outs
          if _layer(m) is not None and _layer(t) is not None and _layer(t) > _layer(m)]
    assert up == []


def test_a_circle_is_found_when_there_is_one():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
