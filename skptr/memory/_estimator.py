"""NeuralStackTransducer: sequence transduction with a differentiable stack, queue or deque."""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import ClassVar

import keras
import numpy as np
from keras import ops
from sklearn.utils._param_validation import Interval, StrOptions

from .. import _schema
from .._backend import NetworkWrapper, quiet_retracing
from .._base import SequenceEstimatorBase
from .._batches import power_of_two_at_least
from .._limits import MAX_COUNT, MAX_INITIALISATIONS, MAX_WIDTH
from .._sequences import check_token_sequences
from ..metrics import _checked_fine_accuracy
from ._codec import TransducerCodec
from ._curriculum import CurriculumBatches, GateNoiseFrom
from ._memories import unpadded_slots
from ._network import GreedyDecoder, TokenCrossentropy, TransducerNetwork
from ._search import network_settings, search

__all__ = ["NeuralStackTransducer"]

# ``memory_trace`` records a (steps, slots) strengths matrix per sample; longer traces
# are refused unless asked for.
_MAX_TRACE_STEPS = 1024


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
        Initial bias of the pop strength before its sigmoid (the paper's appendix B
        sets it to -1 so that young controllers do not empty their memory).
    push_bias : float or "auto", default="auto"
        Initial bias of the push strength before its sigmoid, at every end of the
        memory. ``"auto"`` is 0.0, except at the deque's bottom end, which starts at
        -1.5: with both ends pushing at strength 0.5 each end reads back only what it
        pushed itself, and a young deque behaves as two stacks that rarely learn to
        serve as a queue.
    state_bptt_steps : int, "auto" or None, default="auto"
        How many steps back gradients flow through the controller's own recurrent
        state; gradients through the memory are never truncated. Small values leave
        the memory as the only way to carry information far, which makes the network
        generalise to longer inputs instead of memorising short ones in its state.
        ``None`` is full backpropagation through time. ``"auto"`` is ``None`` without a
        memory; with one, it is 0 until an initialisation of ``n_init`` stalls, and the
        following ones then alternate between ``None`` and 0. Set a longer truncation
        for tasks in which the controller must hold a token for a step, such as bigram
        flip, at the cost of generalising less far (see :ref:`memory_auto`).
    gate_noise : float, default=1.0
        Standard deviation of Gaussian noise added to the push and pop logits in
        training (never in ``predict``), from the epoch set by ``gate_noise_start``.
        Noisy strengths carry information only once saturated, so the noise drives the
        controller to push and pop whole items, which is what lets ``snap_gates`` round
        them without errors on longer inputs. 0 switches it off.
    gate_noise_start : float in [0, 1] or "auto", default="auto"
        Share of the epochs trained without gate noise before it is switched on. Some
        tasks are learned only with noise from the first epoch (duplicating a string
        with the queue: 0), others best with noise switched on once the controller has
        learned the task with soft strengths (reversal with the stack: 0.6). ``"auto"``
        tries both: the ``n_init`` initialisations start the noise after 0.6 of the
        epochs; if none of them predicts the held-out samples exactly, up to ``n_init``
        more start it from the first epoch (with a memory and ``gate_noise`` above 0).
        ``gate_noise_start_`` records the kept network's. A warm start adds the noise
        from the epoch this share of ``epochs`` points to, counting the epochs of the
        earlier fits.
    reset_cell_state : bool or "auto", default="auto"
        LSTM controllers only: start every step from a zero cell state, so that the
        previous step's output is the controller's only recurrent state. With
        ``state_bptt_steps=0`` no gradient trains the cell state to carry anything, and
        on inputs longer than the training ones it drifts until the controller pushes
        or pops at the wrong step. ``"auto"`` is true when ``state_bptt_steps``
        resolves to 0 (the default with a memory) and the cell is an LSTM.
    snap_gates : bool or "auto", default="auto"
        Whether ``predict`` and ``memory_trace`` round the push and pop strengths to 0
        or 1, so that the memory holds and returns whole items and small errors do not
        add up over inputs longer than the training ones; a controller that encodes
        information in soft strengths fails when they are rounded. ``"auto"`` rounds,
        unless no initialisation of ``n_init`` predicts the held-out samples exactly
        with rounded strengths and the best held-out score is reached with soft ones.
        Training always uses the soft strengths.
    n_init : int, default=8
        Number of initialisations tried, as in scikit-learn's ``KMeans`` (with
        ``gate_noise_start="auto"``, up to ``n_init`` more with another noise start
        when none of them is exact). With more than one, 10 % of the training samples
        are held out; each initialisation is trained on the rest and scored on them
        (fine accuracy of greedy predictions, with the rounding of ``snap_gates``).
        Training stops at the first initialisation that predicts every held-out sample
        exactly, otherwise the best one is kept. An initialisation whose training
        loss, after its first 6 epochs, is still above 0.05 per token and above half
        of its first epoch's loss has stalled and is abandoned; when every one stalls,
        the one with the lowest early loss is trained fully and kept. Use
        ``n_init=1`` for one quick model, or for targets that no memory expresses
        exactly (see :ref:`memory_auto`).
    curriculum : bool, default=True
        Start training on the shortest sources (about a quarter of the length range)
        and admit longer ones, in a few stages, whenever the training loss per token
        drops below 0.05 (or after 4 epochs at a stage).
    handle_unknown : {"error", "ignore"}, default="error"
        What ``predict`` does with an input token not seen in ``fit``: raise a
        ``ValueError`` naming the sample and the token, or map it to a reserved
        unknown token.
    max_output_length : int or None, default=None
        Maximum number of tokens ``predict`` produces per sequence. ``None`` allows
        ``2 * r * n + 10`` tokens for a source of ``n`` tokens, ``r`` being the largest
        target-to-source length ratio seen in ``fit``.
    epochs : int, default=20
        Passes over the training data (an epoch is ``ceil(n_samples / batch_size)``
        gradient steps, also during a curriculum).
    batch_size : int, default=32
        Sequences per gradient step.
    learning_rate : float, default=0.01
        Step size of the Adam optimiser.
    clipnorm : float or None, default=1.0
        Maximum gradient norm.
    validation_fraction : float, default=0.0
        Share of the training data held out to report ``val_loss`` each epoch.
    early_stopping : bool, default=False
        Stop when the monitored loss stops improving and restore the best weights.
    n_iter_no_change : int, default=5
        Patience of early stopping, in epochs.
    random_state : int, RandomState instance or None, default=None
        Seeds initialisation, batching, the curriculum and the validation split; with
        an int, CPU runs are repeatable.
    verbose : int, default=0
        0 is silent, 1 shows a progress bar, 2 prints one line per epoch.
    warm_start : bool, default=False
        Continue training the existing network on the next ``fit``.
    callbacks : list of keras.callbacks.Callback, default=None
        Extra Keras callbacks for training. On TensorFlow, training runs 32 steps per
        call into the compiled function unless one of these callbacks has per-batch
        hooks (``on_train_batch_end`` ...), which then see every batch.
    devices : None, "all", keras.distribution.DataParallel or tf.distribute.Strategy, \
            default=None
        Where training and inference run. None: one device, as Keras places it.
        ``"all"``: data-parallel over every device of the backend (its GPUs, or its CPU
        devices if it has no GPU; those of every process of a JAX multi-process
        runtime). A ``keras.distribution.DataParallel`` (JAX)
        or a ``tf.distribute`` ``MirroredStrategy`` or ``OneDeviceStrategy``
        (TensorFlow) over the devices of this host is used as is; on JAX, a
        distribution may span the processes (hosts) of a multi-process runtime, each
        of which runs the same ``fit`` with the same integer ``random_state``. Every
        batch is split over the replicas, so ``batch_size`` (a multiple of their
        number) stays the global batch size. Pickles and files store an object as
        None. See the user guide's page "Scaling out".
    dtype_policy : {"float32", "mixed_bfloat16", "mixed_float16"} or None, default=None
        The Keras dtype policy of the network: ``"mixed_bfloat16"`` and
        ``"mixed_float16"`` compute in 16-bit floats with float32 weights (and loss
        scaling for float16), which GPUs run faster; the pointer scores and the
        memory are float32 under every policy. None: Keras' global policy
        (``keras.config.dtype_policy()``) when ``fit`` starts.

    Attributes
    ----------
    network_ : keras.Model
        The trained network (teacher-forced training graph).
    network_params_ : dict
        The hyperparameters the network was built with (those that shape it), which
        pickles and :func:`skptr.load` rebuild it from; ``set_params`` after ``fit``
        changes only the next fit.
    input_vocabulary_ : ndarray of shape (n_input_tokens,), dtype object
        Source tokens seen in ``fit``, sorted when they can be compared.
    output_vocabulary_ : ndarray of shape (n_output_tokens,), dtype object
        Target tokens seen in ``fit``.
    history_ : dict of list of float
        Per-epoch ``loss`` (mean cross-entropy per target token, end token included),
        ``val_loss`` with a validation split, and ``max_length``, the longest source
        length admitted by the curriculum.
    n_iter_ : int
        Number of epochs trained.
    init_scores_ : ndarray of shape (n_initialisations_tried,)
        Held-out fine accuracy of each initialisation tried by the last ``fit``, with
        rounded strengths unless ``snap_gates=False``, in training order (up to
        ``n_init`` of them, or twice as many with ``gate_noise_start="auto"`` and a
        memory), NaN for those abandoned because they stalled; empty when that fit
        trained only one (``n_init=1``, or fewer than 10 samples). A warm start keeps
        the scores of the fit it continues.
    snap_gates_ : bool
        Whether ``predict`` rounds the push and pop strengths (see ``snap_gates``).
    state_bptt_steps_ : int or None
        The truncation of backpropagation through the controller's state that the
        kept network was trained with (see ``state_bptt_steps``).
    gate_noise_start_ : float
        The share of the epochs the kept network was trained without gate noise (see
        ``gate_noise_start``).

    See Also
    --------
    skptr.datasets.make_transduction : the paper's transduction tasks.
    skptr.metrics.fine_accuracy : the score of this estimator.

    Notes
    -----
    Training uses teacher forcing: the network reads the source, the separator and the
    true target, and the loss is the cross-entropy of each target token and of the end
    token given everything before it (source tokens carry no loss). ``predict`` decodes
    greedily, all sequences of a batch at once, in one compiled loop that stops when
    every sequence has produced its end token.

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
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.clipnorm = clipnorm
        self.validation_fraction = validation_fraction
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.callbacks = callbacks
        self.devices = devices
        self.dtype_policy = dtype_policy

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = True
        tags.input_tags.three_d_array = False
        tags.input_tags.string = True
        tags.target_tags.single_output = False
        tags.target_tags.multi_output = True
        return tags

    @classmethod
    def _params_saved_before(cls, params):
        """Hyperparameters (or ``network_params_``) from a file or pickle written by an
        earlier version, in today's terms.

        ``population`` is dropped: it changed only how the initialisations were
        trained, and the network a fit kept with it is an ordinary one.
        ``gate_noise="auto"`` always stood for 1.0.
        """
        params = dict(params)
        params.pop("population", None)
        if isinstance(params.get("gate_noise"), str) and params["gate_noise"] == "auto":
            params["gate_noise"] = 1.0
        return params

    def __setstate__(self, state):
        state = self._params_saved_before(state)
        if isinstance(state.get("network_params_"), dict):
            state["network_params_"] = self._params_saved_before(state["network_params_"])
        super().__setstate__(state)

    # ------------------------------------------------------------ base hooks
    def _prepare_training_data(self, X, y, reset):
        if not reset:
            return TransducerCodec.of(self).encode_training(X, y), {}
        codec, data = TransducerCodec.learn(X, y)
        return data, codec.fitted_attributes()

    def _build_network(self, seed, unroll_steps):
        network = TransducerNetwork(
            n_input_tokens=len(self.input_vocabulary_),
            n_output_tokens=len(self.output_vocabulary_),
            memory=self.memory,
            cell=self.cell,
            hidden_size=self.hidden_size,
            embedding_dim=self.embedding_dim,
            memory_width=self.memory_width,
            pop_bias=self.pop_bias,
            state_bptt_steps=self.state_bptt_steps_,
            seed=seed,
            **network_settings(self.get_params(), self.state_bptt_steps_),
        )
        network.build()
        return network

    def _loss(self):
        return TokenCrossentropy()

    def _memory_ends(self):
        return {None: 0, "stack": 1, "queue": 1, "deque": 2}[self.memory]

    def _weight_count(self):
        hidden, ends, width = self.hidden_size, self._memory_ends(), self.memory_width
        n_tokens = len(self.input_vocabulary_) + len(self.output_vocabulary_) + 4
        controller = 4 * hidden * (self.embedding_dim + ends * width + hidden + 2)
        heads = hidden * ends * (width + 2)
        readout = (hidden + 1) * (len(self.output_vocabulary_) + 1)
        return n_tokens * self.embedding_dim + controller + heads + readout

    def _step_count(self, n_steps):
        """Numbers one sequence holds per step: the controller's activations, the
        vectors pushed and, where every step's strengths are kept (training, traces),
        the strength of each of the ``n_steps`` slots (1: only the current ones)."""
        ends = self._memory_ends()
        return (
            8 * self.hidden_size
            + self.embedding_dim
            + 3 * ends * self.memory_width
            + (2 * n_steps * ends)
        )

    def _activation_count(self, n_rows, n_steps):
        return 2 * n_rows * n_steps * self._step_count(n_steps)

    _jit_training = True
    _jit_inference = True

    def _fit_network(self, data, encoding, warm, seeds):
        if warm:
            return super()._fit_network(data, encoding, warm, seeds)
        view = self._with_fitted({**encoding, "network_params_": self._current_network_params()})
        kept, init_scores = search(view, data, seeds)
        return {
            **encoding,
            "network_params_": kept.network_params,
            "network_": kept.network,
            "history_": kept.history,
            "n_iter_": len(kept.history.get("loss", [])),
            "state_bptt_steps_": kept.run.state_bptt_steps,
            "gate_noise_start_": kept.run.gate_noise_start,
            "snap_gates_": kept.snap,
            "init_scores_": init_scores,
        }

    def _schedule_callbacks(self, network, epochs_done):
        if getattr(network.controller, "gate_noise_scale", None) is None:
            return []
        first_noisy = math.ceil(self.gate_noise_start_ * self.epochs) - epochs_done
        return [GateNoiseFrom(max(first_noisy, 0))]

    def _training_batches(self, data, batch_size, seed):
        return CurriculumBatches(
            data,
            batch_size,
            seed,
            curriculum=self.curriculum,
            extents=TransducerCodec.training_extents(data),
        )

    # ------------------------------------------------------------- inference
    def _sources(self, X):
        self._check_fitted()
        codec = TransducerCodec.of(self)
        return codec, *codec.sources(X, handle_unknown=self.handle_unknown)

    def _decode(self, codec, source_ids):
        """Greedy decoding; returns the output token ids of each sample.

        Sources are decoded in batches of similar lengths, padded to a power-of-two
        number of rows and of steps, so that the compiled decoder is reused.
        """
        snap = self.snap_gates_
        lengths = np.array([len(s) for s in source_ids])
        order = np.argsort(lengths, kind="stable")
        chunk = self._predict_batch_size()
        view = self._as_fitted()
        longest = codec.output_limit(lengths.max(initial=0), self.max_output_length)
        n_steps = power_of_two_at_least(lengths.max(initial=0) + 1) + power_of_two_at_least(
            longest + 1
        )
        view._check_memory(
            "decoding",
            min(chunk, len(source_ids)) * n_steps * view._step_count(1),
            longest_stream=n_steps,
            max_output_length=self.max_output_length,
        )
        outputs = [None] * len(source_ids)
        for start in range(0, len(order), chunk):
            batch = order[start : start + chunk]
            n_rows = self._inference_rows(len(batch), chunk)
            sources = codec.left_padded([source_ids[i] for i in batch], n_rows)
            limit = codec.output_limit(lengths[batch].max(), self.max_output_length)
            canvas = np.zeros((n_rows, power_of_two_at_least(limit + 1)), dtype=np.int32)
            decoder = self._inference_model(
                ("decoder", snap),
                lambda network: GreedyDecoder(network, snap_gates=snap),
                n_rows,
                sources.shape[1] + canvas.shape[1],
            )
            with quiet_retracing():
                classes = self._predict_on_batch(
                    decoder, {"source": sources, "canvas": canvas}, n_rows
                )
            classes = np.asarray(classes)
            for row, i in enumerate(batch):
                outputs[i] = codec.output_ids(classes[row], limit)
        return outputs

    def predict(self, X):
        """Transduce each input sequence.

        Parameters
        ----------
        X : sequence of token sequences
            Strings, lists or tuples of tokens, or 1-D arrays, of any lengths.

        Returns
        -------
        ndarray of shape (n_samples,), dtype object
            One output sequence per input, of the same kind as the training targets
            (strings for string targets, tuples for tuples, ...).
        """
        codec, _, source_ids = self._sources(X)
        return codec.decode(self._decode(codec, source_ids))

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
        predictions = [codec.tokens(ids) for ids in self._decode(codec, source_ids)]
        return _checked_fine_accuracy(targets, predictions)

    def memory_trace(self, X, max_steps=_MAX_TRACE_STEPS):
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
            - ``"push"``, ``"pop"``: arrays of shape (n_steps, n_ends), the push and pop
              strengths at every step (one column for a stack or queue; top then bottom
              for a deque);
            - ``"strengths"``: array of shape (n_steps, n_slots), the strength of every
              memory slot after every step, slots ordered from the bottom (oldest end)
              to the top; slot ``t`` holds the vector pushed at step ``t`` (for the
              deque, the first half holds the bottom pushes, latest first, the second
              half the top pushes);
            - ``"read"``: array of shape (n_steps, n_ends * memory_width), the read
              vector after every step.

            Steps are the source tokens, the separator, and the predicted tokens fed
            back: step ``len(source) + j`` produces output token ``j`` (the end token
            for ``j = len(output)``), so ``n_steps = len(source) + len(output) + 1``.

        Raises
        ------
        ValueError
            If the estimator has no memory (``memory=None``), or a sample's trace
            would exceed ``max_steps`` steps.
        """
        max_steps = _checked_max_steps(max_steps)
        self._check_fitted()
        memory = self.network_params_["memory"]
        if memory is None:
            raise ValueError("memory=None: this estimator has no memory to trace.")
        codec, sources, source_ids = self._sources(X)
        self._check_trace_length([len(s) + 1 for s in source_ids], max_steps, "input")
        output_ids = self._decode(codec, source_ids)
        streams = [codec.trace_stream(s, o) for s, o in zip(source_ids, output_ids, strict=True)]
        self._check_trace_length([len(s) for s in streams], max_steps, "input and output")
        n_rows = self._placement().inference.rows(len(streams))
        padded = codec.left_padded(streams, n_rows)
        view = self._as_fitted()
        view._check_memory(
            "the traces",
            len(streams) * padded.shape[1] * view._step_count(padded.shape[1]),
            longest_trace=padded.shape[1],
        )
        with quiet_retracing():
            snap = self.snap_gates_
            tracer = self._inference_model(
                ("traces", snap), lambda network: _Traces(network, snap_gates=snap)
            )
            traces = self._predict_on_batch(tracer, padded, n_rows)
        traces = {key: np.asarray(value) for key, value in traces.items()}
        n_steps = padded.shape[1]
        results = []
        for i, stream in enumerate(streams):
            first = n_steps - len(stream)
            strengths = unpadded_slots(traces["strengths"][i, first:], memory, first)
            results.append(
                {
                    "source": sources[i],
                    "output": codec.tokens(output_ids[i]),
                    "push": traces["push"][i, first:],
                    "pop": traces["pop"][i, first:],
                    "strengths": strengths,
                    "read": traces["read"][i, first:],
                }
            )
        return results

    @staticmethod
    def _check_trace_length(n_steps, max_steps, what):
        too_long = np.flatnonzero(np.asarray(n_steps) > max_steps)
        if too_long.size:
            i = int(too_long[0])
            raise ValueError(
                f"X[{i}]: its {what} make a trace of {n_steps[i]} steps, more than "
                f"max_steps={max_steps} (a trace holds a steps-by-steps strengths matrix); "
                "trace a shorter input or pass a larger max_steps."
            )


def _checked_max_steps(max_steps):
    """``memory_trace``'s ``max_steps``, refused unless it is an int >= 1."""
    if isinstance(max_steps, bool | np.bool_) or not isinstance(max_steps, Integral):
        raise TypeError(
            f"max_steps must be an int >= 1, got {max_steps!r} (a {type(max_steps).__name__})."
        )
    if max_steps < 1:
        raise ValueError(f"max_steps must be an int >= 1, got {max_steps!r}.")
    return int(max_steps)


@keras.saving.register_keras_serializable(package="skptr")
class _Traces(NetworkWrapper):
    """Wraps :meth:`TransducerNetwork.traces` so that ``predict_on_batch`` compiles it."""

    def __init__(self, network, snap_gates=False, **kwargs):
        kwargs.setdefault("name", "memory_traces")
        super().__init__(network, **kwargs)
        self.snap_gates = bool(snap_gates)

    def call(self, stream):
        traces = self.network.traces(ops.cast(stream, "int32"), snap=self.snap_gates)
        return {key: traces[key] for key in ("push", "pop", "strengths", "read")}
