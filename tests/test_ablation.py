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


def test_the_attention_residual_removed_leaves_h_equal_to_attn_of_x_in_each_of_two_threads():
    """S3.11's ablation on the toy block: h = attn(x) (here 0.5 x), so y = h + h² with x's own residual gone. In two
    threads at once, as ``models.forwards.side_by_side`` runs descents, each pass subtracts its own thread's block
    input, never the other's: two inputs, hundreds of passes each, give exactly the one-thread outputs."""
    from concurrent.futures import ThreadPoolExecutor

    from latent_instruments.ablation import attention_residual_removed

    block = ToyBlock()
    x = torch.tensor([[1.0, 2.0]])
    with attention_residual_removed(block, block.attn):
        (y,) = block(x)
        torch.testing.assert_close(y, 0.5 * x + (0.5 * x) ** 2)
        inputs = [x, torch.tensor([[-3.0, 5.0]])]
        alone = [block(v)[0] for v in inputs]
        with ThreadPoolExecutor(2) as threads:
            together = list(threads.map(lambda v: [block(v)[0] for _ in range(300)], inputs))
    assert all(torch.equal(out, alone[i]) for i in range(2) for out in together[i])
    (y,) = block(x)
    torch.testing.assert_close(y, x + 0.5 * x + (x + 0.5 * x) ** 2)  # the residual is back after
