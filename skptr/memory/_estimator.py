"""NeuralStackTransducer: sequence transduction with a differentiable stack, queue or deque."""

from __future__ import annotations

from numbers import Integral, Real
from typing import ClassVar

from sklearn.utils._param_validation import Interval, StrOptions

from .. import _schema
from .._base import SequenceEstimatorBase, inference_method
from .._limits import MAX_COUNT, MAX_INITIALISATIONS, MAX_WIDTH
from .._sequences import check_token_sequences
from ..metrics import _checked_fine_accuracy
from . import _sizes
from ._codec import TransducerCodec
from ._curriculum import gate_noise_schedule, training_batches
from ._inference import MAX_TRACE_STEPS, checked_max_steps, decode, memory_traces
from ._network import TokenCrossentropy, TransducerNetwork
from ._search import network_settings, search

__all__ = ["NeuralStackTransducer"]


def _params_in_todays_terms(params):
    """Hyperparameters (or ``network_params_``) from a file or pickle written by an
    earlier version, in today's terms.

    ``population`` is dropped: it changed only how the initialisations were trained,
    and the network a fit kept with it is an ordinary one. ``gate_noise="auto"`` always
    stood for 1.0.
    """
    params = dict(params)
    params.pop("population", None)
    if isinstance(params.get("gate_noise"), str) and params["gate_noise"] == "auto":
        params["gate_noise"] = 1.0
    return params


