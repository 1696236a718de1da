"""fast.torch with PyTorch's habits (docs/python.md, "fast.torch"): the user's own torch.optim optimizer and
LR scheduler under allreduce against the same loop with DistributedDataParallel's semantics computed here
without FAST (per-rank gradients averaged by hand, then the same optimizer and scheduler), and module buffers
(BatchNorm statistics) under buffers = broadcast, average and local against what each rank computes alone."""
import copy
import errno
import os
import time

import pytest
import torch

import fast
import fast.torch

WORKERS, STEPS, BATCH = 2, 12, 8


def mlp():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))


def batches():
    """Rank r's batch at step s: data[s][r] = (x, y), the same tensors for FAST and the reference."""
    g = torch.Generator().manual_seed(11)
    return [[(torch.randn(BATCH, 6, generator=g), torch.randint(0, 3, (BATCH,), generator=g))
             for _ in range(WORKERS)] for _ in range(STEPS)]


def adamw_and_one_cycle(model):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=STEPS)
    return opt, sched


def reference(base, data):
    """DDP's semantics without FAST: every rank's gradient on its batch, their mean, one AdamW step and
    one OneCycleLR step; the replicas are one model."""
    model = copy.deepcopy(base)
    opt, sched = adamw_and_one_cycle(model)
    for step in data:
        grads = []
        for x, y in step:
            model.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            grads.append([p.grad.clone() for p in model.parameters()])
        for p, *per_rank in zip(model.parameters(), *grads):
            p.grad = sum(per_rank) / len(per_rank)
        opt.step()
        sched.step()
    return [p.detach().clone() for p in model.parameters()], sched.get_last_lr()[0]


def test_user_adamw_and_one_cycle_follow_ddp_semantics():
    base, data = mlp(), batches()

    def body(ctx):
        model = copy.deepcopy(base)
        opt, sched = adamw_and_one_cycle(model)
        worker = fast.torch.Worker(model, ctx, optimizer=opt, scheduler=sched, strategy="allreduce", steps=STEPS)
        lrs = []
        for step in data:
            x, y = step[ctx.rank]
            worker.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            lrs.append(worker.step().lr)
        worker.finish()
        return [p.detach().clone() for p in model.parameters()], lrs, sched.get_last_lr()[0]

    expected, last_lr = reference(base, data)
    results = fast.run(body, workers=WORKERS)
    for params, lrs, final_lr in results:
        for got, want in zip(params, expected):
            torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
        assert final_lr == pytest.approx(last_lr)
        assert lrs[0] == pytest.approx(0.05 / 25)   # OneCycleLR starts at max_lr / div_factor (25)
    for got, want in zip(results[0][0], results[1][0]):
        assert torch.equal(got, want)                # the replicas are bitwise equal


def test_finish_with_data_needs_the_steps_only():
    """The loop above with steps=... and no steps_per_epoch: finish((x, y)) evaluates and summarises the run
    as one epoch (it asked for steps_per_epoch, after the whole loop). The final accuracy is the reference
    model's on the same data, counted here. Untracked, the summary's wall time counts from the Worker's
    creation (at least the loop's time, measured here), and what needs the batch or the evaluations' times
    is None. Each worker's own replica is hashed: under allreduce every replica is the final model."""
    base, data = mlp(), batches()
    x = torch.cat([x for step in data for x, _ in step])
    y = torch.cat([y for step in data for _, y in step])

    def body(ctx):
        model = copy.deepcopy(base)
        opt, sched = adamw_and_one_cycle(model)
        worker = fast.torch.Worker(model, ctx, optimizer=opt, scheduler=sched, strategy="allreduce", steps=STEPS)
        start = time.perf_counter()
        for step in data:
            xs, ys = step[ctx.rank]
            worker.zero_grad()
            torch.nn.functional.cross_entropy(model(xs), ys).backward()
            worker.step()
        loop_seconds = time.perf_counter() - start
        return worker.finish((x, y)), loop_seconds

    expected, _ = reference(base, data)
    model = copy.deepcopy(base)
    with torch.no_grad():
        for p, want in zip(model.parameters(), expected):
            p.copy_(want)
        correct = (model(x).argmax(1) == y).sum().item()
    for summary, loop_seconds in fast.run(body, workers=WORKERS):
        assert summary["steps"] == STEPS and summary["epochs"] == 1
        assert summary["final_accuracy"] == pytest.approx(correct / len(y), abs=1e-9)
        assert summary["wall_seconds"] >= loop_seconds
        for key in ("batch", "samples_per_second", "time_to_target_seconds", "wall_to_target_seconds"):
            assert summary[key] is None, key
        assert summary["param_hash"] != "0" * 16
        assert summary["param_hash_per_worker"] == [summary["param_hash"]] * WORKERS
        # The user's optimizer, named by its class, and its lr when the Worker was made: OneCycleLR's start,
        # max_lr / div_factor (25 by default).
        assert summary["optimizer"] == "AdamW"
        assert summary["lr"] == pytest.approx(0.05 / 25, rel=1e-12)


