"""Command line interface: ``python -m structlearn COMMAND``.

Commands
--------
``map FILE.uai [--evid F] [--method M] [--time-limit S] [--m-best M] [--out FILE]``
    Read a UAI network, find a MAP labeling with
    :func:`structlearn.inference.solve_map` (or the ``M`` best with
    :func:`structlearn.inference.solve_mbest`), print one JSON line and write
    the labeling in UAI ``.MAP`` format (the ranked labelings in ``.MBEST``
    format).
``tag train|eval|predict ...``
    Train a tagger on a CoNLL-U corpus, evaluate it, or write a corpus with
    the predicted column (``tag --help``).
``demo [...]``
    Train a sequence model on the bundled OCR letters (arguments go to the
    demo; ``demo --help`` lists them).

Exit status: 0 on success, 1 when an input file cannot be read or is
malformed (or the solution cannot be written) and when the model has no
labeling of finite score (status ``infeasible``), 2 for usage errors (bad
arguments, unknown method, a method that does not fit the graph), 3 when the
method stopped without a finite-score labeling (status
``no_feasible_found``). With status 1 or 3 after a solve, the JSON line is
printed and no solution file is written. Errors are reported as one line on
stderr.
"""

import argparse
import contextlib
import json
import math
import os
import sys
import time

__all__ = ["main", "run"]

_EXIT_FILE = 1
_EXIT_USAGE = 2
_EXIT_NONE_FOUND = 3
DEFAULT_TIME_LIMIT = 60.0  # seconds, when --time-limit is not given
# seconds of a --time-limit kept back for writing the solution and the JSON
# line and leaving the process
OUTPUT_RESERVE = 0.05


def process_start():
    """``time.perf_counter()`` reading of this process's start: the command's
    budget then covers the interpreter's start and the imports too.  Linux
    (``/proc``); elsewhere the moment this module was imported."""
    try:
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        age = uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return _IMPORTED
    if not 0.0 <= age < 60.0:  # not a fresh command-line process
        return time.perf_counter()
    return time.perf_counter() - age


_IMPORTED = time.perf_counter()


class _CliError(Exception):
    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


def _parser():
    from . import __version__
    from .inference import available_mbest_methods, available_methods

    parser = argparse.ArgumentParser(
        prog="structlearn",
        description="Structured prediction and MAP inference on discrete factor graphs.",
    )
    parser.add_argument("--version", action="version", version=f"structlearn {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    m = sub.add_parser(
        "map",
        help="MAP inference on a UAI network file",
        description=(
            "Find a maximum-score labeling of a UAI MARKOV/BAYES network, print one JSON line "
            "(method, score, upper_bound, gap, time, compile_time, wall_time, n_vars, "
            "n_factors, status, ...) and write "
            "the labeling in UAI .MAP format. Non-finite numbers are printed as null."
        ),
        epilog=(
            "Exit status: 0 success, 1 unreadable or malformed file, or a model without a "
            "labeling of finite score (status infeasible), 2 usage error (unknown method, "
            "method unfit for the graph, bad parameter), 3 no labeling of finite score "
            "found in the budget (status no_feasible_found). With 1 or 3 after a solve the "
            "JSON line is printed and no solution file is written."
        ),
    )
    m.add_argument("file", help="network file (.uai, or .uai.gz)")
    m.add_argument("--evid", metavar="F", help="UAI evidence file; observed variables are clamped")
    m.add_argument(
        "--method",
        default="auto",
        help=(f"MAP method, one of {', '.join(available_methods())} (default: auto: exact "
              "on chains, forests and graphs of at most 5e6 labelings x factors, gdmm when a "
              "variable has 100 states or more, else branch and bound (exact) on binary "
              "pairwise graphs and up to 5000 variables, ad3 above; the JSON's reason field "
              "says which)"),
    )
    m.add_argument(
        "--time-limit",
        type=float,
        metavar="S",
        help=(
            "time limit in seconds for the whole command, from the process's start: "
            "starting and imports, reading the file, compiling the solver's kernels on a "
            "first run (reported as compile_time), solving and writing (wall_time). "
            "Iterative methods run until the limit or a certified optimum; exact methods "
            "cannot be interrupted and report over_time_limit=true when they end later "
            f"(default: {DEFAULT_TIME_LIMIT:g} s as a cap: iterative methods then also stop "
            "after 1000 iterations unless -p max_iter=N is given, branch and bound after "
            "1000 nodes unless -p max_nodes=N is given)"
        ),
    )
    m.add_argument(
        "--m-best",
        type=int,
        metavar="M",
        help=(
            "list the M best labelings instead of one (methods: "
            f"{', '.join(available_mbest_methods())}; default auto): the JSON line holds "
            "their scores and certified upper bounds, the solution file (default: the "
            "network's file name plus .MBEST) one line per rank 'rank score upper_bound n "
            "l_1 ... l_n' after an 'MBEST M' header"
        ),
    )
    m.add_argument(
        "--param",
        "-p",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra solver parameter (VALUE parsed as JSON when possible); repeatable",
    )
    m.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=("print a progress line (iteration or search node, elapsed time, score, bound, "
              "gap) on stderr at most once a second (default: when stderr is a terminal)"),
    )
    out = m.add_mutually_exclusive_group()
    out.add_argument(
        "--out",
        metavar="FILE.MAP",
        help="solution file (default: the network's file name plus .MAP, in the current folder)",
    )
    out.add_argument("--no-write", action="store_true", help="do not write a solution file")
    sub.add_parser(
        "tag",
        help="train, evaluate and apply a tagger on CoNLL-U files (tag --help for options)",
        add_help=False,
    )
    sub.add_parser(
        "demo",
        help="train a sequence model on the bundled OCR letters (demo --help for options)",
        add_help=False,
    )
    return parser


