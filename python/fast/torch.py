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

With a synchronous gradient-averaging strategy (allreduce), the Worker also drives the user's own
torch.optim optimizer and LR scheduler, as Horovod's DistributedOptimizer does: FAST averages the
gradients (compressed if asked) into each parameter's .grad and the user's optimizer steps:

    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=steps)
    worker = fast.torch.Worker(model, optimizer=opt, scheduler=sched, strategy="allreduce")

Module buffers (BatchNorm's running statistics) follow `buffers`: "broadcast" (rank 0's after every
step, DistributedDataParallel's default), "average" (the mean over the workers after every step) or
"local" (each worker keeps its own).
"""

import hashlib
import json
import os
import pathlib
import time

import numpy as np
import torch

import fast


def _differing_workers(context, text):
    """Collective: the ranks whose `text` differs from this worker's (a digest of it is allgathered)."""
    if context.size == 1:
        return []
    digest = np.frombuffer(hashlib.sha256(text.encode()).digest()[:8], dtype=np.int64).copy()
    gathered = fast.Communicator(context).allgather(digest)
    return [r for r in range(context.size) if gathered[r, 0] != digest[0]]


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
        differ = _differing_workers(context, repr(self.layout))
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


BUFFER_POLICIES = ("broadcast", "average", "local")


class FlatBuffers:
    """A module's buffers (BatchNorm's running_mean, running_var, num_batches_tracked, ...) re-pointed
    into one flat array per dtype, so that one collective per dtype keeps them in step: the module
    updates them in place where it always did. `policy`: "broadcast" (sync() makes every worker's
    buffers rank 0's), "average" (floating-point buffers become the mean over the workers, the others
    rank 0's) or "local" (sync() does nothing). A module without buffers has nothing to sync.
    """

    def __init__(self, model, policy):
        if policy not in BUFFER_POLICIES:
            raise fast.InvalidArgument(
                f"fast.torch: buffers must be one of {', '.join(BUFFER_POLICIES)}; got {policy!r}")
        self.policy = policy
        self.names = []
        self.arrays = {}   # dtype -> flat numpy array
        if policy == "local":
            return
        owners = []        # (module, attribute name, dotted name, tensor)
        for module_name, module in model.named_modules():
            for name, b in list(module._buffers.items()):
                if b is None:
                    continue
                dotted = f"{module_name}.{name}" if module_name else name
                if b.device.type != "cpu":
                    raise fast.InvalidArgument(
                        f"fast.torch: buffer '{dotted}' is on device '{b.device}'; FAST's buffers are in CPU memory")
                owners.append((module, name, dotted, b))
        by_dtype = {}
        for entry in owners:
            by_dtype.setdefault(entry[3].dtype, []).append(entry)
        with torch.no_grad():
            for dtype, entries in by_dtype.items():
                total = sum(b.numel() for _, _, _, b in entries)
                flat = torch.zeros(total, dtype=dtype)
                offset = 0
                for module, name, dotted, b in entries:
                    k = b.numel()
                    view = flat[offset:offset + k].view_as(b)
                    view.copy_(b)
                    module._buffers[name] = view
                    self.names.append(dotted)
                    offset += k
                self.arrays[dtype] = flat.numpy()

    def sync(self, communicator):
        """Collective (every worker calls it at the same point): applies the policy."""
        if self.policy == "local":
            return
        for dtype, array in self.arrays.items():
            if self.policy == "average" and dtype.is_floating_point:
                communicator.allreduce(array, op="mean")
            else:
                communicator.broadcast(array, 0)


def _untracked_summary(seconds):
    """The summary keys of a run finished without track(): FAST saw neither when its loop started
    nor its batch size. The wall time counts from the Worker's creation to finish() (this worker's);
    what needs the batch or the evaluations' times is None."""
    return {"wall_seconds": seconds, "batch": None, "samples_per_second": None, "time_to_target_seconds": None,
            "wall_to_target_seconds": None}


# The settings of FAST's own optimizer and schedule: a torch.optim optimizer takes their place.
_FAST_OPTIMIZER_SETTINGS = ("lr", "momentum", "weight_decay", "beta1", "beta2", "eps", "schedule", "warmup_steps",
                            "step_size", "gamma", "min_lr_factor")


def _check_user_optimizer(optimizer, scheduler, flat, settings):
    """InvalidArgument unless optimizer (a torch.optim.Optimizer) steps only parameters in FAST's flat
    buffer, no FAST optimizer setting is given beside it, and scheduler (if any) drives it."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise fast.InvalidArgument(
            f"fast.torch.Worker: optimizer must be a FAST optimizer's name (str) or a torch.optim.Optimizer, got "
            f"{type(optimizer).__name__}")
    given = [k for k in _FAST_OPTIMIZER_SETTINGS if k in settings]
    if given:
        raise fast.InvalidArgument(
            f"fast.torch.Worker: {', '.join(given)} {'configures' if len(given) == 1 else 'configure'} FAST's own "
            f"optimizer; with a torch.optim optimizer, set {'it' if len(given) == 1 else 'them'} on that optimizer "
            "(and its scheduler) instead")
    ours = {id(p) for p, _, _ in flat._views}
    frozen = {id(p) for p in flat.model.parameters() if not p.requires_grad}
    stepped = [(i, p) for i, g in enumerate(optimizer.param_groups) for p in g["params"] if id(p) not in ours]
    if stepped and all(id(p) in frozen for _, p in stepped):
        raise fast.InvalidArgument(
            f"fast.torch.Worker: the optimizer holds {len(stepped)} frozen parameter(s) of the model "
            "(requires_grad=False), which FAST neither averages nor keeps equal across the workers: build the "
            "optimizer on the trainable ones ([p for p in model.parameters() if p.requires_grad]); to train them "
            "later, make a new fast.torch.Worker once they are unfrozen")
    outside = [i for i, p in stepped]
    if outside:
        raise fast.InvalidArgument(
            f"fast.torch.Worker: the optimizer steps {len(outside)} tensor(s) that are not trainable parameters of the "
            "model (param groups " + ", ".join(str(i) for i in sorted(set(outside))) + "); their gradients would "
            "not be averaged and the replicas would drift apart: build the optimizer on model.parameters()")
    if scheduler is not None and getattr(scheduler, "optimizer", None) is not optimizer:
        raise fast.InvalidArgument(
            "fast.torch.Worker: scheduler must be a torch.optim.lr_scheduler built on the optimizer given (its "
            ".optimizer is another one)")


def _exchange_texts(context, text):
    """Collective: every worker's `text`, in rank order."""
    if context.size == 1:
        return [text]
    data = text.encode()
    comm = fast.Communicator(context)
    lengths = comm.allgather(np.array([len(data)], dtype=np.int64))[:, 0]
    padded = np.zeros(max(1, int(lengths.max())), dtype=np.uint8)
    padded[:len(data)] = np.frombuffer(data, dtype=np.uint8)
    rows = comm.allgather(padded)
    return [bytes(rows[r, :int(lengths[r])]).decode() for r in range(context.size)]


def _agreed_buffer_policy(model, policy, worker, context):
    """Collective: the buffers policy (None: broadcast for synchronous strategies, local for
    asynchronous ones), once every worker resolved the same one and its module has the same buffers
    (names, shapes, dtypes): a worker syncing its buffers beside one that does not would wait in a
    collective the other never calls. A worker whose own policy is refused raises its own error and
    the others name it (every such worker, each with its error); a difference raises on every worker, naming both values. Every worker that
    raises finishes its fast.Worker first (collective, as the refusal is)."""
    resolved = policy if policy is not None else ("local" if worker.asynchronous else "broadcast")
    refusal = None
    if resolved not in BUFFER_POLICIES:
        refusal = f"fast.torch: buffers must be one of {', '.join(BUFFER_POLICIES)}; got {policy!r}"
    elif resolved != "local" and worker.asynchronous:
        refusal = (f"fast.torch.Worker: buffers={policy!r} is a collective at every step, and strategy "
                   f"'{worker.settings['strategy']}' is asynchronous (its workers do not step together): use "
                   "buffers='local'")
    layout = [[name, list(b.shape), str(b.dtype)] for name, b in model.named_buffers()]
    mine = {"refused": refusal} if refusal else {"policy": resolved, "layout": layout}
    everyone = [json.loads(t) for t in _exchange_texts(context, json.dumps(mine))]
    problem = refusal
    refusing = [r for r, theirs in enumerate(everyone) if "refused" in theirs]
    if problem is None and len(refusing) == 1:
        problem = (f"fast.torch.Worker: worker {refusing[0]} refused its own buffers=, so no worker starts; its "
                   f"error: {everyone[refusing[0]]['refused']}")
    elif problem is None and refusing:
        problem = (f"fast.torch.Worker: workers {', '.join(map(str, refusing))} refused their own buffers=, so no "
                   "worker starts; " + "; ".join(f"worker {r}'s error: {everyone[r]['refused']}" for r in refusing))
    if problem is None:
        problem = _buffer_difference(everyone)
    if problem is not None:
        worker.finish()
        raise fast.InvalidArgument(problem)
    return resolved


def _show_buffer(entry):
    return "none" if entry is None else f"'{entry[0]}' {tuple(entry[1])} {entry[2]}"


def _buffer_difference(everyone):
    """The first worker whose policy or module buffers differ from worker 0's, named with both values
    (None when all agree)."""
    zero = everyone[0]
    for r, theirs in enumerate(everyone[1:], start=1):
        if theirs["policy"] != zero["policy"]:
            return (f"fast.torch.Worker: the workers' buffers policies differ: buffers = {theirs['policy']!r} in "
                    f"worker {r}, {zero['policy']!r} in worker 0; every worker passes the same buffers=")
        if theirs["layout"] != zero["layout"]:
            pairs = zip(theirs["layout"] + [None] * len(zero["layout"]), zero["layout"] + [None] * len(theirs["layout"]))
            first = next((a, b) for a, b in pairs if a != b)
            return (f"fast.torch.Worker: the workers' module buffers differ: worker {r} has {len(theirs['layout'])}, "
                    f"worker 0 has {len(zero['layout'])}; first difference: {_show_buffer(first[0])} in worker {r}, "
                    f"{_show_buffer(first[1])} in worker 0; every worker builds the same architecture")
    return None


class Worker:
    """A fast.Worker on a torch.nn.Module's parameters (see the module's documentation).

    model: the module, float32 and in CPU memory. context: a fast.Context (default: fast.context(), else
    fast.init()). broadcast_initial: start every worker from rank 0's parameters and buffers (default True).
    optimizer: a FAST optimizer's name (a setting, "sgd" by default) or the user's torch.optim.Optimizer
    built on model.parameters(); the latter only with a strategy whose whole update is one optimizer step
    on the averaged gradient (allreduce, without dgc), and without FAST's optimizer settings (lr,
    momentum, schedule, ...). scheduler: a torch.optim.lr_scheduler on that optimizer, stepped after each
    optimizer step (for a per-epoch scheduler or ReduceLROnPlateau, leave it out and step it yourself).
    buffers: "broadcast" (default for synchronous strategies), "average" or "local" (the only choice, and
    the default, for asynchronous ones: their workers do not step together); see FlatBuffers.
    steps_per_epoch and settings: as fast.Worker (fast train's settings by name: strategy, lr,
    momentum, schedule, steps, seed, topology, compress, ...). Collective: every worker makes its own.
    Attributes: model, context, flat (the FlatModel), params and grads (its buffers), buffers (the
    FlatBuffers), optimizer and scheduler (the user's, or None), worker (the fast.Worker), metrics (the
    fast.Metrics after track(), else None).
    """

    def __init__(self, model, context=None, *, optimizer=None, scheduler=None, buffers=None, steps_per_epoch=0,
                 broadcast_initial=True, **settings):
        self.flat = FlatModel(model)
        self.model = model
        self.optimizer = self.scheduler = None
        if optimizer is not None and not isinstance(optimizer, str):
            _check_user_optimizer(optimizer, scheduler, self.flat, settings)
            self.optimizer, self.scheduler = optimizer, scheduler
            self._initial_lr = float(optimizer.param_groups[0]["lr"])  # the records' lr (track())
        elif scheduler is not None:
            raise fast.InvalidArgument(
                "fast.torch.Worker: scheduler drives a torch.optim optimizer; FAST's own optimizer follows the "
                "schedule setting (schedule='cosine', 'step', 'constant')")
        elif optimizer is not None:
            settings["optimizer"] = optimizer
        self.context = context or fast.context() or fast.init()
        self.flat.check_same_layout(self.context)
        self.params, self.grads = self.flat.params, self.flat.grads
        self._communicator = fast.Communicator(self.context)
        broadcast_initial = broadcast_initial and self.context.size > 1
        if broadcast_initial:         # before the strategy starts: some keep the initial model (a centre)
            self._communicator.broadcast(self.params, 0)
        self.worker = fast.Worker(self.context, self.params, self.grads, layout=self.flat.layout,
                                  steps_per_epoch=steps_per_epoch, external_optimizer=self.optimizer is not None,
                                  **settings)
        buffers = _agreed_buffer_policy(model, buffers, self.worker, self.context)
        self.buffers = FlatBuffers(model, buffers)
        if broadcast_initial:
            for array in self.buffers.arrays.values():
                self._communicator.broadcast(array, 0)
        self.metrics = None
        self._tracked = False         # track() called: finish() then needs the test data
        self._created = time.perf_counter()  # an untracked run's summary counts its wall time from here

    def track(self, metrics="", summary="", model="python", dataset="", batch=64, epochs=0, log_every=50,
              target_accuracy=0.85, classes=10, progress=None):
        """Writes fast train's metrics records and summary (fast.Metrics; collective)."""
        self._tracked = True
        # A torch.optim optimizer is named by its class and its first group's lr at the Worker's creation.
        named = {} if self.optimizer is None else {"optimizer": type(self.optimizer).__name__,
                                                   "lr": self._initial_lr}
        self.metrics = fast.Metrics(self.worker, metrics=str(metrics), summary=str(summary), model=model,
                                    dataset=dataset, batch=batch, epochs=epochs, log_every=log_every,
                                    target_accuracy=target_accuracy, classes=classes, progress=progress, **named)
        return self.metrics

    def zero_grad(self):
        """Zeroes the flat gradient (use it, or model.zero_grad(set_to_none=False), before backward)."""
        self.flat.zero_grad()

    def step(self, loss=None):
        """One step on the gradient of the last backward pass; loss (a float or tensor) feeds the
        metrics when track() was called. Returns the fast.StepReport."""
        self.flat.gather_gradients()
        report = self.worker.step()
        if self.optimizer is not None:
            report.lr = float(self.optimizer.param_groups[0]["lr"])
            if report.applied:          # the same decision on every worker: the averaged gradient is the same
                self.optimizer.step()
            if self.scheduler is not None:
                self.scheduler.step()
        self.buffers.sync(self._communicator)
        if self.metrics is not None and loss is not None:
            self.metrics.step(float(loss), report)
        return report

    def evaluate(self, data):
        """Synchronous strategies, collective: the representative model's accuracy over every worker's
        data (each passes its own slice of the test set); writes an eval record when tracked. Returns
        the record as a dict (accuracy, loss, samples, consensus_distance, ...). Asynchronous
        strategies: this worker's snapshot scored on its own data, recorded; returns None. Without
        track(), the records go nowhere, and finish() needs no data."""
        if self.metrics is None:
            self.track()
            self._tracked = False     # the evaluation's own records, not a tracked run
        return self.metrics.evaluate(self.flat.score(data))

    def finish(self, data=None):
        """Collective, after the last step: ends the strategy, loads the representative model into
        the module and, when tracked (or given test data), evaluates it and returns the summary (a
        dict, fast train's schema); None otherwise. Without track(), the summary's wall_seconds
        counts from this Worker's creation, and batch, samples_per_second and the times to the
        target accuracy are None (track() gives them)."""
        summary = None
        if self._tracked and data is None:
            raise fast.InvalidArgument(
                "fast.torch.Worker.finish: a tracked run's summary scores the final model: pass this worker's "
                "slice of the test data, finish((x_test, y_test))")
        if data is not None:
            tracked = self._tracked
            seconds = time.perf_counter() - self._created
            if self.metrics is None:
                self.track()
            summary = self.metrics.finish(self.flat.score(data))
            if not tracked:
                summary.update(_untracked_summary(seconds))
        else:
            self.worker.finish()
        self.params[:] = self.worker.representative()
        return summary


    def _identity(self):
        """The identity fields fast.torch adds to the settings' (checked on resume): the module's
        class, the buffers policy and the user's optimizer and scheduler classes."""
        fields = {"model": type(self.model).__name__, "buffers": self.buffers.policy}
        if self.optimizer is not None:
            fields["optimizer"] = type(self.optimizer).__name__
        if self.scheduler is not None:
            fields["scheduler"] = type(self.scheduler).__name__
        return fields

    def _torch_state_file(self, step_folder):
        return pathlib.Path(step_folder) / f"torch-{self.context.rank}.pt"

    def save(self, folder, keep=2):
        """Collective, between two steps: a checkpoint of this worker after the steps taken so far
        into `folder`, in fast train's layout and with its guarantees (docs/faults.md): FAST's state
        (parameters, optimizer, codec and strategy state) in worker-<rank>.ckpt, and, written first,
        torch-<rank>.pt with the module's buffers and the user's optimizer and scheduler state; the
        manifest that makes the checkpoint complete comes after every worker's files. The `keep`
        newest checkpoints are kept; the first save into a folder removes its step folders newer than
        this run's start (0, or the step resume() restored), as fast train does. A file that cannot be
        written is a fast.IoError on every worker. Returns the step folder."""
        state = {"buffers": {name: b.detach().clone() for name, b in self.model.named_buffers()},
                 "optimizer": self.optimizer.state_dict() if self.optimizer is not None else None,
                 "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None}

        def write(step_folder):  # this worker's torch-<rank>.pt, on the disk before it takes the name
            target = self._torch_state_file(step_folder)
            try:
                with open(str(target) + ".tmp", "wb") as out:
                    torch.save(state, out)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(str(target) + ".tmp", target)
            except Exception as e:  # noqa: BLE001: any failure to write fails the checkpoint on every worker
                return f"fast.torch.Worker.save: cannot write '{target}': {e}"
            return ""

        return pathlib.Path(self.worker.save_checkpoint(str(folder), keep, self._identity(), write))

    def resume(self, folder):
        """Collective, before the first step: restores the newest complete checkpoint of `folder`
        that every worker can read (save()'s files) and returns its step: the steps already taken,
        which the loop skips. A checkpoint of another run (other settings, model class, layout,
        buffers policy, optimizer or scheduler class) is refused with fast.InvalidArgument naming the
        file and the field, before anything is restored, as is a `folder` that is not a folder or holds
        no complete checkpoint; fast.IoError when none is readable."""
        loaded = {}

        def read(step_folder):  # this worker's torch-<rank>.pt, read before anything is restored
            source = self._torch_state_file(step_folder)
            try:
                loaded["state"] = torch.load(source)
            except Exception as e:  # noqa: BLE001: any unreadable file is a damaged checkpoint
                return f"fast.torch.Worker.resume: cannot read '{source}': {e}"
            return ""

        # The newest checkpoint whose files every worker reads, its torch-<rank>.pt included: one
        # that a worker cannot read is skipped for the next older one, as fast train does.
        step = self.worker.restore_checkpoint(str(folder), self._identity(), read)
        state = loaded["state"]
        with torch.no_grad():
            for name, b in self.model.named_buffers():
                b.copy_(state["buffers"][name])   # in place: a synchronised buffer stays in its flat array
        if self.optimizer is not None:
            self.optimizer.load_state_dict(state["optimizer"])
        if self.scheduler is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        return step


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