class NeuralStackTransducer(SequenceEstimatorBase):
    """Recurrent transducer with a differentiable stack, queue or double-ended queue.

    A recurrent controller reads the source sequence, a separator, and then writes the
    target token by token until an end token. At every step it also pushes a vector
    onto an unbounded differentiable memory and pops from it, with strengths in
    [0, 1], and reads back a vector for the next step (Grefenstette, Hermann, Suleyman
    and Blunsom 2015). With the right memory the network learns algorithms such as
    reversing (stack) or copying (queue) its input, and then applies them to longer
    sequences than any seen in training: the memory grows with the input.

    Read more in the :ref:`User Guide <neural_memories>`, which recommends settings per
    kind of transduction (:ref:`memory_settings`).

    Parameters
    ----------
    memory : {"stack", "queue", "deque"} or None, default="stack"
        The memory: a stack for last-in-first-out transductions (reversal), a queue for
        first-in-first-out ones (copying), a deque for both ends or local reordering
        (bigram flipping, word order). ``None`` gives a plain recurrent transducer with
        everything else identical, as a baseline.
    cell : {"lstm", "gru", "rnn"}, default="lstm"
        The controller's recurrent cell.
    hidden_size : int, default=32
        Size of the controller's recurrent state; larger for large vocabularies.
    embedding_dim : int, default=16
        Size of the token embeddings.
    memory_width : int, default=32
        Width of the vectors pushed onto the memory.
    pop_bias : float, default=-1.0
        Initial bias of the pop strength before its sigmoid; negative, so that young
        controllers do not empty their memory.
    push_bias : float or "auto", default="auto"
        Initial bias of the push strength before its sigmoid. ``"auto"``: 0.0, but
        -1.5 at the deque's bottom end, so that a young deque can serve as a queue.
    state_bptt_steps : int, "auto" or None, default="auto"
        How many steps back gradients flow through the controller's own state
        (``None``: all; never truncated through the memory). Small values generalise
        to longer inputs; tasks in which the controller holds a token for a step
        (bigram flip) need more. ``"auto"``: ``None`` without a memory, else 0,
        alternating with ``None`` after a stalled initialisation (:ref:`memory_auto`).
    gate_noise : float, default=1.0
        Standard deviation of Gaussian noise on the push and pop logits in training
        only, which drives the controller to push and pop whole items; 0: none.
    gate_noise_start : float in [0, 1] or "auto", default="auto"
        Share of the epochs trained before the gate noise starts (0 for duplication
        with a queue, 0.6 for reversal with a stack; a warm start counts earlier
        fits). ``"auto"``: 0.6, then up to ``n_init`` more with 0 if none is exact.
    reset_cell_state : bool or "auto", default="auto"
        LSTM controllers only: start every step from a zero cell state, which keeps the
        controller from drifting on long inputs when its state gets no gradient.
        ``"auto"``: true for an LSTM when ``state_bptt_steps`` resolves to 0.
    snap_gates : bool or "auto", default="auto"
        Whether ``predict`` and ``memory_trace`` round the push and pop strengths to 0
        or 1, so that errors do not add up over long inputs (training never does).
        ``"auto"`` rounds unless soft strengths predict the held-out samples better.
    n_init : int, default=8
        Initialisations tried, as in ``KMeans``: with more than one, each trains on
        90 % of the samples, and the first exact on the rest is kept, else the best
        (:ref:`memory_auto`). 1: one quick model, or targets no memory expresses.
    curriculum : bool, default=True
        Train on the shortest sources first, admitting longer ones as the loss falls.
    handle_unknown : {"error", "ignore"}, default="error"
        An input token unseen in ``fit`` raises, or is mapped to an unknown token.
    max_output_length : int or None, default=None
        Most tokens ``predict`` produces per sequence; ``None``: ``2 * r * n + 10`` for
        ``n`` source tokens, ``r`` the largest target-to-source length ratio in ``fit``.
    epochs : int, default=20
        Passes over the training data, of ``ceil(n_samples / batch_size)`` steps each.
    batch_size : int, default=32
        Sequences per gradient step.
    learning_rate : float, default=0.01
        Step size of the Adam optimiser.
    {shared: clipnorm, validation_fraction, early_stopping, n_iter_no_change}
    random_state : int, RandomState instance or None, default=None
        Seeds initialisation, batching, the curriculum and the validation split; with
        an int, CPU runs are repeatable.
    {shared: verbose, warm_start}
    callbacks : list of keras.callbacks.Callback, default=None
        Extra Keras callbacks for training.
    {shared: devices}
    dtype_policy : {"float32", "mixed_bfloat16", "mixed_float16"} or None, default=None
        Keras dtype policy: the mixed ones compute in 16-bit floats, faster on GPUs
        (the memory stays float32). None: Keras' global policy when ``fit`` starts.

    Attributes
    ----------
    network_ : keras.Model
        The trained network (teacher-forced training graph).
    network_params_ : dict
        The hyperparameters the network was built with (and is rebuilt from).
    input_vocabulary_ : ndarray of shape (n_input_tokens,), dtype object
        Source tokens seen in ``fit``, sorted when they can be compared.
    output_vocabulary_ : ndarray of shape (n_output_tokens,), dtype object
        Target tokens seen in ``fit``.
    history_ : dict of list of float
        Per-epoch ``loss`` (cross-entropy per target token), ``val_loss`` with a
        validation split, and ``max_length``, the longest source the curriculum admits.
    n_iter_ : int
        Number of epochs trained.
    init_scores_ : ndarray of shape (n_initialisations_tried,)
        Held-out fine accuracy of each initialisation the last cold ``fit`` tried (NaN:
        abandoned as stalled); empty when it trained one.
    snap_gates_, state_bptt_steps_, gate_noise_start_ : bool, int or None, float
        The values of ``snap_gates``, ``state_bptt_steps`` and ``gate_noise_start``
        that the kept network was trained and is used with.

    See Also
    --------
    skptr.datasets.make_transduction : the paper's transduction tasks.
    skptr.metrics.fine_accuracy : the score of this estimator.

    Notes
    -----
    Training uses teacher forcing: the loss is the cross-entropy of each true target
    token and of the end token given everything before it. ``predict`` decodes
    greedily, a batch at once, in one compiled loop.

    Examples
    --------
    >>> from skptr import NeuralStackTransducer
    >>> from skptr.datasets import make_transduction
    >>> X, y = make_transduction("reversal", n_samples=200, min_length=1, max_length=4,
    ...                          vocab_size=2, random_state=0)
    >>> est = NeuralStackTransducer(epochs=2, random_state=0).fit(X, y)
    >>> est.predict(["abab"]).shape
    (1,)
    """

    _parameter_constraints: ClassVar[dict] = {
        **SequenceEstimatorBase._parameter_constraints,
        "memory": [StrOptions({"stack", "queue", "deque"}), None],
        "cell": [StrOptions({"lstm", "gru", "rnn"})],
        "hidden_size": [Interval(Integral, 1, MAX_WIDTH, closed="both")],
        "embedding_dim": [Interval(Integral, 1, MAX_WIDTH, closed="both")],
        "memory_width": [Interval(Integral, 1, MAX_WIDTH, closed="both")],
        "pop_bias": [Real],
        "push_bias": [Real, StrOptions({"auto"})],
        "state_bptt_steps": [
            Interval(Integral, 0, MAX_COUNT, closed="both"),
            StrOptions({"auto"}),
            None,
        ],
        "gate_noise": [Interval(Real, 0, None, closed="left")],
        "gate_noise_start": [Interval(Real, 0, 1, closed="both"), StrOptions({"auto"})],
        "reset_cell_state": ["boolean", StrOptions({"auto"})],
        "snap_gates": ["boolean", StrOptions({"auto"})],
        "n_init": [Interval(Integral, 1, MAX_INITIALISATIONS, closed="both")],
        "curriculum": ["boolean"],
        "handle_unknown": [StrOptions({"error", "ignore"})],
        "max_output_length": [Interval(Integral, 1, MAX_COUNT, closed="both"), None],
    }
    _network_params = (
        "memory",
        "cell",
        "hidden_size",
        "embedding_dim",
        "memory_width",
        "pop_bias",
        "push_bias",
        "gate_noise",
        "reset_cell_state",
        "dtype_policy",
    )
    _fitted_attributes: ClassVar[dict] = {
        **SequenceEstimatorBase._fitted_attributes,
        **TransducerCodec.FITTED_ATTRIBUTES,
        "init_scores_": _schema.SCORES,
        "snap_gates_": _schema.BOOL,
        "state_bptt_steps_": _schema.int_between_or_none(0, MAX_COUNT),
        "gate_noise_start_": _schema.float_between(0.0, 1.0),
    }
    _network_class = TransducerNetwork

    def __init__(
        self,
        *,
        memory="stack",
        cell="lstm",
        hidden_size=32,
        embedding_dim=16,
        memory_width=32,
        pop_bias=-1.0,
        push_bias="auto",
        state_bptt_steps="auto",
        gate_noise=1.0,
        gate_noise_start="auto",
        reset_cell_state="auto",
        snap_gates="auto",
        n_init=8,
        curriculum=True,
        handle_unknown="error",
        max_output_length=None,
        epochs=20,
        batch_size=32,
        learning_rate=0.01,
        clipnorm=1.0,
        validation_fraction=0.0,
        early_stopping=False,
        n_iter_no_change=5,
        random_state=None,
        verbose=0,
        warm_start=False,
        callbacks=None,
        devices=None,
        dtype_policy=None,
    ):
        self.memory = memory
        self.cell = cell
        self.hidden_size = hidden_size
        self.embedding_dim = embedding_dim
        self.memory_width = memory_width
        self.pop_bias = pop_bias
        self.push_bias = push_bias
        self.state_bptt_steps = state_bptt_steps
        self.gate_noise = gate_noise
        self.gate_noise_start = gate_noise_start
        self.reset_cell_state = reset_cell_state
        self.snap_gates = snap_gates
        self.n_init = n_init
        self.curriculum = curriculum
        self.handle_unknown = handle_unknown
        self.max_output_length = max_output_length
        super().__init__(
            epochs=epochs,
            batch_size=batch_size,
            learning_rate=learning_rate,
            clipnorm=clipnorm,
            validation_fraction=validation_fraction,
            early_stopping=early_stopping,
            n_iter_no_change=n_iter_no_change,
            random_state=random_state,
            verbose=verbose,
            warm_start=warm_start,
            callbacks=callbacks,
            devices=devices,
            dtype_policy=dtype_policy,
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = True
        tags.input_tags.three_d_array = False
        tags.input_tags.string = True
        tags.target_tags.single_output = False
        tags.target_tags.multi_output = True
        return tags

    _params_saved_before = staticmethod(_params_in_todays_terms)

    # ------------------------------------------------------------ base hooks
    def _prepare_training_data(self, X, y, reset):
        if not reset:
            return TransducerCodec.of(self).encode_training(X, y), {}
        codec, data = TransducerCodec.learn(X, y)
        return data, codec.fitted_attributes()

    def _build_network(self, seed):
        network = TransducerNetwork(
            n_input_tokens=len(self.input_vocabulary_),
            n_output_tokens=len(self.output_vocabulary_),
            seed=seed,
            **network_settings(self.get_params(), self.state_bptt_steps_),
        )
        network.build()
        return network

    def _loss(self):
        return TokenCrossentropy()

    _weight_count = _sizes.weight_count
    _activation_count = _sizes.activation_count
    _training_batches = training_batches
    _schedule_callbacks = gate_noise_schedule

    _jit_training = True
    _jit_inference = True

    def _fit_network(self, data, encoding, warm, seeds):
        if warm:
            return super()._fit_network(data, encoding, warm, seeds)
        view = self._with_fitted({**encoding, "network_params_": self._current_network_params()})
        return {**encoding, **search(view, data, seeds)}

    # ------------------------------------------------------------- inference
    def _sources(self, X):
        self._check_fitted()
        codec = TransducerCodec.of(self)
        return codec, *codec.sources(X, handle_unknown=self.handle_unknown)

    @inference_method
    def predict(self, X):
        """Transduce each input sequence.

        Parameters
        ----------
        X : sequence of token sequences
            Strings, lists or tuples of tokens, or 1-D arrays, of any lengths; a 2-D
            array is one sequence per row, a Series or one-column DataFrame one per
            row (a DataFrame of several columns is refused).

        Returns
        -------
        ndarray of shape (n_samples,), dtype object
            One output sequence per input, of the same kind as the training targets
            (strings for string targets, tuples for tuples, ...).
        """
        codec, _, source_ids = self._sources(X)
        return codec.decode(decode(self, codec, source_ids))

    @inference_method
    def score(self, X, y):
        """Fine accuracy of the predictions (Grefenstette et al. 2015).

        Parameters
        ----------
        X : sequence of token sequences
            Inputs.
        y : sequence of token sequences
            True outputs.

        Returns
        -------
        float
            Mean share of each target (end token included) predicted before the first
            error; see :func:`skptr.metrics.fine_accuracy`.
        """
        codec, _, source_ids = self._sources(X)
        targets, _ = check_token_sequences(y, "y")
        if len(targets) != len(source_ids):
            raise ValueError(
                f"X and y have different numbers of samples: {len(source_ids)} and {len(targets)}."
            )
        predictions = [codec.tokens(ids) for ids in decode(self, codec, source_ids)]
        return _checked_fine_accuracy(targets, predictions)

    @inference_method
    def memory_trace(self, X, max_steps=MAX_TRACE_STEPS):
        """How the controller uses its memory while transducing ``X``.

        The inputs are decoded greedily, as in ``predict``, and the controller is then
        run once more over each source, separator and predicted output to record its
        memory operations.

        Parameters
        ----------
        X : sequence of token sequences
            Inputs.
        max_steps : int, default=1024
            Longest trace recorded: a trace of ``n`` steps holds an ``n`` by ``n``
            strengths matrix, so longer inputs (or outputs) raise instead of using
            time and memory quadratic in their length.

        Returns
        -------
        list of dict
            One dict per sample with keys

            - ``"source"``, ``"output"``: the input tokens and the predicted tokens;
            - ``"push"``, ``"pop"``: arrays of shape (n_steps, n_ends), the strengths
              at every step (one column; a deque's: top, then bottom);
            - ``"strengths"``: array of shape (n_steps, n_slots), each slot's strength
              after every step, from the bottom (oldest) up; slot ``t`` holds the
              vector pushed at step ``t`` (a deque: the bottom pushes, latest first,
              then the top pushes);
            - ``"read"``: array of shape (n_steps, n_ends * memory_width), the read
              vector after every step.

            Steps are the source, the separator and the predicted tokens fed back:
            step ``len(source) + j`` produces output token ``j`` (the end token for
            ``j = len(output)``).

        Raises
        ------
        ValueError
            If the estimator has no memory (``memory=None``), or a sample's trace
            would exceed ``max_steps`` steps.
        """
        max_steps = checked_max_steps(max_steps)
        self._check_fitted()
        if self.network_params_["memory"] is None:
            raise ValueError("memory=None: this estimator has no memory to trace.")
        codec, sources, source_ids = self._sources(X)
        return memory_traces(self, codec, sources, source_ids, max_steps)