def _default_out(path, suffix=".MAP"):
    name = os.path.basename(path)
    if name.endswith(".gz"):
        name = name[: -len(".gz")]
    return name + suffix


def _write_solution_file(args, suffix, what, writer, *data):
    """Write ``data`` with ``writer`` to ``--out`` or the default name; the
    path written."""
    out = args.out if args.out else _default_out(args.file, suffix)
    try:
        writer(*data, out)
    except OSError as exc:
        raise _CliError(f"cannot write the {what}: {_describe(exc)}", _EXIT_FILE) from None
    return out


def _parse_params(items):
    params = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise _CliError(f"--param expects NAME=VALUE, got {item!r}", _EXIT_USAGE)
        try:
            params[name] = json.loads(value)
        except ValueError:
            params[name] = value
    return params


def _json_float(x):
    x = float(x)
    return x if math.isfinite(x) else None


def _run_map(args, started):
    from .graphs import read_uai
    from .inference.registry import check_method_params, get_method

    params = _parse_params(args.param)
    if "time_limit" in params:
        raise _CliError("give the time limit as --time-limit S, not as a parameter",
                        _EXIT_USAGE)
    if args.time_limit is not None and not (args.time_limit > 0
                                            and math.isfinite(args.time_limit)):
        raise _CliError(f"--time-limit must be a positive, finite number of seconds, "
                        f"got {args.time_limit}", _EXIT_USAGE)
    if args.m_best is not None and args.m_best < 1:
        raise _CliError(f"--m-best must be an integer >= 1, got {args.m_best}", _EXIT_USAGE)
    if args.method != "auto" and args.m_best is None:
        try:
            get_method(args.method)
            check_method_params(args.method, params)
        except (ValueError, TypeError) as exc:
            raise _CliError(str(exc), _EXIT_USAGE) from None
    if args.method != "auto" and args.m_best is not None:
        from .inference.mbest import mbest_method_parameters

        try:
            accepted = mbest_method_parameters(args.method)
        except ValueError as exc:
            raise _CliError(str(exc), _EXIT_USAGE) from None
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise _CliError(f"method {args.method!r} got unexpected parameter(s): "
                            f"{', '.join(unknown)}; method {args.method!r} takes: "
                            f"{', '.join(accepted)}", _EXIT_USAGE)

    t0 = time.perf_counter()
    try:
        graph = read_uai(args.file, evidence=args.evid)
    except (OSError, ValueError) as exc:
        raise _CliError(_describe(exc), _EXIT_FILE) from None
    read_time = time.perf_counter() - t0

    # the budget counts from the start of the command (of the process, run from
    # the command line): what starting and reading took is gone, and a little
    # is kept for the output (a solver handed a spent budget does one step)
    budget = DEFAULT_TIME_LIMIT if args.time_limit is None else args.time_limit
    time_limit = max(budget - (time.perf_counter() - started) - OUTPUT_RESERVE, 1e-3)
    show = sys.stderr.isatty() if args.progress is None else args.progress
    from .inference._progress import printing

    with printing(sys.stderr) if show else contextlib.nullcontext():
        if args.m_best is not None:
            return _run_mbest(args, graph, params, time_limit, started, read_time)
        return _solve_one(args, graph, params, time_limit, started, read_time)


