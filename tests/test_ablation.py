"""Self-tests of latent_instruments.ablation on a toy residual block of known output."""

import pytest
import torch
from torch import nn

from latent_instruments.ablation import subtract_child_output


class Half(nn.Module):
    def forward(self, x):
        return 0.5 * x


class Square(nn.Module):
    def forward(self, x):
        return x**2


class ToyBlock(nn.Module):
    """y = x + attn(x) + mlp(x + attn(x)), the pre-LN residual layout without the norms."""

    def __init__(self):
        super().__init__()
        self.attn, self.mlp = Half(), Square()

    def forward(self, x):
        mid = x + self.attn(x)
        return (mid + self.mlp(mid),)  # HF blocks may return tuples


def test_dropping_attention_keeps_the_mlp_that_saw_it():
    block, x = ToyBlock(), torch.tensor([2.0])
    with subtract_child_output(block, block.attn):
        (y,) = block(x)
    assert y.item() == pytest.approx(2.0 + 3.0**2)  # x + mlp(x + attn(x))


def test_dropping_the_mlp():
    block, x = ToyBlock(), torch.tensor([2.0])
    with subtract_child_output(block, block.mlp):
        (y,) = block(x)
    assert y.item() == pytest.approx(3.0)


def test_hooks_are_removed_on_exit():
    block, x = ToyBlock(), torch.tensor([2.0])
    with subtract_child_output(block, block.mlp):
        pass
    assert block(x)[0].item() == pytest.approx(12.0)


def test_a_child_outside_the_parent_is_an_error():
    block, stranger = ToyBlock(), Half()
    with pytest.raises(RuntimeError, match="did not run"), subtract_child_output(block, stranger):
        block(torch.tensor([1.0]))