def test_evaluate_without_track_leaves_finish_without_data():
    """evaluate() mid-run returns the record (synchronous strategy: the model's accuracy over every worker's
    data, counted here) without starting a tracked run: finish() afterwards needs no test data, ends the
    run (a step after it is refused) and returns no summary."""
    base, data = mlp(), batches()
    x, y = data[0][0]

    def body(ctx):
        model = copy.deepcopy(base)
        worker = fast.torch.Worker(model, ctx, strategy="allreduce", steps=1)
        record = worker.evaluate((x, y))     # the initial model; every worker scores the same slice
        xs, ys = data[0][ctx.rank]
        worker.zero_grad()
        torch.nn.functional.cross_entropy(model(xs), ys).backward()
        worker.step()
        summary = worker.finish()
        with pytest.raises(fast.InvalidUsage):
            worker.step()
        return record, summary

    with torch.no_grad():
        correct = (base(x).argmax(1) == y).sum().item()
    for record, summary in fast.run(body, workers=WORKERS):
        assert summary is None
        assert record["accuracy"] == pytest.approx(correct / len(y), abs=1e-9)
        assert record["samples"] == WORKERS * len(y)


def test_without_averaging_the_reference_differs():
    """The comparison above can fail: one rank's data alone gives other parameters."""
    base, data = mlp(), batches()
    expected, _ = reference(base, data)
    alone, _ = reference(base, [[step[0]] for step in data])
    assert max(float((a - b).abs().max()) for a, b in zip(alone, expected)) > 1e-4


class Block(torch.nn.Module):
    """A resnet basic block with BatchNorm, as torchvision writes it."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(channels)
        self.conv2 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(channels)

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + x)


def small_resnet():
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1, bias=False), torch.nn.BatchNorm2d(4),
                               torch.nn.ReLU(), Block(4), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                               torch.nn.Linear(4, 3))


def image_batch(rank, step):
    g = torch.Generator().manual_seed(100 * rank + step)
    # The ranks' data differ in scale, so their running statistics differ unless synchronised.
    return torch.randn(BATCH, 1, 6, 6, generator=g) * (1 + rank), torch.randint(0, 3, (BATCH,), generator=g)


def run_buffers(policy, steps=3):
    base = small_resnet()

    def body(ctx):
        model = copy.deepcopy(base)
        worker = fast.torch.Worker(model, ctx, buffers=policy, strategy="allreduce", optimizer="sgd", lr=0.05,
                                   schedule="constant", steps=steps)
        for step in range(steps):
            x, y = image_batch(ctx.rank, step)
            worker.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            worker.step()
        worker.finish()
        return {k: v.clone() for k, v in model.state_dict().items()}

    return base, fast.run(body, workers=WORKERS)


def buffer_names(model):
    return [name for name, _ in model.named_buffers()]


def test_broadcast_buffers_end_equal_on_every_rank():
    base, (a, b) = run_buffers("broadcast")
    names = buffer_names(base)
    assert "1.running_mean" in names and "3.bn2.running_var" in names and "1.num_batches_tracked" in names
    for name in names:
        assert torch.equal(a[name], b[name]), name
    assert int(a["1.num_batches_tracked"]) == 3


def test_local_buffers_differ_between_ranks():
    base, (a, b) = run_buffers("local")
    assert not torch.equal(a["1.running_mean"], b["1.running_mean"])
    assert not torch.equal(a["3.bn2.running_var"], b["3.bn2.running_var"])


def test_average_buffers_are_the_mean_of_each_ranks_update():
    """One step: each rank's BatchNorm update computed here alone (same start, its own batch), then averaged."""
    base, (a, b) = run_buffers("average", steps=1)
    alone = []
    for rank in range(WORKERS):
        model = copy.deepcopy(base)
        model.train()
        model(image_batch(rank, 0)[0])
        alone.append(dict(model.named_buffers()))
    for name in buffer_names(base):
        assert torch.equal(a[name], b[name]), name
        if alone[0][name].is_floating_point():
            torch.testing.assert_close(a[name], (alone[0][name] + alone[1][name]) / 2, rtol=1e-6, atol=1e-7)
        else:
            assert torch.equal(a[name], alone[0][name])


