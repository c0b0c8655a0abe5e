"""Self-tests that every instrument stays on its input's device (CUDA runs) and gives the same numbers there.

A CPU-only machine cannot run on CUDA, so two stand-ins catch device bugs here:

* inputs on the ``meta`` device (shapes only, no data): every op must keep to
  meta, and the outputs must come back on meta with the documented shapes;
* inputs on the CPU with ``meta`` as the *default* device: a tensor made
  without an explicit ``device=`` lands on meta and is caught, while the
  numbers, still computed on the CPU, must equal those of a plain run, bit for
  bit.

Both run under :class:`DeviceMonitor`, which sees every torch call and fails on
the first one that mixes devices or returns a tensor off the input's device.
The one exception is a draw from a seeded generator: it is made on the
generator's own device (the callers' CPU generator), so that one seed gives the
same numbers wherever the data lives, and must then be moved. With CUDA, a
last test runs each instrument there and compares it with the CPU.
"""

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, fields, is_dataclass

import numpy as np
import pytest
import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

from latent_instruments import decoding, distances, inversion, normalization, spectra
from latent_instruments.distances import hellinger_distance
from latent_instruments.decoding import decode_top_k, pseudo_inverse, pseudo_inverse_decode
from latent_instruments.inversion import Inversion, InversionConfig, invert
from latent_instruments.normalization import relative_norm_change, rotate_to_cosine
from latent_instruments.spectra import LogBins, fit_power_law, power_spectral_density

MOVES = {"to", "cpu", "cuda", "copy_"}  # the calls that may take a tensor from one device to another


class DeviceLeak(AssertionError):
    """A torch call inside an instrument left the input's device."""


class DeviceMonitor(TorchFunctionMode):
    """Fails on the first torch call that mixes devices or returns a tensor off ``device``.

    A call with ``generator=`` may also return tensors on the generator's device.
    """

    def __init__(self, device: torch.device):
        super().__init__()
        self.device = torch.device(device)
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
        given = {t.device for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
        if len(given) > 1 and getattr(func, "__name__", "") not in MOVES:
            raise DeviceLeak(f"{name} mixes tensors on {sorted(map(str, given))} (instrument input on {self.device})")
        out = func(*args, **kwargs)
        self.calls += 1
        generator = kwargs.get("generator")
        allowed = {self.device} | ({generator.device} if isinstance(generator, torch.Generator) else set())
        for t in pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.device not in allowed:
                raise DeviceLeak(f"{name} returned a tensor on {t.device}, not on the input's device {self.device}")
        return out


@dataclass(frozen=True)
class Case:
    """One instrument call: inputs built on a device (unmonitored), then the call itself (monitored).

    Attributes:
        make: device -> keyword inputs; tensors on that device, generators on the CPU as callers pass them.
        call: the instrument applied to those inputs.
        shapes: the documented shape of each output tensor, in :func:`outputs` order.
        on_meta: False where the instrument needs values (a data-dependent check), so cannot run on meta.
    """

    make: Callable[[torch.device], dict]
    call: Callable[..., object]
    shapes: tuple[tuple[int, ...], ...]
    on_meta: bool = True


def _randn(*shape: int, seed: int, device, dtype=torch.float64) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype).to(device)


def _layernorm(d_model: int, device) -> nn.LayerNorm:
    norm = nn.LayerNorm(d_model)
    with torch.no_grad():
        norm.weight.copy_(1 + 0.3 * _randn(d_model, seed=5, device="cpu", dtype=torch.float32))
        norm.bias.copy_(0.1 * _randn(d_model, seed=6, device="cpu", dtype=torch.float32))
    return norm.to(device)


def _rotation(d_model: int, device) -> torch.Tensor:
    q, _ = torch.linalg.qr(_randn(d_model, d_model, seed=7, device="cpu", dtype=torch.float32))
    return q.to(device)


def _invert_inputs(device, representation: str = "indirect") -> dict:
    q = _rotation(16, device)
    return {"layer_output": lambda e: (torch.tanh(e) + 0.5 * e) @ q,
            "token_ids": torch.randint(0, 12, (2, 5), generator=torch.Generator().manual_seed(8)).to(device),
            "embedding_matrix": _randn(12, 16, seed=13, device=device, dtype=torch.float32),
            "generator": torch.Generator().manual_seed(9),
            "config": InversionConfig(representation=representation, steps=3), "k": 2}


