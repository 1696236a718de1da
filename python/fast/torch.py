"""fast.torch: FAST's coordination for any torch.nn.Module (docs/python.md).

    import fast, fast.torch
    ctx = fast.init()
    worker = fast.torch.Worker(model, strategy="adpsgd", steps=steps, steps_per_epoch=steps_per_epoch)
    worker.track(metrics="m.jsonl", summary="s.json", batch=64)        # optional: fast train's records
    for x, y in loader:
        worker.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        worker.step(loss)
    summary = worker.finish((x_test, y_test))    # the model now holds the representative model

The module's trainable parameters and their gradients are re-pointed into one flat float32 buffer
each (views of numpy arrays), so FAST reads the gradient and updates the parameters where the module
uses them: nothing is copied per step. Every worker must build the same architecture (checked when
the Worker is made); rank 0's initial parameters are broadcast to all, as DistributedDataParallel does.
"""

import hashlib

import numpy as np
import torch

import fast


def _describe(entries):
    total = sum(int(np.prod(shape)) for _, shape in entries)
    return f"{len(entries)} tensors, {total} parameters"


class FlatModel:
    """A module's trainable parameters and their gradients re-pointed into one flat float32 buffer
    each: `params` and `grads` (numpy arrays; `params_tensor`, `grads_tensor` are torch views of
    them). The module keeps working as before; what it reads and autograd writes live in the buffers.
    For custom strategies on the tensor mover; fast.torch.Worker uses one.

    model: float32, in CPU memory, with at least one parameter that requires a gradient
    (fast.InvalidArgument otherwise, naming the parameter).
    """

    def __init__(self, model):
        if not isinstance(model, torch.nn.Module):
            raise fast.InvalidArgument(f"fast.torch: expected a torch.nn.Module, got {type(model).__name__}")
        self.model = model
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        if not named:
            raise fast.InvalidArgument("fast.torch: the model has no parameter that requires a gradient")
        for name, p in named:
            if p.dtype != torch.float32:
                raise fast.InvalidArgument(
                    f"fast.torch: parameter '{name}' is {p.dtype}; FAST's flat buffers are float32 "
                    "(convert the model with model.float())")
            if p.device.type != "cpu":
                raise fast.InvalidArgument(
                    f"fast.torch: parameter '{name}' is on device '{p.device}'; FAST's buffers are in CPU "
                    "memory (keep the model on the CPU)")
        self.names = [n for n, _ in named]
        self.layout = [(n, tuple(p.shape)) for n, p in named]
        total = sum(p.numel() for _, p in named)
        self.params = np.zeros(total, dtype=np.float32)
        self.grads = np.zeros(total, dtype=np.float32)
        self.params_tensor = torch.from_numpy(self.params)
        self.grads_tensor = torch.from_numpy(self.grads)
        self._views = []
        offset = 0
        with torch.no_grad():
            for _, p in named:
                k = p.numel()
                view = self.params_tensor[offset:offset + k].view_as(p)
                grad_view = self.grads_tensor[offset:offset + k].view_as(p)
                view.copy_(p)
                p.data = view
                p.grad = grad_view
                self._views.append((p, view, grad_view))
                offset += k

    def zero_grad(self):
        """Zeroes the flat gradient (or call model.zero_grad(set_to_none=False))."""
        self.grads_tensor.zero_()

    def gather_gradients(self):
        """Makes sure every gradient is in `grads`: one that autograd or the program put elsewhere
        (zero_grad(set_to_none=True), a replaced .grad) is copied in and re-pointed; a missing one
        counts as zero. InvalidUsage if a parameter itself was moved out of `params`."""
        for name, (p, view, grad_view) in zip(self.names, self._views):
            if p.data.data_ptr() != view.data_ptr():
                raise fast.InvalidUsage(
                    f"fast.torch: parameter '{name}' no longer lives in FAST's flat buffer (was the model moved "
                    "or its .data replaced?); wrap the model again after such changes")
            g = p.grad
            if g is None:
                grad_view.zero_()
                p.grad = grad_view
            elif g.data_ptr() != grad_view.data_ptr():
                grad_view.copy_(g)
                p.grad = grad_view

    def check_same_layout(self, context):
        """Collective: InvalidArgument on every worker unless all have the same parameter names and
        shapes, in the same order."""
        if context.size == 1:
            return
        digest = np.frombuffer(hashlib.sha256(repr(self.layout).encode()).digest()[:8], dtype=np.int64).copy()
        gathered = fast.Communicator(context).allgather(digest)
        differ = [r for r in range(context.size) if gathered[r, 0] != digest[0]]
        if differ:
            raise fast.InvalidArgument(
                f"fast.torch: the model's parameter layout differs between workers: worker {context.rank} has "
                f"{_describe(self.layout)} (first {self.layout[:3]}), and workers {differ} have another; every "
                "worker must build the same architecture")

    def score(self, data, batch=1000):
        """A score function for fast.Metrics: score(parameters) -> (correct, loss_sum, count) of the
        module with those flat parameters (put back afterwards) on data: a pair (x, y) of tensors or
        an iterable of (x, y) batches; cross-entropy loss."""
        def score(parameters):
            saved = self.params.copy()
            self.params[:] = parameters
            training = self.model.training
            self.model.eval()
            correct, loss_sum, count = 0, 0.0, 0
            try:
                with torch.no_grad():
                    for x, y in _batches(data, batch):
                        out = self.model(x)
                        loss_sum += float(torch.nn.functional.cross_entropy(out, y, reduction="sum"))
                        correct += int((out.argmax(1) == y).sum())
                        count += int(y.numel())
            finally:
                self.params[:] = saved
                self.model.train(training)
            return correct, loss_sum, count
        return score


