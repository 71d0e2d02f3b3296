"""PointerNetworkOrderer: a scikit-learn estimator that learns to order its input."""

from __future__ import annotations

from numbers import Integral, Real
from typing import ClassVar

import keras
import numpy as np
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    StrOptions,
    validate_parameter_constraints,
)

from .._base import SequenceEstimatorBase, inference_method
from .._limits import MAX_DEPTH, MAX_WIDTH
from .._sequences import check_orderings
from ..costs import BUILT_IN_COSTS
from ..metrics import _checked_position_accuracy
from . import _sizes
from ._candidates import DECODE_METHODS, decode_sequences
from ._codec import PointerCodec, feature_scale, given_form
from ._costs import call_cost
from ._cycles import CYCLE_KINDS
from ._layers import ENCODERS, PointerNetwork, masked_pointer_crossentropy
from ._reinforce import ROLLOUTS, cost_training_model
from ._symmetries import check_augment

__all__ = ["PointerNetworkOrderer"]


def _params_in_todays_terms(params):
    """Hyperparameters (or ``network_params_``) from a file or pickle written by an
    earlier version, in today's terms.

    ``symmetries`` (1 or 8) became ``augment``. Before ``rollouts`` existed, a fit from
    a cost with ``cycle`` set rolled out one ordering from every start element, and
    greedy decoding with a cost decoded from every start element.
    """
    params = dict(params)
    if "symmetries" in params:
        params["augment"] = params.pop("symmetries") == 8
    if "rollouts" not in params and params.get("cost") is not None:
        if params.get("cycle") is not None:
            params.update(rollouts="multistart", n_rollouts=None)
        if params.get("decode", "greedy") == "greedy":
            params["decode"] = "multistart"
    return params