def _power_law(device) -> dict:
    freqs = torch.fft.rfftfreq(32, dtype=torch.float64)
    psd = freqs.clamp_min(freqs[1]) ** -1.3 * (1 + 0.1 * torch.rand(17, generator=torch.Generator().manual_seed(4),
                                                                    dtype=torch.float64))
    return {"bins": LogBins.of(freqs), "psd": psd.to(device)}  # the fit reads its values on the CPU, in numpy


CASES = {
    "rotate_to_cosine": Case(
        lambda d: {"x": _randn(8, 32, seed=0, device=d), "cosine": 0.52, "generator": torch.Generator().manual_seed(1)},
        rotate_to_cosine, ((8, 32),)),
    "rotate_to_cosine_float32": Case(
        lambda d: {"x": _randn(8, 32, seed=0, device=d, dtype=torch.float32), "cosine": -0.3,
                   "generator": torch.Generator().manual_seed(1)},
        rotate_to_cosine, ((8, 32),)),
    "relative_norm_change": Case(
        lambda d: {"norm": _layernorm(32, d), "x": _randn(8, 32, seed=2, device=d, dtype=torch.float32),
                   "x_other": 10 * _randn(8, 32, seed=3, device=d, dtype=torch.float32)},
        relative_norm_change, ((8,),)),
    "power_spectral_density": Case(
        lambda d: {"hidden": _randn(3, 17, 8, seed=4, device=d, dtype=torch.float32)},
        power_spectral_density, ((9,), (3, 9))),
    "fit_power_law": Case(_power_law, fit_power_law, (), on_meta=False),  # boolean mask, .item(): needs values
    "hellinger_distance": Case(
        lambda d: {"p": torch.softmax(_randn(4, 10, seed=10, device=d), -1),
                   "q": torch.softmax(_randn(10, seed=11, device=d), -1)},
        hellinger_distance, ((4,),), on_meta=False),  # `if (p < 0).any()` needs values
    "pseudo_inverse_decode": Case(
        lambda d: {"embeddings": _randn(2, 5, 16, seed=12, device=d, dtype=torch.float32),
                   "embedding_matrix": _randn(12, 16, seed=13, device=d, dtype=torch.float32)},
        pseudo_inverse_decode, ((2, 5),)),
    "pseudo_inverse_decode_allowed": Case(
        lambda d: {"embeddings": _randn(2, 5, 16, seed=12, device=d, dtype=torch.float32),
                   "embedding_matrix": _randn(12, 16, seed=13, device=d, dtype=torch.float32),
                   "allowed": (torch.arange(12) % 3 != 0).to(d)},
        pseudo_inverse_decode, ((2, 5),)),
    "pseudo_inverse_decode_allowed_on_cpu": Case(
        lambda d: {"embeddings": _randn(2, 5, 16, seed=12, device=d, dtype=torch.float32),
                   "embedding_matrix": _randn(12, 16, seed=13, device=d, dtype=torch.float32),
                   "allowed": torch.arange(12) % 3 != 0},  # a mask left on the CPU is moved, not mixed in
        pseudo_inverse_decode, ((2, 5),)),
    "pseudo_inverse": Case(lambda d: {"embedding_matrix": _randn(40, 16, seed=13, device=d, dtype=torch.float32)},
                           pseudo_inverse, ((16, 16), (40, 16))),
    "decode_top_k": Case(
        lambda d: {"scores": _randn(2, 5, 16, seed=12, device=d, dtype=torch.float32), "k": 3,
                   "allowed": torch.arange(40) % 3 != 0,  # a mask left on the CPU is moved, not mixed in
                   "pinv": pseudo_inverse(_randn(40, 16, seed=13, device=d, dtype=torch.float32))},
        decode_top_k, ((2, 5, 3),)),
    "invert": Case(_invert_inputs, invert, ((2, 5, 16), (2, 5, 2), (2,), (2,), (2,), (2,), (2,))),
    "invert_direct": Case(lambda d: _invert_inputs(d, "direct"), invert,
                          ((2, 5, 12), (2, 5, 2), (2,), (2,), (2,), (2,), (2,)), on_meta=False),  # one_hot reads ids
}


