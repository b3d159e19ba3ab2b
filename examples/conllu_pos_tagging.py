"""Part-of-speech tagging from a CoNLL-U treebank with a linear-chain CRF.

Sentences are read with :func:`~structlearn.datasets.read_conllu`, turned into
the usual sparse token features (word identity, suffixes, shape, neighbours)
and tagged with a :class:`~structlearn.estimators.SequenceCRF`. Without a file
argument a small built-in Portuguese sample is used; the Porttinari treebank
used in the benchmarks is a drop-in replacement
(``python examples/conllu_pos_tagging.py porttinari_pos.conllu.gz``).

Run: ``python examples/conllu_pos_tagging.py [FILE.conllu[.gz]] [--max-sentences N]``
"""

import argparse
import io
import time

from structlearn.datasets import read_conllu, token_features, vectorize_sequences
from structlearn.estimators import SequenceCRF

SAMPLE = """\
1\tO\to\tDET\t_\t_\t2\tdet\t_\t_
2\tgato\tgato\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tdorme\tdormir\tVERB\t_\t_\t0\troot\t_\t_
4\tno\tem\tADP\t_\t_\t5\tcase\t_\t_
5\tsofá\tsofá\tNOUN\t_\t_\t3\tobl\t_\t_
6\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_

1\tA\to\tDET\t_\t_\t2\tdet\t_\t_
2\tmenina\tmenina\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tlê\tler\tVERB\t_\t_\t0\troot\t_\t_
4\tum\tum\tDET\t_\t_\t5\tdet\t_\t_
5\tlivro\tlivro\tNOUN\t_\t_\t3\tobj\t_\t_
6\tnovo\tnovo\tADJ\t_\t_\t5\tamod\t_\t_
7\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_

1\tO\to\tDET\t_\t_\t2\tdet\t_\t_
2\tmenino\tmenino\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tcome\tcomer\tVERB\t_\t_\t0\troot\t_\t_
4\tuma\tum\tDET\t_\t_\t5\tdet\t_\t_
5\tmaçã\tmaçã\tNOUN\t_\t_\t3\tobj\t_\t_
6\tvermelha\tvermelho\tADJ\t_\t_\t5\tamod\t_\t_
7\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_

1\tA\to\tDET\t_\t_\t2\tdet\t_\t_
2\tgata\tgato\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tcome\tcomer\tVERB\t_\t_\t0\troot\t_\t_
4\tno\tem\tADP\t_\t_\t5\tcase\t_\t_
5\tjardim\tjardim\tNOUN\t_\t_\t3\tobl\t_\t_
6\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default=None, help="CoNLL-U file (optional)")
    parser.add_argument("--max-sentences", type=int, default=2000)
    args = parser.parse_args(argv)

    source = args.path if args.path is not None else io.StringIO(SAMPLE)
    sentences = read_conllu(source, columns=("form", "upos"))[: args.max_sentences]
    n_train = max(1, int(0.8 * len(sentences)))
    train, test = sentences[:n_train], sentences[n_train:] or sentences[:1]

    X_train, vectorizer = vectorize_sequences([token_features(s["form"]) for s in train])
    X_test, _ = vectorize_sequences([token_features(s["form"]) for s in test], vectorizer)
    y_train = [s["upos"] for s in train]
    y_test = [s["upos"] for s in test]

    start = time.perf_counter()
    crf = SequenceCRF(c2=1.0, max_iter=200).fit(X_train, y_train)
    fit_s = time.perf_counter() - start
    print(f"{len(train)} training sentences, {len(vectorizer.feature_names_)} features, "
          f"{len(crf.classes_)} tags")
    print(f"token accuracy on {len(test)} held-out sentences: {crf.score(X_test, y_test):.4f}  "
          f"(fit {fit_s:.2f} s)")
    tagged = zip(test[0]["form"], crf.predict(X_test[:1])[0])
    print("first held-out sentence:", " ".join(f"{word}/{tag}" for word, tag in tagged))


if __name__ == "__main__":
    main()
