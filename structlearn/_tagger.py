"""``python -m structlearn tag``: train, evaluate and apply a tagger on CoNLL-U files.

The features are those of the CRFsuite tutorial
(:func:`structlearn.datasets.token_features`); the model file is a joblib
dump of the fitted estimator with the column it predicts.
"""

import argparse
import os
import sys
import time

__all__ = ["main", "TaggerError"]

MODEL_FORMAT = "structlearn-tagger"
COLUMNS = ("upos", "xpos", "feats", "upos+feats")
# CoNLL-U field index of each predicted column
_FIELDS = {"upos": (3,), "xpos": (4,), "feats": (5,), "upos+feats": (3, 5)}


class TaggerError(Exception):
    """A usage or input error; ``status`` is the exit status."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


def _parser():
    parser = argparse.ArgumentParser(
        prog="structlearn tag",
        description="Train, evaluate and apply a sequence tagger on CoNLL-U files (the "
                    "CRFsuite tutorial features).")
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    train = sub.add_parser("train", help="train a tagger on a CoNLL-U corpus")
    train.add_argument("corpus", help="training corpus (.conllu or .conllu.gz)")
    train.add_argument("--model", required=True, metavar="M.joblib", help="model file to write")
    train.add_argument("--column", choices=COLUMNS, default="upos",
                       help="the column to predict (default: upos; upos+feats is the "
                            "morphological tag)")
    train.add_argument("--estimator", choices=("crf", "ssvm", "perceptron"), default="crf",
                       help="SequenceCRF (default), SequenceSSVM or SequencePerceptron")
    train.add_argument("--c1", type=float, default=0.0, help="crf: L1 penalty (default 0)")
    train.add_argument("--c2", type=float, default=1.0, help="crf: L2 penalty (default 1)")
    train.add_argument("--C", type=float, default=0.1, help="ssvm: regularization (default 0.1)")
    train.add_argument("--max-iter", type=int, default=None,
                       help="iterations / passes (default: the estimator's)")
    train.add_argument("--min-freq", type=int, default=1,
                       help="keep features seen in at least this many tokens (default 1)")
    train.add_argument("--quiet", action="store_true", help="no progress lines")
    ev = sub.add_parser("eval", help="token accuracy and per-label report on a corpus")
    ev.add_argument("model", help="model file written by 'tag train'")
    ev.add_argument("corpus", help="labeled corpus (.conllu or .conllu.gz)")
    pr = sub.add_parser("predict", help="write the corpus with the predicted column")
    pr.add_argument("model", help="model file written by 'tag train'")
    pr.add_argument("corpus", help="input corpus (.conllu or .conllu.gz)")
    pr.add_argument("--out", metavar="F", help="output file (default: standard output)")
    return parser


def _read(path, columns):
    from .datasets import read_conllu

    try:
        return read_conllu(path, columns=columns)
    except OSError as exc:
        raise TaggerError(f"{exc.filename or path}: {exc.strerror or exc}", 1) from None
    except ValueError as exc:
        msg = str(exc)
        raise TaggerError(msg if msg.startswith(str(path)) else f"{path}: {msg}", 1) from None


def _features(sentences):
    from .datasets import token_features

    return [token_features(s["form"]) for s in sentences]


def _train(args):
    from sklearn.pipeline import make_pipeline

    from .datasets import SequenceVectorizer
    from .estimators import SequenceCRF, SequencePerceptron, SequenceSSVM

    _check_writable(args.model)  # before minutes of training, not after
    sentences = _read(args.corpus, ("form", args.column))
    if not sentences:
        raise TaggerError(f"{args.corpus}: no sentences", 1)
    verbose = 0 if args.quiet else 1
    extra = {} if args.max_iter is None else {"max_iter": args.max_iter}
    if args.estimator == "crf":
        est = SequenceCRF(c1=args.c1, c2=args.c2, verbose=verbose, **extra)
    elif args.estimator == "ssvm":
        est = SequenceSSVM(C=args.C, verbose=verbose, random_state=0, **extra)
    else:
        est = SequencePerceptron(verbose=verbose, random_state=0, **extra)
    model = make_pipeline(SequenceVectorizer(min_freq=args.min_freq), est)
    started = time.perf_counter()
    try:
        model.fit(_features(sentences), [s[args.column] for s in sentences])
    except (ValueError, TypeError) as exc:
        raise TaggerError(str(exc), 2) from None
    import joblib

    joblib.dump({"format": MODEL_FORMAT, "version": 1, "column": args.column,
                 "model": model}, args.model)
    n_tokens = sum(len(s["form"]) for s in sentences)
    print(f"trained {args.estimator} on {len(sentences)} sentences ({n_tokens} tokens) in "
          f"{time.perf_counter() - started:.1f} s; model written to {args.model}",
          file=sys.stderr)
    return 0


def _check_writable(path):
    """TaggerError unless a model file can be written at ``path``."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise TaggerError(f"--model {path}: is a folder, not a file name", 1)
    if not os.path.isdir(folder):
        raise TaggerError(f"--model {path}: the folder {folder} does not exist", 1)
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise TaggerError(f"--model {path}: not writable", 1)