def first_error(body):
    with pytest.raises(fast.InvalidArgument) as error:
        fast.run(body, workers=WORKERS)
    return str(error.value)


def test_user_optimizer_is_refused_where_fast_must_step():
    def gossip(ctx):
        model = mlp()
        fast.torch.Worker(model, ctx, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), strategy="adpsgd")

    message = first_error(gossip)
    assert "allreduce" in message and "strategy 'adpsgd'" in message

    def with_lr(ctx):
        model = mlp()
        fast.torch.Worker(model, ctx, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), lr=0.5)

    assert "lr configures FAST's own optimizer" in first_error(with_lr)

    def outside(ctx):
        model = mlp()
        extra = torch.nn.Parameter(torch.zeros(3))
        fast.torch.Worker(model, ctx, optimizer=torch.optim.SGD(list(model.parameters()) + [extra], lr=0.1))

    assert "1 tensor(s) that are not trainable parameters" in first_error(outside)

    def frozen(ctx):  # fine-tuning: the first layer frozen, the optimizer built on model.parameters()
        model = mlp()
        next(model.parameters()).requires_grad_(False)
        fast.torch.Worker(model, ctx, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))

    message = first_error(frozen)
    assert "holds 1 frozen parameter(s) of the model (requires_grad=False)" in message, message
    assert "[p for p in model.parameters() if p.requires_grad]" in message, message


def test_collective_buffers_are_refused_for_asynchronous_strategies():
    def body(ctx):
        fast.torch.Worker(small_resnet(), ctx, buffers="broadcast", strategy="adpsgd", steps=2)

    assert "buffers='local'" in first_error(body)

    def default(ctx):
        worker = fast.torch.Worker(small_resnet(), ctx, strategy="adpsgd", steps=2)
        worker.worker.finish()
        return worker.buffers.policy

    assert fast.run(default, workers=WORKERS) == ["local"] * WORKERS


def train_resnet(ctx, base, steps, first=0, save_to=None, resume_from=None, seed=1, total=8, keep=2):
    """Steps first..steps-1 of a BatchNorm resnet with AdamW and OneCycleLR under allreduce; saves at
    the end to save_to, or resumes from resume_from first. Returns (parameters, buffers, step resumed)."""
    model = copy.deepcopy(base)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.02, total_steps=total)
    worker = fast.torch.Worker(model, ctx, optimizer=opt, scheduler=sched, strategy="allreduce", steps=total,
                               seed=seed)
    resumed = worker.resume(resume_from) if resume_from else 0
    for step in range(first, steps):
        x, y = image_batch(ctx.rank, step)
        worker.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        worker.step()
    if save_to:
        worker.save(save_to, keep)
    worker.finish()
    return ([p.detach().clone() for p in model.parameters()], {k: b.clone() for k, b in model.named_buffers()},
            resumed)


def test_save_and_resume_continue_exactly(tmp_path):
    """8 steps straight against 4, a checkpoint, and 4 more in new workers, modules and optimizers:
    the same parameters and buffers, bit for bit (FAST's state, the user's AdamW and OneCycleLR, and
    the BatchNorm statistics all come back)."""
    base = small_resnet()
    straight = fast.run(lambda ctx: train_resnet(ctx, base, 8), workers=WORKERS)
    fast.run(lambda ctx: train_resnet(ctx, base, 4, save_to=tmp_path / "ck"), workers=WORKERS)
    assert sorted(p.name for p in (tmp_path / "ck" / "step-000000000004").iterdir()) == [
        "manifest.json", "torch-0.pt", "torch-1.pt", "worker-0.ckpt", "worker-1.ckpt"]
    resumed = fast.run(lambda ctx: train_resnet(ctx, base, 8, first=4, resume_from=tmp_path / "ck"), workers=WORKERS)
    for (params, buffers, _), (want_params, want_buffers, _), in zip(resumed, straight):
        for got, want in zip(params, want_params):
            assert torch.equal(got, want)
        for name, want in want_buffers.items():
            assert torch.equal(buffers[name], want), name
    assert [r[2] for r in resumed] == [4, 4]