def outputs(result) -> list:
    """An instrument's result as a flat list of tensors and floats."""
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, Inversion):
        return [result.inputs, result.top_k, result.token_accuracy, result.exact_match, result.output_distance,
                result.shifted_distance, result.loss]
    if is_dataclass(result):
        return [getattr(result, f.name) for f in fields(result)]
    return list(result)


def run(case: Case, device, monitor_device=None, default_device=None) -> list:
    """Build the inputs on ``device``, then call the instrument under a DeviceMonitor.

    ``default_device``, if given, is torch's default device during the call only.
    """
    inputs = case.make(torch.device(device))
    monitor = DeviceMonitor(monitor_device or device)
    with torch.device(default_device) if default_device else nullcontext(), monitor:
        result = outputs(case.call(**inputs))
    assert monitor.calls > 0  # the monitor did see the instrument's torch calls
    return result


@pytest.fixture
def meta_safe_finiteness_check(monkeypatch):
    """require_finite reads values (.item()), which meta tensors lack: keep only its device check."""

    def shape_only(tensor: torch.Tensor, what: str) -> None:
        assert tensor.is_meta, f"{what} is on {tensor.device}, not meta"

    for module in (normalization, inversion, decoding, spectra, distances):
        monkeypatch.setattr(module, "require_finite", shape_only)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.on_meta])
def test_meta_inputs_give_meta_outputs_of_the_documented_shape(name, meta_safe_finiteness_check):
    case = CASES[name]
    result = run(case, "meta")
    assert [t.device.type for t in result] == ["meta"] * len(case.shapes)
    assert [tuple(t.shape) for t in result] == list(case.shapes)


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_tensor_is_made_off_the_input_device_and_cpu_numbers_stay_the_same(name):
    """Default device meta, inputs on the CPU: a tensor made without device= would land on meta."""
    case = CASES[name]
    reference = outputs(case.call(**case.make(torch.device("cpu"))))
    result = run(case, "cpu", default_device="meta")
    assert len(result) == len(reference)
    for got, want in zip(result, reference, strict=True):
        if isinstance(want, torch.Tensor):
            assert got.device.type == "cpu" and got.dtype == want.dtype
            assert torch.equal(got, want)
        else:  # fit_power_law's numpy arrays: exact too (closed-form fit, no LAPACK)
            assert np.array_equal(got, want)


def test_the_monitor_catches_a_draw_left_on_the_cpu():
    """The monitor itself: CPU noise added to a meta tensor, as rotate_to_cosine once did, is a leak."""
    x = torch.empty(3, 4, device="meta")
    with pytest.raises(DeviceLeak, match="mixes tensors on"), DeviceMonitor(x.device):
        _ = x + torch.randn(x.shape, generator=torch.Generator().manual_seed(0))
    with pytest.raises(DeviceLeak, match="returned a tensor on meta"), torch.device("meta"), DeviceMonitor("cpu"):
        torch.zeros(3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_gives_the_cpu_numbers(name):
    case = CASES[name]
    cpu = run(case, "cpu")
    cuda = run(case, "cuda", monitor_device=torch.device("cuda", torch.cuda.current_device()))
    for got, want in zip(cuda, cpu, strict=True):
        if isinstance(want, torch.Tensor):
            assert got.is_cuda
            if want.dtype in (torch.int64, torch.bool):
                assert torch.equal(got.cpu(), want)
            else:
                tol = 1e-10 if want.dtype == torch.float64 and name != "relative_norm_change" else 1e-4
                torch.testing.assert_close(got.cpu(), want, rtol=tol, atol=tol)
        else:
            assert got == pytest.approx(want, rel=1e-9, abs=1e-12)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_seed_gives_the_same_random_start_on_cuda():
    """N = 0 keeps the random start: with a CPU generator it is the same numbers on either device."""
    cpu, cuda = (invert(**(_invert_inputs(d) | {"config": InversionConfig(steps=0)})) for d in ("cpu", "cuda"))
    assert torch.equal(cuda.inputs.cpu(), cpu.inputs)