class Worker:
    """A fast.Worker on a torch.nn.Module's parameters (see the module's documentation).

    model: the module, float32 and in CPU memory. context: a fast.Context (default: fast.context(), else
    fast.init()). broadcast_initial: start every worker from rank 0's parameters (default True).
    steps_per_epoch and settings: as fast.Worker (fast train's settings by name: strategy, optimizer, lr,
    momentum, schedule, steps, seed, topology, compress, ...). Collective: every worker makes its own.
    Attributes: model, context, flat (the FlatModel), params and grads (its buffers), worker (the
    fast.Worker), metrics (the fast.Metrics after track(), else None).
    """

    def __init__(self, model, context=None, *, steps_per_epoch=0, broadcast_initial=True, **settings):
        self.flat = FlatModel(model)
        self.model = model
        self.context = context or fast.context() or fast.init()
        self.flat.check_same_layout(self.context)
        self.params, self.grads = self.flat.params, self.flat.grads
        if broadcast_initial and self.context.size > 1:
            fast.Communicator(self.context).broadcast(self.params, 0)
        self.worker = fast.Worker(self.context, self.params, self.grads, layout=self.flat.layout,
                                  steps_per_epoch=steps_per_epoch, **settings)
        self.metrics = None

    def track(self, metrics="", summary="", model="python", dataset="", batch=64, epochs=0, log_every=50,
              target_accuracy=0.85, classes=10, progress=None):
        """Writes fast train's metrics records and summary (fast.Metrics; collective)."""
        self.metrics = fast.Metrics(self.worker, metrics=str(metrics), summary=str(summary), model=model,
                                    dataset=dataset, batch=batch, epochs=epochs, log_every=log_every,
                                    target_accuracy=target_accuracy, classes=classes, progress=progress)
        return self.metrics

    def zero_grad(self):
        """Zeroes the flat gradient (use it, or model.zero_grad(set_to_none=False), before backward)."""
        self.flat.zero_grad()

    def step(self, loss=None):
        """One step on the gradient of the last backward pass; loss (a float or tensor) feeds the
        metrics when track() was called. Returns the fast.StepReport."""
        self.flat.gather_gradients()
        report = self.worker.step()
        if self.metrics is not None and loss is not None:
            self.metrics.step(float(loss), report)
        return report

    def evaluate(self, data):
        """Synchronous strategies, collective: the representative model's accuracy over every worker's
        data (each passes its own slice of the test set); writes an eval record when tracked. Returns
        the record as a dict (accuracy, loss, samples, consensus_distance, ...). Asynchronous
        strategies: this worker's snapshot scored on its own data, recorded; returns None."""
        if self.metrics is None:
            self.track()
        return self.metrics.evaluate(self.flat.score(data))

    def finish(self, data=None):
        """Collective, after the last step: ends the strategy, loads the representative model into
        the module and, when tracked (or given test data), evaluates it and returns the summary (a
        dict, fast train's schema); None otherwise."""
        summary = None
        if self.metrics is not None and data is None:
            raise fast.InvalidArgument(
                "fast.torch.Worker.finish: a tracked run's summary scores the final model: pass this worker's "
                "slice of the test data, finish((x_test, y_test))")
        if data is not None:
            if self.metrics is None:
                self.track()
            summary = self.metrics.finish(self.flat.score(data))
        else:
            self.worker.finish()
        self.params[:] = self.worker.representative()
        return summary


def _batches(data, batch):
    if isinstance(data, (tuple, list)) and len(data) == 2 and isinstance(data[0], torch.Tensor):
        x, y = data
        for i in range(0, len(y), batch):
            yield x[i:i + batch], y[i:i + batch]
    else:
        yield from data


def shard(n, context):
    """The slice of range(n) this worker scores or trains on: rank, rank + size, ..."""
    return slice(context.rank, n, context.size)