def test_resume_falls_back_past_a_checkpoint_whose_torch_file_is_damaged(tmp_path):
    """A newer checkpoint whose torch-1.pt is cut short (or missing) is skipped for the one before, on
    every worker, before anything is restored: the run continues from step 4 and ends with the
    parameters of the run straight (it was a fast.IoError after FAST's state had been restored)."""
    base = small_resnet()
    straight = fast.run(lambda ctx: train_resnet(ctx, base, 8), workers=WORKERS)
    ck = tmp_path / "ck"
    fast.run(lambda ctx: train_resnet(ctx, base, 4, save_to=ck), workers=WORKERS)
    fast.run(lambda ctx: train_resnet(ctx, base, 6, first=4, save_to=ck, resume_from=ck), workers=WORKERS)
    damaged = ck / "step-000000000006" / "torch-1.pt"
    damaged.write_bytes(damaged.read_bytes()[:50])
    for attempt in ("cut", "missing"):
        if attempt == "missing":
            damaged.unlink()
        resumed = fast.run(lambda ctx: train_resnet(ctx, base, 8, first=4, resume_from=ck), workers=WORKERS)
        assert [r[2] for r in resumed] == [4, 4], attempt
        for (params, buffers, _), (want_params, want_buffers, _), in zip(resumed, straight):
            for got, want in zip(params, want_params):
                assert torch.equal(got, want), attempt
            for name, want in want_buffers.items():
                assert torch.equal(buffers[name], want), (attempt, name)


def test_a_runs_first_save_removes_the_newer_checkpoints_it_does_not_continue(tmp_path):
    """A run resumed past a damaged newer checkpoint (step 8, torch-1.pt cut short) saves at step 6
    with keep=1: its first save removes step 8 (the pruning kept that one as the newest and removed
    the run's own step 6, after which no checkpoint was readable); the next resume continues from
    step 6 to the parameters of the run straight."""
    base = small_resnet()
    straight = fast.run(lambda ctx: train_resnet(ctx, base, 8), workers=WORKERS)
    ck = tmp_path / "ck"
    fast.run(lambda ctx: train_resnet(ctx, base, 4, save_to=ck), workers=WORKERS)
    fast.run(lambda ctx: train_resnet(ctx, base, 8, first=4, save_to=ck, resume_from=ck), workers=WORKERS)
    damaged = ck / "step-000000000008" / "torch-1.pt"
    damaged.write_bytes(damaged.read_bytes()[:50])
    fast.run(lambda ctx: train_resnet(ctx, base, 6, first=4, save_to=ck, resume_from=ck, keep=1), workers=WORKERS)
    assert sorted(p.name for p in ck.iterdir()) == ["step-000000000006"]
    resumed = fast.run(lambda ctx: train_resnet(ctx, base, 8, first=6, resume_from=ck), workers=WORKERS)
    assert [r[2] for r in resumed] == [6, 6]
    for (params, _, _), (want_params, _, _), in zip(resumed, straight):
        for got, want in zip(params, want_params):
            assert torch.equal(got, want)


