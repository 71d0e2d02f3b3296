"""A pointer network in PyTorch, written the way public PyTorch implementations are.

It is the speed reference of the ``pointer_vs_torch`` section: the same architecture and
size as skptr's unidirectional :class:`~skptr.pointer._layers.PointerNetwork` (a
``tanh`` embedding of each element, a one-layer LSTM encoder, a one-layer LSTM decoder
started from the encoder's final state and fed the encoding of the element chosen at the
previous step, additive attention over the encodings and a learned end element), trained
with teacher forcing by Adam with gradients clipped at norm 1. The encoder and the
teacher-forced decoder each run as one fused ``nn.LSTM`` call; greedy and beam decoding
loop over output steps in Python, one batched PyTorch call per step, which is how the
public implementations decode.

PyTorch is optional: :func:`torch_available` says whether it can be imported.
:class:`TorchProcess` runs the reference in a process of its own, so that PyTorch's and
the Keras backend's thread pools never share a process.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import time

import numpy as np

__all__ = ["TorchPointerReference", "TorchProcess", "torch_available"]

NEGATIVE_LOGIT = -1e9


def torch_available():
    """Whether PyTorch can be imported in this environment."""
    return importlib.util.find_spec("torch") is not None


class TorchPointerReference:
    """Train and decode a PyTorch pointer network on skptr's encoded pointer data.

    Parameters
    ----------
    n_features : int
        Features per input element.
    hidden_size : int
        Width of the embedding, of both LSTMs and of the attention.
    learning_rate : float
        Adam step size.
    allow_end : bool
        Whether outputs may stop early (ordered subsets such as convex hulls).
    decoder_loop : bool
        Run the teacher-forced decoder one step per PyTorch call, as most public
        implementations do, instead of one fused ``nn.LSTM`` call over all steps.
    seed : int
        Seed of the initial weights and of the batch order.
    """

    def __init__(
        self, n_features, hidden_size, learning_rate, allow_end, decoder_loop=False, seed=0
    ):
        import torch
        from torch import nn

        self.torch = torch
        torch.manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        self.allow_end = bool(allow_end)
        self.decoder_loop = bool(decoder_loop)
        self.embedding = nn.Linear(n_features, hidden_size)
        self.encoder = nn.LSTM(hidden_size, hidden_size, batch_first=True)
        self.decoder = nn.LSTM(hidden_size, hidden_size, batch_first=True)
        self.key_projection = nn.Linear(hidden_size, hidden_size, bias=False)
        self.query_projection = nn.Linear(hidden_size, hidden_size)
        self.score_vector = nn.Linear(hidden_size, 1, bias=False)
        self.start_vector = nn.Parameter(torch.randn(hidden_size) * 0.05)
        self.end_vector = nn.Parameter(torch.randn(hidden_size) * 0.05)
        self.modules = nn.ModuleList(
            [
                self.embedding,
                self.encoder,
                self.decoder,
                self.key_projection,
                self.query_projection,
                self.score_vector,
            ]
        )
        self.parameters = [*self.modules.parameters(), self.start_vector, self.end_vector]
        self.optimizer = torch.optim.Adam(self.parameters, lr=learning_rate)

    # ------------------------------------------------------------------ network
    def _encode(self, values, lengths):
        torch = self.torch
        n_samples, n_positions = values.shape[:2]
        embedded = torch.tanh(self.embedding(values))
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            embedded, lengths, batch_first=True, enforce_sorted=False
        )
        outputs, state = self.encoder(packed)
        encodings, _ = torch.nn.utils.rnn.pad_packed_sequence(
            outputs, batch_first=True, total_length=n_positions
        )
        end = self.end_vector.expand(n_samples, 1, -1)
        keys = torch.cat([encodings, end], dim=1)
        valid = torch.arange(n_positions + 1)[None, :] < lengths[:, None]
        valid[:, n_positions] = self.allow_end
        return keys, valid, state

    def _scores(self, queries, projected_keys):
        """Additive attention scores (n, S, P) of queries (n, S, D)."""
        hidden = self.torch.tanh(
            projected_keys[:, None, :, :] + self.query_projection(queries)[:, :, None, :]
        )
        return self.score_vector(hidden).squeeze(-1)

    def _decoder_inputs(self, keys, previous):
        """Encodings at ``previous`` (n, S), or the start vector where it is -1."""
        index = previous.clamp(min=0)[..., None].expand(*previous.shape, keys.shape[-1])
        gathered = self.torch.gather(keys, 1, index)
        return self.torch.where((previous >= 0)[..., None], gathered, self.start_vector)

    def _teacher_forced_logits(self, values, lengths, targets):
        torch = self.torch
        keys, valid, state = self._encode(values, lengths)
        n_pointers = keys.shape[1]
        previous = torch.cat([torch.full_like(targets[:, :1], -1), targets[:, :-1]], dim=1)
        decoder_inputs = self._decoder_inputs(keys, previous)
        if self.decoder_loop:
            outputs = []
            for step in range(decoder_inputs.shape[1]):
                output, state = self.decoder(decoder_inputs[:, step : step + 1], state)
                outputs.append(output)
            hidden = torch.cat(outputs, dim=1)
        else:
            hidden, _ = self.decoder(decoder_inputs, state)
        logits = self._scores(hidden, self.key_projection(keys))
        real = (targets >= 0)[..., None].float()
        chosen = torch.nn.functional.one_hot(targets.clamp(min=0), n_pointers).float() * real
        chosen_before = torch.cumsum(chosen, dim=1) - chosen
        allowed = valid[:, None, :] & (chosen_before < 0.5)
        return logits.masked_fill(~allowed, NEGATIVE_LOGIT)

    # ----------------------------------------------------------------- training
    def fit_epoch(self, inputs, targets, batch_size):
        """One epoch of shuffled mini-batches; returns the mean training loss."""
        torch = self.torch
        values = torch.as_tensor(np.asarray(inputs["values"], dtype=np.float32))
        lengths = torch.as_tensor(np.asarray(inputs["lengths"], dtype=np.int64))
        targets = torch.as_tensor(np.asarray(targets, dtype=np.int64))
        order = torch.as_tensor(self.rng.permutation(len(targets)))
        self.modules.train()
        losses = []
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            batch_targets = targets[batch]
            logits = self._teacher_forced_logits(values[batch], lengths[batch], batch_targets)
            step_losses = torch.nn.functional.cross_entropy(
                logits.transpose(1, 2), batch_targets, ignore_index=-1, reduction="none"
            )
            real = (batch_targets >= 0).float()
            loss = ((step_losses * real).sum(1) / real.sum(1).clamp(min=1)).mean()
            self.optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.parameters, 1.0)
            self.optimizer.step()
            losses.append(loss.item())
        return float(np.mean(losses))

    # ----------------------------------------------------------------- decoding
    def decode(self, inputs, batch_size, beam_width=1):
        """Greedy (``beam_width=1``) or beam-search orderings, -1 after the end."""
        torch = self.torch
        values = torch.as_tensor(np.asarray(inputs["values"], dtype=np.float32))
        lengths = torch.as_tensor(np.asarray(inputs["lengths"], dtype=np.int64))
        self.modules.eval()
        outputs = []
        with torch.no_grad():
            for start in range(0, len(values), batch_size):
                batch = slice(start, start + batch_size)
                outputs.append(self._beam(values[batch], lengths[batch], beam_width))
        return torch.cat(outputs).numpy()

    def _beam(self, values, lengths, beam_width):
        torch = self.torch
        keys, valid, (h, c) = self._encode(values, lengths)
        n_samples, n_pointers = keys.shape[:2]
        n_steps = n_pointers - 1

        def tile(tensor):
            return tensor.repeat_interleave(beam_width, dim=0)

        keys, valid, lengths = tile(keys), tile(valid), tile(lengths)
        projected = self.key_projection(keys)
        h, c = h.repeat_interleave(beam_width, dim=1), c.repeat_interleave(beam_width, dim=1)
        rows = n_samples * beam_width
        previous = torch.full((rows,), -1, dtype=torch.long)
        chosen = torch.zeros(rows, n_pointers, dtype=torch.bool)
        finished = torch.zeros(rows, dtype=torch.bool)
        scores = torch.zeros(n_samples, beam_width)
        scores[:, 1:] = NEGATIVE_LOGIT  # every beam starts as the same empty ordering
        orderings = torch.full((rows, n_steps), -1, dtype=torch.long)
        for step in range(n_steps):
            step_inputs = self._decoder_inputs(keys, previous[:, None])
            output, (h, c) = self.decoder(step_inputs, (h, c))
            logits = self._scores(output, projected)[:, 0]
            logits = logits.masked_fill(~(valid & ~chosen), NEGATIVE_LOGIT)
            log_probs = torch.log_softmax(logits, dim=-1)
            stay = torch.full_like(log_probs, NEGATIVE_LOGIT)
            stay[:, 0] = 0.0
            log_probs = torch.where(finished[:, None], stay, log_probs)
            total = (scores.reshape(rows, 1) + log_probs).reshape(n_samples, -1)
            scores, flat = total.topk(beam_width, dim=-1)
            first_beam = torch.arange(n_samples)[:, None] * beam_width
            parent = (flat // n_pointers + first_beam).reshape(-1)
            choice = (flat % n_pointers).reshape(-1)
            h, c = h[:, parent], c[:, parent]
            chosen, finished = chosen[parent], finished[parent]
            orderings = orderings[parent]
            previous = torch.where(finished, previous[parent], choice)
            running = ~finished
            ended = torch.full_like(choice, -1)
            emitted = torch.where(running & (choice != n_steps), choice, ended)
            orderings[:, step] = emitted
            chosen[running, choice[running]] = True
            used = chosen[:, :n_steps].sum(-1)
            finished = finished | (running & ((choice == n_steps) | (used >= lengths)))
        return orderings.reshape(n_samples, beam_width, n_steps)[:, 0]


#: Seconds the worker stays idle after each call before it answers, so that its OpenMP
#: threads, which spin for a while after their work, have stopped when the other side's
#: timed call starts.
SETTLE_SECONDS = 0.5


def _serve(connection, options):
    import torch

    reference = TorchPointerReference(**options)
    connection.send({"torch": torch.__version__, "threads": torch.get_num_threads()})
    while (request := connection.recv()) is not None:
        method, args = request
        start = time.perf_counter()
        result = getattr(reference, method)(*args)
        elapsed = time.perf_counter() - start
        time.sleep(SETTLE_SECONDS)
        connection.send((result, elapsed))


class TorchProcess:
    """A :class:`TorchPointerReference` served by a spawned process.

    Parameters
    ----------
    **options
        Passed to :class:`TorchPointerReference`.

    Attributes
    ----------
    versions : dict
        PyTorch's version and its number of threads in the worker.
    """

    def __init__(self, **options):
        context = multiprocessing.get_context("spawn")
        self._connection, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, options), daemon=True)
        self._process.start()
        self.versions = self._connection.recv()

    def call(self, method, *args):
        """Run ``method`` of the reference; return its result and its seconds in the
        worker (transfers excluded)."""
        self._connection.send((method, args))
        return self._connection.recv()

    def close(self):
        """Stop the worker."""
        self._connection.send(None)
        self._process.join(timeout=30)
