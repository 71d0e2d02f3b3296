"""Command line entry point: ``python -m skptr demo``."""

from __future__ import annotations

import argparse
import sys
import time


def _sorting_demo(verbose):
    from . import PointerNetworkOrderer
    from .datasets import make_sorting
    from .metrics import position_accuracy, sequence_accuracy

    X, y = make_sorting(n_samples=10_000, n_steps=8, random_state=0)
    X_train, y_train, X_test, y_test = X[:9000], y[:9000], X[9000:], y[9000:]
    print("Pointer network on the seed sorting task")
    print("  8 integers in 0..9 per sequence, sorted descending; 9000 train / 1000 held out")
    estimator = PointerNetworkOrderer(hidden_size=64, epochs=10, random_state=0, verbose=verbose)
    start = time.perf_counter()
    estimator.fit(X_train, y_train)
    fit_seconds = time.perf_counter() - start
    start = time.perf_counter()
    predicted = estimator.predict(X_test)
    predict_seconds = time.perf_counter() - start
    throughput = len(X_train) * estimator.n_iter_ / fit_seconds
    print(f"  trained {estimator.n_iter_} epochs in {fit_seconds:.1f} s ({throughput:.0f} seq/s)")
    print(f"  predicted {len(X_test)} sequences in {predict_seconds:.2f} s")
    print(f"  held-out position accuracy: {position_accuracy(y_test, predicted, X=X_test):.4f}")
    print(f"  held-out sequence accuracy: {sequence_accuracy(y_test, predicted, X=X_test):.4f}")
    print(
        f"  example: {X_test[0].astype(int).tolist()} -> "
        f"{X_test[0][predicted[0]].astype(int).tolist()}"
    )


def demo(verbose=0):
    """Train the built-in demos and print their held-out results."""
    from .memory._demo import run_reversal_demo

    start = time.perf_counter()
    _sorting_demo(verbose)
    print()
    run_reversal_demo(verbose)
    print(f"Total time: {time.perf_counter() - start:.1f} s")


def main(argv=None):
    """Parse the command line and run the requested command."""
    parser = argparse.ArgumentParser(prog="python -m skptr", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo_parser = commands.add_parser("demo", help="train the built-in demos and print results")
    demo_parser.add_argument("--verbose", type=int, default=0, help="Keras verbosity (0, 1, 2)")
    arguments = parser.parse_args(argv)
    if arguments.command == "demo":
        demo(verbose=arguments.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())
