"""The ONNX embedder's batches: longest first, at most the batch size, and no text padded to
more than twice its own length."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from retrieval.embedding.onnx_model import length_batches


def test_a_few_long_texts_are_not_batched_with_short_ones() -> None:
    lengths = [12] * 30 + [256, 256] + [9] * 32  # a call of 64 with two texts at the limit
    batches = length_batches(lengths, 64)
    assert batches[0] == [30, 31]
    assert sorted(batches[1]) == list(range(30)) + list(range(32, 64))  # 9 is over half of 12
    assert length_batches([20] * 130, 64) == [list(range(64)), list(range(64, 128)), [128, 129]]
    assert length_batches([], 64) == []


@given(st.lists(st.integers(1, 256), max_size=300), st.integers(1, 80))
def test_every_text_once_longest_first_none_under_half_its_batch(
    lengths: list[int], batch_size: int
) -> None:
    batches = length_batches(lengths, batch_size)
    order = [index for batch in batches for index in batch]
    assert sorted(order) == list(range(len(lengths)))
    assert [lengths[i] for i in order] == sorted(lengths, reverse=True)
    for batch in batches:
        assert 1 <= len(batch) <= batch_size
        assert all(2 * lengths[i] >= lengths[batch[0]] for i in batch)