class PointerNetworkOrderer(SequenceEstimatorBase):
    """Pointer network that learns to output an ordering of its own input.

    An encoder reads the input sequence; a recurrent decoder then points, step by
    step, at the input position that comes next in the output (Vinyals, Fortunato and
    Jaitly 2015). The softmax of the attention scores over input positions *is* the
    output distribution, so the model works for any input length. Positions already
    chosen and padding are excluded at every step, so predictions are always valid
    orderings. Targets may be full permutations (sorting, TSP tours) or ordered subsets
    (convex hull vertices); for subsets the network also learns when to stop.

    Read more in the :ref:`User Guide <pointer_networks>`, which recommends settings
    per kind of problem.

    Parameters
    ----------
    hidden_size : int, default=128
        Units of each recurrent layer (per direction) and of the element embedding.
        32-64 suffice to sort a few numbers; 128-256 suit convex hulls and tours.
    cell : {"lstm", "gru", "rnn"}, default="lstm"
        Recurrent cell of encoder and decoder. ``"gru"`` is a little faster;
        ``"rnn"`` only suits very short sequences.
    bidirectional : bool, default=True
        Whether the recurrent encoder reads the input in both directions. Set it to
        False when training under a time budget: a step then costs about half as much
        (see :ref:`pointer_time_budget`). Ignored by ``encoder="attention"``.
    num_layers : int, default=1
        Number of stacked recurrent layers in encoder and decoder (with
        ``encoder="attention"``: of self-attention blocks in the encoder, and of
        recurrent layers in the decoder; 2 is the recommended depth there).
    decoder_layers : int, default=None
        Number of recurrent layers in the decoder, at most ``num_layers``; None gives
        it ``num_layers``. Each layer adds to the cost of every decoding step, and
        learning from a cost decodes every element of every sampled ordering: set 1
        with ``encoder="attention"`` there.
    encoder : {"recurrent", "attention"}, default="recurrent"
        How the input is read: ``"recurrent"`` runs recurrent layers over it in order
        (use it where the order carries meaning); ``"attention"`` runs ``num_layers``
        self-attention blocks without positions (Kool et al. 2019), so that only the
        set of elements matters (use it for points of a hull or cities of a tour; see
        :ref:`pointer_settings`).
    n_heads : int, default=8
        Attention heads per block of the attention encoder, each
        ``max(1, hidden_size // n_heads)`` wide.
    attention : {"additive", "dot", "general"}, default="additive"
        Pointer scorer: ``vᵀ tanh(W1 e_j + W2 d_i)``, ``d_iᵀ e_j`` or ``d_iᵀ W e_j``.
        ``"general"`` has cheaper epochs: choose it for many short epochs (tours under
        a CPU time budget); ``"additive"`` learns more per epoch (hulls, long
        training; see :ref:`pointer_networks`).
    n_glimpses : int, default=0
        Glimpses before each pointing step (Bello et al. 2016): the pointer's query
        becomes an attention-weighted mean of the encodings still allowed, at about
        one more attention per step. Keep 0 unless a comparison on your data says
        otherwise (see :ref:`pointer_settings`).
    logit_clip : float or None, default=None
        Bounds the pointer's logits to ``[-logit_clip, logit_clip]`` with a tanh (after
        dividing ``"dot"`` and ``"general"`` scores by the square root of their
        width), as Bello et al. (2016) and Kool et al. (2019) do when learning from a
        cost: the sampled rollouts keep exploring instead of settling early on a few
        orderings. Use 10 with a ``cost`` (see :ref:`pointer_cost`); None leaves the
        logits unbounded, as for imitation.
    dropout : float, default=0.0
        Dropout on the embedding, between layers and on decoder outputs (training
        only); 0.1-0.3 when the training set is small.
    decode : {"greedy", "sample", "multistart", "beam"}, default="greedy"
        Decoding used by ``predict``, ``predict_proba`` and ``score``; switch it after
        fitting with ``set_params``. ``"greedy"`` chooses the likeliest element at
        each step: one ordering, the fastest. The others decode several candidate
        orderings of each sample, the greedy one always among them, and keep the
        cheapest under ``cost`` (ties, and every candidate without a cost, go to the
        likeliest): ``"sample"`` samples ``n_candidates`` orderings from the
        network (repeatably for an int ``random_state``), ``"multistart"`` decodes
        greedily from ``n_candidates`` start elements (POMO's inference, Kwon et al.
        2020), and ``"beam"`` runs a beam search of ``beam_width`` hypotheses. Each
        candidate costs about one greedy decoding. A ``cost`` chooses among the
        candidates; it never changes which decoding runs.
    n_candidates : int or None, default=None
        Candidates per sample, besides the greedy ordering, for ``decode="sample"``
        (sampled orderings) and ``decode="multistart"`` (start elements, spread
        evenly over the sample; at most one per element). None: one per element of
        the sample, so ``"multistart"`` starts from every element.
    beam_width : int, default=5
        Hypotheses kept per sample when ``decode="beam"``; 3 is usually enough, and
        with a ``cost`` wider beams (16 to 256) give cheaper orderings.
    augment : bool, default=False
        For samples of points in the plane (2 features) whose cost depends only on
        the distances between them, such as tours: also decode each sample's seven
        mirror images (reflections of each coordinate, swapped coordinates), which
        have the same distances, and keep the best candidate of all eight (POMO's
        augmentation, Kwon et al. 2020). Eight times the work of the chosen
        ``decode``. Use it with a ``cost`` for tours (see :ref:`pointer_cost`).
    cycle : {None, "directed", "undirected"}, default=None
        Declares that each target is a cycle, whose rotations are the same answer
        (``"directed"``: a hull kept counter-clockwise) and, with ``"undirected"``, its
        reversal too (a tour). ``predict`` returns cycles from their smallest index and
        ``score`` compares them in any rotation. Declare it whenever the targets are
        cycles (see :ref:`pointer_cycles`); it says what the targets are and changes
        nothing else of training.
    cost : {"tour", "path"}, callable or None, default=None
        What ``fit(X)`` without targets learns to minimise, and what ``score(X)``
        without targets measures: the name of a cost of :mod:`skptr.costs`, or a
        function ``cost(X, orderings) -> ndarray of shape (n_samples,)``, lower is
        better, of samples in the form ``fit`` received them and orderings in
        ``predict``'s format. ``fit(X, y)`` ignores it (see :ref:`pointer_cost`).
        Decoding keeps the cheapest of its candidates under it.
    rollouts : {"sample", "multistart"}, default="sample"
        How ``fit(X)`` from a ``cost`` rolls out orderings of each training instance:
        sampled from the network, or one sampled after each of ``n_rollouts`` start
        elements (POMO's training, Kwon et al. 2020). The rollouts of an instance are each
        other's baseline.
    n_rollouts : int or None, default=8
        Orderings rolled out per training instance when learning from a ``cost``;
        each costs about one greedy decoding. None: one per element of the instance.
    epochs : int, default=20
        Passes over the training data.
    batch_size : int, default=128
        Sequences per gradient step; larger batches use a GPU better.
    learning_rate : float, default=3e-3
        Step size of the Adam optimiser; lower it to 1e-3 if the loss oscillates.
    learning_rate_decay : float, default=1.0
        Epoch ``k``, counted from the first ``fit`` across warm starts, trains at
        ``learning_rate * learning_rate_decay ** k``. Under a time budget, choose it so
        that the step size falls about tenfold over the epochs that fit
        (``learning_rate_decay ** n_epochs`` near 0.1; see :ref:`pointer_time_budget`).
    {shared: clipnorm, validation_fraction, early_stopping, n_iter_no_change}
    random_state : int, RandomState instance or None, default=None
        Seeds initialisation, shuffling, dropout and the validation split; with an int,
        CPU runs are repeatable.
    {shared: verbose, warm_start}
    callbacks : list of keras.callbacks.Callback, default=None
        Extra Keras callbacks for training. On TensorFlow, training runs 32 steps per
        call into the compiled function unless one of these callbacks has per-batch
        hooks (``on_train_batch_end`` ...), which then see every batch.
    {shared: devices}
    dtype_policy : {"float32", "mixed_bfloat16", "mixed_float16"} or None, default=None
        Keras dtype policy: the mixed ones compute in 16-bit floats (pointer scores stay
        float32). Use ``"mixed_bfloat16"`` on GPUs, and with the attention encoder on a
        CPU with TensorFlow (:ref:`pointer_settings`). None: Keras' global policy.

    Attributes
    ----------
    network_ : keras.Model
        The trained pointer network (teacher-forced training graph).
    network_params_ : dict
        The hyperparameters the network was built with (and is rebuilt from).
    n_features_in_ : int
        Number of features per sequence step seen in ``fit``.
    ordered_subsets_ : bool
        True when some training targets were shorter than their inputs; the network
        then predicts an end of output, and ``predict`` pads with -1 after it.
    feature_scale_ : ndarray of shape (n_features_in_,)
        The largest magnitude of each feature in the first ``fit``'s data (1 for a
        feature that is always 0), as :class:`~sklearn.preprocessing.MaxAbsScaler`
        finds it; the network sees each feature divided by it, so features in other
        units need no scaler (a ``cost`` still receives ``X`` as given). Warm starts
        keep it.
    history_ : dict of list of float
        Per-epoch ``loss``, ``learning_rate`` (and ``val_loss``). A fit from a cost
        records the mean cost of the sampled orderings as ``loss``, and that of the
        greedy orderings of the validation samples as ``val_loss``.
    n_iter_ : int
        Number of epochs trained.

    Examples
    --------
    >>> from skptr import PointerNetworkOrderer
    >>> from skptr.datasets import make_sorting
    >>> X, y = make_sorting(n_samples=2000, n_steps=5, random_state=0)
    >>> est = PointerNetworkOrderer(hidden_size=32, epochs=3, random_state=0).fit(X, y)
    >>> est.predict(X[:2]).shape
    (2, 5)
    """

    _jit_inference = True

    _parameter_constraints: ClassVar[dict] = {
        **SequenceEstimatorBase._parameter_constraints,
        "hidden_size": [Interval(Integral, 1, MAX_WIDTH, closed="both")],
        "cell": [StrOptions({"lstm", "gru", "rnn"})],
        "bidirectional": ["boolean"],
        "num_layers": [Interval(Integral, 1, MAX_DEPTH, closed="both")],
        "decoder_layers": [None, Interval(Integral, 1, MAX_DEPTH, closed="both")],
        "encoder": [StrOptions(set(ENCODERS))],
        "n_heads": [Interval(Integral, 1, MAX_DEPTH, closed="both")],
        "attention": [StrOptions({"additive", "dot", "general"})],
        "n_glimpses": [Interval(Integral, 0, MAX_DEPTH, closed="both")],
        "logit_clip": [None, Interval(Real, 0, None, closed="neither")],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "decode": [StrOptions(set(DECODE_METHODS))],
        "n_candidates": [None, Interval(Integral, 1, MAX_WIDTH, closed="both")],
        "beam_width": [Interval(Integral, 1, MAX_WIDTH, closed="both")],
        "augment": ["boolean"],
        "cycle": [None, StrOptions(set(CYCLE_KINDS))],
        "cost": [None, StrOptions(set(BUILT_IN_COSTS)), callable],
        "rollouts": [StrOptions(set(ROLLOUTS))],
        "n_rollouts": [None, Interval(Integral, 1, MAX_WIDTH, closed="both")],
        "learning_rate_decay": [Interval(Real, 0, 1, closed="right")],
    }
    _network_params = (
        "hidden_size",
        "cell",
        "bidirectional",
        "num_layers",
        "decoder_layers",
        "attention",
        "n_glimpses",
        "logit_clip",
        "dropout",
        "cycle",
        "encoder",
        "n_heads",
        "dtype_policy",
    )
    #: Values that build the network of a fit recorded before these hyperparameters
    #: existed (older files and pickles).
    _network_params_before: ClassVar[dict] = {
        **SequenceEstimatorBase._network_params_before,
        "encoder": "recurrent",
        "n_heads": 8,
        "logit_clip": None,
        "decoder_layers": None,
    }
    _fitted_attributes: ClassVar[dict] = {
        **SequenceEstimatorBase._fitted_attributes,
        **PointerCodec.FITTED_ATTRIBUTES,
    }
    _fitted_attributes_before: ClassVar[dict] = {"feature_scale_": None}
    _params_saved_before = staticmethod(_params_in_todays_terms)
    _network_class = PointerNetwork

    def __init__(
        self,
        *,
        hidden_size=128,
        cell="lstm",
        bidirectional=True,
        num_layers=1,
        decoder_layers=None,
        encoder="recurrent",
        n_heads=8,
        attention="additive",
        n_glimpses=0,
        logit_clip=None,
        dropout=0.0,
        decode="greedy",
        n_candidates=None,
        beam_width=5,
        augment=False,
        cycle=None,
        cost=None,
        rollouts="sample",
        n_rollouts=8,
        epochs=20,
        batch_size=128,
        learning_rate=3e-3,
        learning_rate_decay=1.0,
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
        self.hidden_size = hidden_size
        self.cell = cell
        self.bidirectional = bidirectional
        self.num_layers = num_layers
        self.decoder_layers = decoder_layers
        self.encoder = encoder
        self.n_heads = n_heads
        self.attention = attention
        self.n_glimpses = n_glimpses
        self.logit_clip = logit_clip
        self.dropout = dropout
        self.decode = decode
        self.n_candidates = n_candidates
        self.beam_width = beam_width
        self.augment = augment
        self.cycle = cycle
        self.cost = cost
        self.rollouts = rollouts
        self.n_rollouts = n_rollouts
        self.learning_rate_decay = learning_rate_decay
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
        tags.target_tags.two_d_labels = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False
        return tags

    # ------------------------------------------------------------ base hooks
    _without_targets_advice = ", or a cost to learn from (cost=...)"

    def _learns_without_targets(self):
        return self.cost is not None

    def _prepare_training_data(self, X, y, reset):
        # Checked here, as the other checks between hyperparameters, before the data.
        if self.decoder_layers is not None and self.decoder_layers > self.num_layers:
            raise InvalidParameterError(
                f"The 'decoder_layers' parameter of {type(self).__name__} must be at most "
                f"num_layers={self.num_layers}. Got {self.decoder_layers} instead."
            )
        if not reset:
            check_augment(self.augment, self.n_features_in_)
            return PointerCodec.of(self).encode_training(X, y), {}
        codec, data = PointerCodec.learn(X, y, self.cycle)
        check_augment(self.augment, codec.n_features)
        return data, {
            "n_features_in_": codec.n_features,
            "ordered_subsets_": codec.ordered_subsets,
            "feature_scale_": feature_scale(data.inputs["values"], data.lengths),
        }

    def _build_network(self, seed):
        scale = self.feature_scale_
        if scale is not None and len(scale) != self.n_features_in_:
            raise ValueError(
                f"feature_scale_ holds {len(scale)} scales where n_features_in_ is "
                f"{self.n_features_in_}: one per feature is needed."
            )
        network = PointerNetwork(
            hidden_size=self.hidden_size,
            cell=self.cell,
            bidirectional=self.bidirectional,
            num_layers=self.num_layers,
            decoder_layers=self.decoder_layers,
            attention=self.attention,
            glimpses=self.n_glimpses,
            dropout=self.dropout,
            allow_end=self.ordered_subsets_,
            encoder=self.encoder,
            n_heads=self.n_heads,
            seed=seed,
            input_scale=scale,
            logit_clip=self.logit_clip,
        )
        return network.build_for(self.n_features_in_)

    def _loss(self):
        return masked_pointer_crossentropy

    def _cut_batches_kind(self):
        return self.encoder

    def _batch_trimming(self, data):
        return PointerCodec.training_extents(data), PointerCodec.trim_batch

    _weight_count = _sizes.weight_count
    _activation_count = _sizes.activation_count

    def _training_model(self, network, data, seed):
        if data.samples is None:  # targets to imitate
            return network, ()
        return cost_training_model(self, network, data, seed)

    def _schedule_callbacks(self, model, epochs_done):
        initial, decay = float(self.learning_rate), float(self.learning_rate_decay)
        return [
            keras.callbacks.LearningRateScheduler(
                lambda epoch: initial * decay ** (epochs_done + epoch)
            )
        ]

    # ------------------------------------------------------------- inference
    #: The hyperparameters that decoding reads, checked at every inference call.
    _decoding_params = ("decode", "n_candidates", "beam_width", "augment", "cost")

    def _decoded(self, X, distributions=False):
        """The orderings (and with ``distributions``, the pointer distributions along
        them) of ``X``, the validated sequences and the codec."""
        self._check_fitted()
        validate_parameter_constraints(
            {name: self._parameter_constraints[name] for name in self._decoding_params},
            {name: getattr(self, name) for name in self._decoding_params},
            caller_name=type(self).__name__,
        )
        codec = PointerCodec.of(self)
        sequences = codec.sequences(X)
        samples = None if self.cost is None else given_form(X, sequences)
        decoded = decode_sequences(self, sequences, codec, samples, distributions)
        return decoded, sequences, codec

    @inference_method
    def predict(self, X):
        """Predict an ordering of each input sequence.

        Parameters
        ----------
        X : array-like
            A 2-D array ``(n_samples, n_steps)``, a 3-D array ``(n_samples, n_steps,
            n_features)`` or a list of ``(n_steps_i,)`` / ``(n_steps_i, n_features)``
            arrays. Lengths may differ from those seen in ``fit``.

        Returns
        -------
        ndarray of shape (n_samples, n_outputs)
            Distinct input positions in output order, padded with -1 after each
            sample's end of output; ``n_outputs`` is the longest predicted ordering.
        """
        return self._decoded(X)[0][0]

    @inference_method
    def predict_proba(self, X):
        """Pointer distributions along the decoded orderings.

        Parameters
        ----------
        X : array-like
            Input sequences, as for :meth:`predict`.

        Returns
        -------
        ndarray of shape (n_samples, n_outputs, max_length + 1)
            Row ``[i, k]`` is the distribution over the positions of ``X[i]`` (padded
            to the longest input, padding gets probability 0) at output step ``k``;
            the last column is the probability of ending the output there (always 0
            for models fitted on full permutations). Steps after a sample's end are all
            zeros.
        """
        return self._decoded(X, distributions=True)[0][1]

    @inference_method
    def score(self, X, y=None):
        """Mean position accuracy of the predicted orderings, or without targets,
        minus the mean cost of the predicted orderings.

        A position counts as correct when the chosen element equals the target
        element (all its features), so equal elements are interchangeable and ties in
        sorting are not penalised. With ``cycle`` set, targets and predictions are
        compared as cycles, each from its smallest index. Without targets the score is
        ``-mean(cost(X, predict(X)))``: greater is better, as scikit-learn expects, so
        that searches and cross-validation tune a model learned from a cost.

        Parameters
        ----------
        X : array-like
            Input sequences.
        y : array-like or None, default=None
            Target orderings, as for :meth:`fit`; None scores with ``cost``.

        Returns
        -------
        float
            Share of correctly placed elements, or minus the mean cost.
        """
        if y is None and self.cost is None:
            raise ValueError("score(X) without y needs a cost to score with; set cost=...")
        (predictions, _), sequences, codec = self._decoded(X)
        if y is None:
            samples = given_form(X, sequences)
            ids = np.arange(sequences.n_samples)
            return -float(np.mean(call_cost(self.cost, samples, predictions, ids)))
        orderings, lengths = check_orderings(y, sequences.lengths)
        orderings = codec.canonical(orderings, lengths)
        return _checked_position_accuracy(orderings, predictions, sequences.values)