def _solve_one(args, graph, params, time_limit, started, read_time):
    """Solve the MAP problem, write the solution, print the JSON record."""
    from .inference import solve_map
    from .inference._budget import DEFAULT_MAX_ITER
    from .inference.registry import method_parameters, resolve_auto

    method, reason = args.method, ""
    if method == "auto":
        method, reason, params = resolve_auto(graph, params)
    if args.time_limit is None:
        # the default limit is a cap: iterative methods keep their iteration
        # cap, branch and bound its node cap
        from .inference.exact.branch_and_bound import DEFAULT_MAX_NODES

        for name, cap in (("max_iter", DEFAULT_MAX_ITER), ("max_nodes", DEFAULT_MAX_NODES)):
            if name not in params and name in method_parameters(method):
                params[name] = cap
    try:
        result = solve_map(graph, method=method, time_limit=time_limit, **params)
    except (ValueError, TypeError) as exc:
        raise _CliError(str(exc), _EXIT_USAGE) from None
    result.reason = reason

    from .graphs import write_uai_solution

    found = result.score > -math.inf
    out = None
    if not args.no_write and found:
        out = _write_solution_file(args, ".MAP", "solution", write_uai_solution, result.labels)

    record = {
        "file": args.file,
        "method": result.method,
        "score": _json_float(result.score),
        "upper_bound": _json_float(result.upper_bound),
        "gap": _json_float(result.gap),
        **_run_fields(args, graph, result, started, read_time),
        "status": result.status,
        "reason": result.reason,
        "n_iter": int(result.n_iter),
        "converged": bool(result.converged),
        "solution": out,
    }
    print(json.dumps(record, allow_nan=False))
    return _exit_status(result.status, found)


def _exit_status(status, found):
    """0 with a labeling of finite score, 1 when the model has none (proved),
    3 when none was found."""
    if status == "infeasible":
        return _EXIT_FILE
    return 0 if found else _EXIT_NONE_FOUND


def _run_fields(args, graph, result, started, read_time):
    """Timing and size fields of a JSON record (the command's wall time so far)."""
    wall = time.perf_counter() - started
    budget = DEFAULT_TIME_LIMIT if args.time_limit is None else args.time_limit
    return {
        "time": round(float(result.time), 6),
        "compile_time": round(float(result.compile_time), 6),
        "read_time": round(read_time, 6),
        "wall_time": round(wall, 6),
        "time_limit": budget,
        "over_time_limit": bool(wall > budget),
        "n_vars": int(graph.n_vars),
        "n_factors": int(graph.n_factors),
    }


def _run_mbest(args, graph, params, time_limit, started, read_time):
    from .graphs import write_uai_solutions
    from .inference import solve_mbest

    try:
        result = solve_mbest(graph, args.m_best, method=args.method, time_limit=time_limit,
                             **params)
    except (ValueError, TypeError) as exc:
        raise _CliError(str(exc), _EXIT_USAGE) from None
    out = None
    if not args.no_write and result.n_found:
        out = _write_solution_file(args, ".MBEST", "solutions", write_uai_solutions,
                                   result.labels, result.scores, result.upper_bounds)
    record = {
        "file": args.file,
        "method": result.method,
        "m": int(args.m_best),
        "n_found": result.n_found,
        "scores": [_json_float(x) for x in result.scores],
        "upper_bounds": [_json_float(x) for x in result.upper_bounds],
        "status": result.status,
        **_run_fields(args, graph, result, started, read_time),
        "solution": out,
    }
    print(json.dumps(record, allow_nan=False))
    # a graph without a feasible labeling is an answer, but not a solution
    return _exit_status(result.status, result.n_found > 0)


def _describe(exc):
    """One line for an exception (OSError gets its file name)."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return " ".join(str(exc).split()) or type(exc).__name__


def _run_demo(argv):
    try:
        from . import _demo
    except ModuleNotFoundError as exc:
        if exc.name != f"{__package__}._demo":
            raise
        raise _CliError("the demo is not available in this installation", _EXIT_FILE) from None
    return _demo.main(argv)


def main(argv=None):
    """Entry point of ``python -m structlearn`` and the ``structlearn`` script.

    Parameters
    ----------
    argv : list of str, optional
        Arguments after the program name (``sys.argv[1:]`` when None: a
        command-line run, whose time budget then counts from the process's
        start).

    Returns
    -------
    status : int
        Process exit status.
    """
    started = process_start() if argv is None else time.perf_counter()
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv and argv[0] == "demo":
            return int(_run_demo(argv[1:]) or 0)
        if argv and argv[0] == "tag":
            from . import _tagger

            try:
                return _tagger.main(argv[1:])
            except _tagger.TaggerError as exc:
                raise _CliError(str(exc), exc.status) from None
        args = _parser().parse_args(argv)
        if args.command == "map":
            return _run_map(args, started)
        raise _CliError(f"unknown command {args.command!r}", _EXIT_USAGE)  # pragma: no cover
    except _CliError as exc:
        command = argv[0] if argv else ""
        message = " ".join(str(exc).split())
        print(f"structlearn {command}: error: {message}".replace("  ", " "), file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        print("structlearn: interrupted", file=sys.stderr)
        return 130


def run():
    """``main()`` as a process: its status is the exit status, and the process
    ends right after the output is flushed (the interpreter's teardown of the
    compiled kernels took 0.25-0.35 s after the answer was printed, time a
    ``--time-limit`` run had to account for)."""
    status = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    run()
