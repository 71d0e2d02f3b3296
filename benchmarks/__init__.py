"""Speed and quality benchmarks of skptr; run them with ``python -m benchmarks``.

Sections
--------
speed
    Throughput of :class:`~skptr.PointerNetworkOrderer` against a plain Keras seq2seq
    reference, of ``NeuralStackTransducer`` per memory and source length, and the
    overhead of the scikit-learn layer over a direct ``model.fit``.
quality
    The tasks of the papers (sorting, convex hulls, TSP, transduction) with their
    metrics and label formats, each row stating its training budget.
report
    Plots, the markdown report and the documentation page, built from the saved
    results.
"""
