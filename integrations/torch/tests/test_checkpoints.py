"""Checkpoints: torch.save/torch.load (with and without map_location) and
pickle of keel tensors, parameters and state_dicts round-trip, and a
checkpoint saved from keel loads on the CPU and back."""
import copy
import io
import pickle

import torch

import keel_torch
from conftest import assert_same


def saved(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return buffer


def test_a_tensor_round_trips_through_torch_save(dev):
    x = torch.randn(4, 5)
    k = x.to(dev)
    loaded = torch.load(saved(k))
    assert loaded.device == dev
    assert torch.equal(loaded.cpu(), x)
    view = k[1:3, ::2]
    loaded = torch.load(saved(view))
    assert loaded.device == dev
    assert torch.equal(loaded.cpu(), x[1:3, ::2])


def test_map_location_moves_a_checkpoint_between_cpu_and_keel(dev):
    x = torch.randn(3, 3)
    on_cpu = torch.load(saved(x.to(dev)), map_location="cpu")
    assert on_cpu.device.type == "cpu" and torch.equal(on_cpu, x)
    on_keel = torch.load(saved(x), map_location=dev)
    assert on_keel.device == dev and torch.equal(on_keel.cpu(), x)
    on_keel = torch.load(saved(x), map_location=lambda storage, location: storage)
    assert on_keel.device.type == "cpu"
    assert torch.load(saved(x.to(dev)), map_location={str(dev): "cpu"}).device.type == "cpu"


def test_a_state_dict_round_trips_and_loads_on_the_cpu_and_back(dev):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3), torch.nn.Flatten(),
                                torch.nn.Linear(3 * 4 * 4, 2)).to(dev)
    model(torch.randn(2, 2, 6, 6).to(dev))  # running statistics change
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(2, 2, 6, 6).to(dev)).sum().backward()
    optimizer.step()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
    loaded = torch.load(saved(state))
    for name, t in model.state_dict().items():
        assert loaded["model"][name].device == dev, name
        assert torch.equal(loaded["model"][name].cpu(), t.cpu()), name
    cpu_model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3), torch.nn.Flatten(),
                                    torch.nn.Linear(3 * 4 * 4, 2))
    cpu_model.load_state_dict(torch.load(saved(state), map_location="cpu")["model"])
    back = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3), torch.nn.Flatten(),
                               torch.nn.Linear(3 * 4 * 4, 2)).to(dev)
    back.load_state_dict(torch.load(saved(cpu_model.state_dict()), map_location=dev))
    for (name, a), b in zip(model.state_dict().items(), back.state_dict().values()):
        assert b.device == dev
        assert torch.equal(a.cpu(), b.cpu()), name
    new_optimizer = torch.optim.Adam(back.parameters())
    new_optimizer.load_state_dict(loaded["optimizer"])
    for s in new_optimizer.state.values():
        assert s["exp_avg"].device == dev


def test_pickle_and_deepcopy_of_tensors_and_parameters(dev):
    x = torch.randn(5)
    k = x.to(dev)
    p = torch.nn.Parameter(x.to(dev))
    for obj in (k, p, {"a": k, "b": [p]}):
        back = pickle.loads(pickle.dumps(obj))
        assert back is not obj
    back = pickle.loads(pickle.dumps(k))
    assert back.device == dev and torch.equal(back.cpu(), x)
    back = pickle.loads(pickle.dumps(p))
    assert isinstance(back, torch.nn.Parameter) and back.requires_grad and back.device == dev
    assert torch.equal(back.detach().cpu(), x)
    copied = copy.deepcopy(torch.nn.Linear(3, 2).to(dev))
    assert copied.weight.device == dev


def test_views_of_one_storage_stay_one_storage_through_save_and_load(dev):
    base = torch.arange(12.0).to(dev)
    first, row = base[2:8], base.view(3, 4)[1]
    for where in (None, "cpu"):
        loaded = torch.load(saved({"first": first, "row": row, "base": base}), map_location=where)
        # One write through the base shows through both views, as before saving.
        loaded["base"][4:5].fill_(100.0)
        assert loaded["first"].cpu()[2].item() == 100.0, where
        assert loaded["row"].cpu()[0].item() == 100.0, where
        torch.testing.assert_close(base.cpu(), torch.arange(12.0))  # the original is untouched


def test_each_save_copies_the_values_a_storage_has_then(dev):
    k = torch.zeros(4).to(dev)
    first = saved([k, k[1:]])
    k.fill_(5.0)
    second = saved([k, k[1:]])
    assert torch.load(first)[1].cpu().tolist() == [0.0, 0.0, 0.0]
    assert torch.load(second)[1].cpu().tolist() == [5.0, 5.0, 5.0]