def test_a_torch_file_that_cannot_be_written_fails_the_save_on_every_worker(tmp_path, monkeypatch):
    """Worker 1's torch-1.pt meets a full disk: save() is a fast.IoError on both workers, naming the
    file and the reason on worker 1 (it was worker 1's bare OSError while worker 0 waited in the
    checkpoint's collective), and the step folder is no checkpoint (no manifest)."""
    real_save = torch.save

    def save(obj, out, *args, **kwargs):
        if os.path.basename(getattr(out, "name", "")).startswith("torch-1.pt"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_save(obj, out, *args, **kwargs)

    monkeypatch.setattr(torch, "save", save)
    ck = tmp_path / "ck"

    def body(ctx):
        try:
            train_resnet(ctx, small_resnet(), 1, save_to=ck)
        except fast.IoError as e:
            return str(e)
        return "saved"

    errors = fast.run(body, workers=WORKERS)
    assert "cannot write '" + str(ck / "step-000000000001" / "torch-1.pt") + "'" in errors[1], errors
    assert "No space left on device" in errors[1], errors
    assert "another worker could not write its file" in errors[0], errors
    assert not (ck / "step-000000000001" / "manifest.json").exists()


def test_a_save_keeping_no_checkpoint_and_a_resume_after_steps_are_refused(tmp_path):
    """keep=0 is refused before any file is written (it left torch-<rank>.pt files in a step folder,
    then named fast train's checkpoint_keep); resume() after steps is refused rather than taking the
    run back to the checkpoint's step."""
    with pytest.raises(fast.InvalidArgument, match=r"Worker.save_checkpoint: keep: expected .* >= 1, got 0"):
        fast.run(lambda ctx: train_resnet(ctx, small_resnet(), 1, save_to=tmp_path / "k0", keep=0), workers=WORKERS)
    assert not (tmp_path / "k0").exists() or not any((tmp_path / "k0").rglob("*.pt"))
    fast.run(lambda ctx: train_resnet(ctx, small_resnet(), 2, save_to=tmp_path / "ck"), workers=WORKERS)

    def late(ctx):
        model = small_resnet()
        worker = fast.torch.Worker(model, ctx, strategy="allreduce", steps=8)
        for step in range(3):
            x, y = image_batch(ctx.rank, step)
            worker.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            worker.step()
        worker.resume(tmp_path / "ck")

    with pytest.raises(fast.InvalidUsage, match=r"before the first step .* but this worker took 3 steps"):
        fast.run(late, workers=WORKERS)


def test_save_into_a_file_is_an_io_error_naming_the_folder(tmp_path):
    """A checkpoint folder that cannot be made (a file is there) is a fast.IoError naming it (it was
    Python's bare NotADirectoryError)."""
    (tmp_path / "taken").write_text("a file")
    with pytest.raises(fast.IoError) as error:
        fast.run(lambda ctx: train_resnet(ctx, small_resnet(), 1, save_to=tmp_path / "taken"), workers=WORKERS)
    assert "cannot create the checkpoint folder '" + str(tmp_path / "taken" / "step-000000000001") in str(error.value)
    assert "Not a directory" in str(error.value)


def test_resume_from_a_missing_or_empty_folder_is_bad_input_as_in_fast_train(tmp_path):
    """A folder that is not there, or holds no complete checkpoint, is a fast.InvalidArgument naming it,
    as `fast train --resume` refuses it (it was a fast.IoError)."""
    (tmp_path / "empty").mkdir()
    for folder, why in ((tmp_path / "nosuch", "does not exist"), (tmp_path / "empty", "holds no complete checkpoint")):
        with pytest.raises(fast.InvalidArgument) as error:
            fast.run(lambda ctx: train_resnet(ctx, small_resnet(), 1, resume_from=folder), workers=WORKERS)
        assert f"resume: '{folder}' {why}" in str(error.value)


def test_resume_refuses_another_runs_checkpoint(tmp_path):
    base = small_resnet()
    fast.run(lambda ctx: train_resnet(ctx, base, 2, save_to=tmp_path / "ck"), workers=WORKERS)
    message = first_error(lambda ctx: train_resnet(ctx, base, 4, first=2, resume_from=tmp_path / "ck", seed=2))
    assert "was written by a run with seed = 1; this run has seed = 2" in message, message
    assert "step-000000000002" in message, message


def tracked_resnet(ctx, base, folder, save_at=None, track_first=True, total=8):
    """A tracked run of `total` steps (fast.torch.Worker.track, then resume from `folder` where it
    holds a checkpoint, or the other way round); saves at step save_at. Returns the summary."""
    model = copy.deepcopy(base)
    worker = fast.torch.Worker(model, ctx, strategy="allreduce", steps=total, steps_per_epoch=4)
    if track_first:
        worker.track(batch=BATCH)
    first = worker.resume(folder) if any(folder.glob("step-*/manifest.json")) else 0
    if not track_first:
        worker.track(batch=BATCH)
    for step in range(first, total):
        x, y = image_batch(ctx.rank, step)
        worker.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        worker.step(loss)
        if step + 1 == save_at:
            worker.save(folder)
    x, y = image_batch(ctx.rank, 99)
    return worker.finish((x, y))


def test_a_tracked_resumed_run_says_so_and_counts_its_own_steps(tmp_path):
    """After fast.torch.Worker.resume(), whether track() came before or after it, the summary has
    resumed_from_step and its samples_per_second counts the steps this run took, as fast train's
    (it said null and counted the checkpoint's steps too)."""
    base = small_resnet()
    for track_first in (True, False):
        folder = tmp_path / f"ck{int(track_first)}"
        folder.mkdir()
        first = fast.run(lambda ctx: tracked_resnet(ctx, base, folder, save_at=5, track_first=track_first),
                         workers=WORKERS)
        assert first[0]["resumed_from_step"] is None
        again = fast.run(lambda ctx: tracked_resnet(ctx, base, folder, track_first=track_first), workers=WORKERS)
        summary = again[0]
        assert summary["resumed_from_step"] == 5, (track_first, summary)
        trained = (8 - 5) * BATCH * WORKERS
        assert summary["samples_per_second"] * summary["wall_seconds"] == pytest.approx(trained, rel=1e-6), summary
