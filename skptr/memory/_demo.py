"""The neural stack part of ``python -m skptr demo``."""

from __future__ import annotations

import time

__all__ = ["run_reversal_demo"]


def run_reversal_demo(verbose=0):
    """Train a stack transducer and a memoryless baseline on reversal; print results.

    Both are trained on 2000 reversals of 2-symbol strings of lengths 1-10 and
    evaluated on 500 strings of lengths 11-20, longer than any seen in training. The
    stack transducer uses the default hyperparameters; the baseline is the same
    network with ``memory=None``, trained for fewer epochs (it stops improving early)
    and from a single initialisation.

    Parameters
    ----------
    verbose : int, default=0
        Keras verbosity during training (0, 1 or 2).

    Returns
    -------
    dict
        Fine and coarse accuracy and fit time of each model, keyed ``"stack"`` and
        ``"baseline"``.
    """
    from ..datasets import make_transduction
    from ..metrics import coarse_accuracy, fine_accuracy
    from ._estimator import NeuralStackTransducer

    X, y = make_transduction(
        "reversal", n_samples=2000, min_length=1, max_length=10, vocab_size=2, random_state=0
    )
    X_long, y_long = make_transduction(
        "reversal", n_samples=500, min_length=11, max_length=20, vocab_size=2, random_state=1
    )
    print("Neural stack transducer on sequence reversal (Grefenstette et al. 2015)")
    print("  2-symbol strings; trained on lengths 1-10, tested on lengths 11-20")
    models = {
        "stack": NeuralStackTransducer(memory="stack", random_state=0, verbose=verbose),
        "baseline": NeuralStackTransducer(
            memory=None, epochs=8, n_init=1, random_state=0, verbose=verbose
        ),
    }
    results = {}
    for name, model in models.items():
        start = time.perf_counter()
        model.fit(X, y)
        fit_seconds = time.perf_counter() - start
        start = time.perf_counter()
        predicted = model.predict(X_long)
        predict_seconds = time.perf_counter() - start
        results[name] = {
            "fine": fine_accuracy(y_long, predicted),
            "coarse": coarse_accuracy(y_long, predicted),
            "fit_seconds": fit_seconds,
        }
        label = "LSTM + stack  " if name == "stack" else "LSTM, no memory"
        throughput = len(X) * model.n_iter_ / fit_seconds
        print(
            f"  {label}: fine {results[name]['fine']:.3f}, coarse "
            f"{results[name]['coarse']:.3f} (fit {fit_seconds:.1f} s, {model.n_iter_} epochs, "
            f"{throughput:.0f} seq/s; predict {predict_seconds:.1f} s)"
        )
    example = X_long[0]
    print(f"  example: {example} -> {models['stack'].predict([example])[0]}")
    return results
