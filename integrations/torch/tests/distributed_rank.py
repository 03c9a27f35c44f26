"""One rank of the keel backend's two-process checks (run by
test_distributed.py with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set):
``python3 distributed_rank.py SCENARIO``. Exits 0 when every check passed;
prints what it checked."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

import keel_torch

RANK = int(os.environ["RANK"])
SIZE = int(os.environ["WORLD_SIZE"])
DEV = keel_torch.device(0)


def expect_error(fn, *fragments):
    try:
        fn()
    except RuntimeError as e:
        for fragment in fragments:
            assert fragment in str(e), f"{fragment!r} not in {e}"
        return str(e)
    raise AssertionError("no error raised")


def same(keel_tensor, expected):
    torch.testing.assert_close(keel_tensor.cpu(), expected, rtol=0, atol=0)


def rank_values(rank, dtype, n=6):
    # Distinct per rank and element, exact in every dtype used here.
    return (torch.arange(n) + 1 + 3 * rank).to(dtype)


def check_all_reduce():
    ops = {
        dist.ReduceOp.SUM: lambda xs: sum(xs),
        dist.ReduceOp.PRODUCT: lambda xs: xs[0] * xs[1],
        dist.ReduceOp.MIN: lambda xs: torch.minimum(xs[0], xs[1]),
        dist.ReduceOp.MAX: lambda xs: torch.maximum(xs[0], xs[1]),
    }
    dtypes = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int32, torch.int64,
              torch.uint8]
    for dtype in dtypes:
        for op, reference in ops.items():
            t = rank_values(RANK, dtype).to(DEV)
            dist.all_reduce(t, op=op)
            same(t, reference([rank_values(r, dtype) for r in range(SIZE)]).to(dtype))
    for dtype in (torch.float32, torch.float64, torch.int32, torch.int64):
        t = rank_values(RANK, dtype).to(DEV)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        expected = sum(rank_values(r, torch.float64) for r in range(SIZE)) / SIZE
        same(t, expected.to(dtype) if dtype.is_floating_point else expected.trunc().to(dtype))
    # bool as NCCL reduces it: SUM is "any", PRODUCT is "all".
    flags = [torch.tensor([True, False, False, True]), torch.tensor([True, True, False, False])]
    for op, reference in ((dist.ReduceOp.SUM, flags[0] | flags[1]), (dist.ReduceOp.PRODUCT, flags[0] & flags[1]),
                          (dist.ReduceOp.MAX, flags[0] | flags[1]), (dist.ReduceOp.MIN, flags[0] & flags[1])):
        t = flags[RANK].clone().to(DEV)
        dist.all_reduce(t, op=op)
        same(t, reference)
    c = (torch.arange(4) + 1j * (torch.arange(4) + RANK)).to(torch.complex64)
    t = c.to(DEV)
    dist.all_reduce(t)
    same(t, sum((torch.arange(4) + 1j * (torch.arange(4) + r)).to(torch.complex64) for r in range(SIZE)))
    for op in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR):
        t = rank_values(RANK, torch.int32).to(DEV)
        expect_error(lambda: dist.all_reduce(t, op=op), "cannot reduce with B")
    expect_error(lambda: dist.all_reduce(torch.ones(3, dtype=torch.int16, device=DEV)), "cannot reduce Short")
    expect_error(lambda: dist.all_reduce(torch.ones(2, dtype=torch.complex64, device=DEV), op=dist.ReduceOp.MAX),
                 "complex tensors")
    # An empty tensor is a no-op, on every rank alike.
    t = torch.empty(0, device=DEV)
    dist.all_reduce(t)
    # A large one (several MiB) goes through in one piece.
    big = torch.full((1 << 21,), float(RANK + 1)).to(DEV)
    dist.all_reduce(big)
    assert bool((big.cpu() == float(sum(range(1, SIZE + 1)))).all())
    print("all_reduce ok")


def check_broadcast_gather_scatter():
    for root in range(SIZE):
        t = rank_values(RANK, torch.float32).reshape(2, 3).to(DEV)
        dist.broadcast(t, src=root)
        same(t, rank_values(root, torch.float32).reshape(2, 3))
    x = rank_values(RANK, torch.float64, 5).to(DEV)
    outs = [torch.zeros(5, dtype=torch.float64, device=DEV) for _ in range(SIZE)]
    dist.all_gather(outs, x)
    for r in range(SIZE):
        same(outs[r], rank_values(r, torch.float64, 5))
    flat = torch.zeros(5 * SIZE, dtype=torch.float64, device=DEV)
    dist._all_gather_base(flat, x)
    same(flat, torch.cat([rank_values(r, torch.float64, 5) for r in range(SIZE)]))
    ins = [rank_values(RANK, torch.float32, 4) * (i + 1) for i in range(SIZE)]
    out = torch.zeros(4, device=DEV)
    dist.reduce_scatter(out, [i.to(DEV) for i in ins])
    same(out, sum(rank_values(r, torch.float32, 4) * (RANK + 1) for r in range(SIZE)))
    whole = torch.cat(ins).to(DEV)
    out = torch.zeros(4, device=DEV)
    dist._reduce_scatter_base(out, whole, op=dist.ReduceOp.MAX)
    same(out, torch.maximum(*[rank_values(r, torch.float32, 4) * (RANK + 1) for r in range(SIZE)]))
    print("broadcast, all_gather, reduce_scatter ok")


def check_send_recv():
    peer = 1 - RANK
    for sender in range(SIZE):
        t = torch.zeros(7, dtype=torch.int64, device=DEV)
        if RANK == sender:
            dist.send(rank_values(RANK, torch.int64, 7).to(DEV), dst=peer)
        else:
            dist.recv(t, src=peer)
            same(t, rank_values(peer, torch.int64, 7))
    # Two messages in a row match in order.
    if RANK == 0:
        dist.send(torch.full((3,), 1.0, device=DEV), dst=1)
        dist.send(torch.full((3,), 2.0, device=DEV), dst=1)
    else:
        a, b = torch.zeros(3, device=DEV), torch.zeros(3, device=DEV)
        dist.recv(a, src=0)
        dist.recv(b, src=0)
        same(a, torch.full((3,), 1.0))
        same(b, torch.full((3,), 2.0))
    dist.barrier()
    print("send/recv, barrier ok")


def check_bad_input():
    expect_error(lambda: dist.all_reduce(torch.ones(3)), "keel devices", "gloo")
    strided = torch.ones(4, 4, device=DEV)[:, 1]
    expect_error(lambda: dist.all_reduce(strided), "contiguous")
    conj = torch.ones(2, dtype=torch.complex64).conj().to(DEV)
    if conj.is_conj():
        expect_error(lambda: dist.all_reduce(conj), "conjugate")
    expect_error(lambda: dist.all_gather([torch.zeros(3, device=DEV)], torch.zeros(3, device=DEV)),
                 "output tensors expected")
    # The group still works after refused calls.
    t = torch.ones(3, device=DEV)
    dist.all_reduce(t)
    same(t, torch.full((3,), float(SIZE)))
    print("bad input refused ok")


def check_wait_does_not_block_the_host():
    # Rank 1 comes late: rank 0's wait() returns before the all-reduce ran,
    # and its stream still reads the reduced value.
    t = torch.full((4,), float(RANK + 1)).to(DEV)
    if RANK == 1:
        time.sleep(2.0)
    work = dist.all_reduce(t, async_op=True)
    start = time.monotonic()
    work.wait()
    waited = time.monotonic() - start
    if RANK == 0:
        assert not work.is_completed(), "wait() returned after the collective ran: it blocked the host"
        assert waited < 1.5, f"wait() took {waited:.2f} s"
    same(t, torch.full((4,), 3.0))
    assert work.is_completed() and work.is_success()
    fut = dist.all_reduce(t, async_op=True).get_future()
    value = fut.wait()
    same(value[0], torch.full((4,), 6.0))
    print(f"wait without blocking ok (rank {RANK} waited {waited * 1e3:.0f} ms)")


def check_the_current_stream_is_the_one_ordered():
    # The collective runs after what a side stream, current at the call,
    # enqueued before it; wait() orders that stream after it.
    side = keel_torch.Stream()
    with keel_torch.stream(side):
        t = torch.zeros(1 << 16, device=DEV)
        t.fill_(float(RANK + 1))
        dist.all_reduce(t)
        t.add_(torch.ones(1 << 16, device=DEV))
        total = t.cpu()
    assert bool((total == float(sum(range(1, SIZE + 1)) + 1)).all())
    print("current stream ordering ok")


def check_future_then():
    # Future.then runs its callback on a stream from the device's pool.
    t = torch.full((4,), float(RANK + 1)).to(DEV)
    fut = dist.all_reduce(t, async_op=True).get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2).wait()
    same(doubled, torch.full((4,), 6.0))
    print("future then ok")


def check_against_gloo():
    # Each collective on keel (the default group) and on CPU tensors through
    # gloo (a second group over the same processes): the same results, to the bit.
    gloo = dist.new_group(backend="gloo")

    def both(make, run, compare=True):
        k, c = [t.to(DEV) for t in make()], make()
        run(k, None)
        run(c, gloo)
        if compare:
            for kt, ct in zip(k, c):
                same(kt, ct)

    reduce_ops = (dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX)
    for dtype in (torch.float32, torch.float64, torch.int32, torch.int64):
        for root in range(SIZE):
            for op in reduce_ops:
                both(lambda: [rank_values(RANK, dtype) * 1.5 if dtype.is_floating_point else rank_values(RANK, dtype)],
                     lambda t, g: dist.reduce(t[0], dst=root, op=op, group=g), compare=RANK == root)
    print("reduce ok")
    for root in range(SIZE):
        n = 5
        def make_gather():
            outs = [torch.full((n,), -1.0) for _ in range(SIZE)] if RANK == root else []
            return [rank_values(RANK, torch.float32, n)] + outs
        def run_gather(t, g):
            dist.gather(t[0], gather_list=t[1:] if RANK == root else None, dst=root, group=g)
        both(make_gather, run_gather)
        def make_scatter():
            ins = [rank_values(r, torch.float64, n) * (root + 1) for r in range(SIZE)] if RANK == root else []
            return [torch.zeros(n, dtype=torch.float64)] + ins
        def run_scatter(t, g):
            dist.scatter(t[0], scatter_list=t[1:] if RANK == root else None, src=root, group=g)
        both(make_scatter, run_scatter)
    print("gather, scatter ok")
    # all_to_all_single: equal parts, then uneven splits of rows.
    both(lambda: [torch.arange(4 * SIZE, dtype=torch.float32).reshape(2 * SIZE, 2) + 100 * RANK,
                  torch.zeros(2 * SIZE, 2)],
         lambda t, g: dist.all_to_all_single(t[1], t[0], group=g))
    in_splits = [r + 1 + RANK for r in range(SIZE)]                # rows to rank r
    out_splits = [RANK + 1 + r for r in range(SIZE)]               # rows from rank r
    both(lambda: [torch.arange(sum(in_splits) * 3, dtype=torch.int64).reshape(-1, 3) + 1000 * RANK,
                  torch.zeros(sum(out_splits), 3, dtype=torch.int64)],
         lambda t, g: dist.all_to_all_single(t[1], t[0], out_splits, in_splits, group=g))
    # all_to_all with lists: gloo has no list form; its all_to_all_single of
    # the concatenation gives the reference.
    keel_in = [torch.full((r + 2,), float(10 * RANK + r)) for r in range(SIZE)]
    keel_out = [torch.zeros(RANK + 2) for _ in range(SIZE)]
    k_out = [t.to(DEV) for t in keel_out]
    dist.all_to_all(k_out, [t.to(DEV) for t in keel_in])
    ref_out = torch.zeros(sum(t.numel() for t in keel_out))
    dist.all_to_all_single(ref_out, torch.cat(keel_in), [t.numel() for t in keel_out],
                           [t.numel() for t in keel_in], group=gloo)
    same(torch.cat([t.cpu() for t in k_out]), ref_out)
    print("all_to_all ok")
    # The tensor forms of all_gather and reduce_scatter, against gloo's
    # all_gather and all_reduce.
    x = rank_values(RANK, torch.float32, 6)
    gathered = torch.zeros(6 * SIZE, device=DEV)
    dist.all_gather_into_tensor(gathered, x.to(DEV))
    parts = [torch.zeros(6) for _ in range(SIZE)]
    dist.all_gather(parts, x, group=gloo)
    same(gathered, torch.cat(parts))
    whole = torch.cat([rank_values(RANK, torch.float32, 3) * (i + 1) for i in range(SIZE)])
    mine = torch.zeros(3, device=DEV)
    dist.reduce_scatter_tensor(mine, whole.to(DEV))
    reduced = whole.clone()
    dist.all_reduce(reduced, group=gloo)
    same(mine, reduced[3 * RANK:3 * RANK + 3])
    # Refused input: a root that is no rank, splits that do not add up.
    expect_error(lambda: dist.all_to_all_single(torch.zeros(3, device=DEV), torch.zeros(3, device=DEV)),
                 "equal parts")
    expect_error(lambda: dist.all_to_all_single(torch.zeros(2 * SIZE, device=DEV), torch.zeros(2 * SIZE, device=DEV),
                                                [1] * SIZE, [2] * SIZE), "add up to")
    t = torch.ones(3, device=DEV)
    dist.all_reduce(t)
    same(t, torch.full((3,), float(SIZE)))
    print("all_gather_into_tensor, reduce_scatter_tensor ok")


def check_a_peer_gone_is_an_error():
    # Rank 1 leaves; rank 0's all-reduce fails within the timeout, and what
    # reads its result raises instead of returning rank 0's own data.
    dist.barrier()
    if RANK == 1:
        sys.stdout.flush()
        os._exit(0)
    t = torch.full((4,), 5.0).to(DEV)
    dist.all_reduce(t)
    message = expect_error(lambda: t.cpu())
    print("read after a failed all_reduce raised:", message.splitlines()[0])
    message = expect_error(lambda: dist.all_reduce(torch.ones(2, device=DEV)))
    print("the next all_reduce raised:", message.splitlines()[0])
    os._exit(0)  # the communicator's peer is gone: leave without the goodbye


def check_a_device_fault_then_a_new_group():
    # Rank 0's device faults before an all-reduce: the operation never sends
    # stale data, and fails the group on both ranks at once (not at the
    # timeout). Once the fault is known, an operation of another group
    # raises at the call, naming it, and fails that group too. Both groups
    # stay failed after recover(); every rank recovers its device and makes
    # a new group, which works.
    t = torch.full((4,), 1.0 + RANK, device=DEV)
    dist.all_reduce(t)
    same(t, torch.full((4,), 3.0))
    other = dist.new_group(backend="keel")
    x = torch.ones(2, device=DEV)
    dist.all_reduce(x, group=other)
    same(x, torch.full((2,), 2.0))
    late = [torch.ones(2, device=DEV) for _ in range(2)]  # made before the fault
    if RANK == 0:
        keel_torch.fail_current_stream(DEV, "rank 0's device")
    # Rank 0 raises at the call or when it reads, rank 1 when it reads.
    message = expect_error(lambda: (dist.all_reduce(t), t.cpu()))
    print("read after the fault raised:", message.splitlines()[0])
    fault = "rank 0's device" if RANK == 0 else "comm 'keel_torch/comm/0'"
    if RANK == 0:
        # Its current stream is known to have failed: the call raises.
        message = expect_error(lambda: dist.all_reduce(late[0], group=other), fault, "make a new group")
    else:
        # Its operation may be enqueued before rank 0's failure of the
        # group arrives: then reading its result raises.
        message = expect_error(lambda: (dist.all_reduce(late[0], group=other), late[0].cpu()))
    print("the other group raised:", message.splitlines()[0])
    cleared = keel_torch.recover(DEV)
    assert cleared, "recover() found no failed stream"
    message = expect_error(lambda: dist.all_reduce(torch.ones(2, device=DEV)), "make a new group")
    print("the failed group raised:", message.splitlines()[0])
    message = expect_error(lambda: dist.all_reduce(late[1], group=other), fault, "make a new group")
    print("the other failed group raised:", message.splitlines()[0])
    # A new group (1.13's init_process_group after destroy_process_group()
    # waits forever at its store barrier while another group still holds
    # the old store, as `other` does here).
    fresh = dist.new_group(backend="keel")
    t = torch.full((4,), 1.0 + RANK, device=DEV)  # the old t's data is unknown
    dist.all_reduce(t, group=fresh)
    same(t, torch.full((4,), 3.0))
    print("a new group after recover() ok")


SCENARIOS = {
    "collectives": [check_all_reduce, check_broadcast_gather_scatter, check_send_recv, check_bad_input,
                    check_wait_does_not_block_the_host, check_the_current_stream_is_the_one_ordered,
                    check_future_then],
    "peer_gone": [check_a_peer_gone_is_an_error],
    "device_fault": [check_a_device_fault_then_a_new_group],
    "against_gloo": [check_against_gloo],
}


def main():
    scenario = sys.argv[1]
    timeout = datetime.timedelta(seconds=float(os.environ.get("KEEL_TEST_PG_TIMEOUT", "60")))
    dist.init_process_group(backend="keel", timeout=timeout)
    assert dist.get_backend() == "keel"
    for check in SCENARIOS[scenario]:
        check()
    dist.destroy_process_group()
    print(f"rank {RANK} done")


if __name__ == "__main__":
    main()