def _load(path):
    import joblib

    try:
        saved = joblib.load(path)
    except OSError as exc:
        raise TaggerError(f"{exc.filename or path}: {exc.strerror or exc}", 1) from None
    except Exception as exc:  # not a joblib/pickle file at all
        raise TaggerError(f"{path} is not a structlearn tagger model ({type(exc).__name__})",
                          1) from None
    if not isinstance(saved, dict) or saved.get("format") != MODEL_FORMAT:
        raise TaggerError(f"{path} is not a structlearn tagger model (write one with "
                          "'structlearn tag train')", 1)
    return saved


def _eval(args):
    from .metrics import flat_accuracy_score, flat_classification_report

    saved = _load(args.model)
    column = saved["column"]
    sentences = _read(args.corpus, ("form", column))
    if not sentences:
        raise TaggerError(f"{args.corpus}: no sentences", 1)
    pred = saved["model"].predict(_features(sentences))
    truth = [s[column] for s in sentences]
    if all(tag in ("_", "_|_") for sent in truth for tag in sent):
        raise TaggerError(f"{args.corpus}: the {column} column holds no tags (every value is "
                          "'_'): nothing to evaluate against", 1)
    print(f"token accuracy ({column}): {flat_accuracy_score(truth, pred):.4f} on "
          f"{len(sentences)} sentences")
    print(flat_classification_report(truth, pred, zero_division=0))
    return 0


def _predict(args):
    """Rewrite the predicted column of every token line; every other byte of
    the input (comments, multiword ranges, empty nodes, other fields) stays."""
    from .datasets.conllu import _read_text, token_id_kind

    saved = _load(args.model)
    column = saved["column"]
    sentences = _read(args.corpus, ("form",))  # validates the bytes and every line first
    text = _read_text(args.corpus)
    pred = saved["model"].predict(_features(sentences)) if sentences else []
    lines = text.split("\n")
    out, k, t = [], 0, 0  # sentence k, token t within it
    in_sentence = False
    for line in lines:
        body = line[:-1] if line.endswith("\r") else line
        fields = body.split("\t")
        if len(fields) == 10 and token_id_kind(fields[0]) == "word":
            label = str(pred[k][t])
            if len(_FIELDS[column]) == 1:
                fields[_FIELDS[column][0]] = label
            else:  # "UPOS|FEATS": UPOS holds no "|"
                upos, _, feats = label.partition("|")
                fields[3], fields[5] = upos, feats
            line = "\t".join(fields) + line[len(body):]
            t += 1
            in_sentence = True
        elif not body.strip() and in_sentence:
            k, t, in_sentence = k + 1, 0, False
        out.append(line)
    result = "\n".join(out)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(result)
    else:
        sys.stdout.write(result)
    return 0


def main(argv):
    """Run ``tag ACTION ...``; returns the exit status (raises TaggerError)."""
    args = _parser().parse_args(argv)
    return {"train": _train, "eval": _eval, "predict": _predict}[args.action](args)
