"""Helpers shared by the attention tests: random inputs, masks, step-by-step decoding."""

import torch


def randomize(module, std=0.3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * std)
    return module


def causal_mask(length):
    return torch.triu(torch.full((length, length), float("-inf")), 1)


def padding_mask(lengths, max_len, left=False):
    """(B, T) bool, True at padding; right padding by default, left like fairseq's sources."""
    positions = torch.arange(max_len).unsqueeze(0)
    lengths = torch.tensor(lengths).unsqueeze(1)
    if left:
        return positions < (max_len - lengths)
    return positions >= lengths


def decode_step_by_step(attn, x, encoder_out=None, encoder_padding_mask=None, reorder=None):
    """Feed x (T, B, C) one step at a time through attn with an incremental state.

    Self-attention when encoder_out is None, else cross-attention over encoder_out (static_kv).
    reorder=(step, new_order): after that many steps, reorder the state like beam search does and
    continue with the reordered inputs. Returns the outputs (T, B, C) in the final order.
    """
    state = {}
    outputs = []
    for t in range(x.size(0)):
        if reorder is not None and t == reorder[0]:
            attn.reorder_incremental_state(state, reorder[1])
            x = x.index_select(1, reorder[1])
            if encoder_out is not None:
                encoder_out = encoder_out.index_select(1, reorder[1])
                if encoder_padding_mask is not None:
                    encoder_padding_mask = encoder_padding_mask.index_select(0, reorder[1])
            outputs = [o.index_select(1, reorder[1]) for o in outputs]
        step = x[t : t + 1]
        if encoder_out is None:
            out, _ = attn(step, step, step, incremental_state=state, need_weights=False)
        else:
            out, _ = attn(
                step,
                encoder_out,
                encoder_out,
                key_padding_mask=encoder_padding_mask,
                incremental_state=state,
                static_kv=True,
                need_weights=False,
            )
        outputs.append(out)
    return torch.cat(outputs, dim=0)


def assert_padding_invariant(self_attn, cross_attn, dim, short=4, long=7):
    """A left-padded source sentence of SHORT tokens in a batch padded to LONG gives the same
    encoder self-attention output, and the same decoder-to-encoder attention output for a
    query, as the sentence alone (fairseq left-pads sources)."""
    s = torch.randn(short, 1, dim)
    alone, _ = self_attn(s, s, s, need_weights=False)
    batch = torch.randn(long, 2, dim)
    batch[long - short :, 1:2] = s
    mask = padding_mask([long, short], long, left=True)
    out, _ = self_attn(batch, batch, batch, key_padding_mask=mask, need_weights=False)
    torch.testing.assert_close(out[long - short :, 1:2], alone, atol=1e-5, rtol=1e-5)
    y = torch.randn(3, 1, dim)
    cross_alone, _ = cross_attn(y, s, s, need_weights=False)
    y2 = torch.cat([y, torch.randn(3, 1, dim)], dim=1)
    batch2 = torch.randn(long, 2, dim)
    batch2[long - short :, 0:1] = s
    mask2 = padding_mask([short, long], long, left=True)
    cross, _ = cross_attn(y2, batch2, batch2, key_padding_mask=mask2, need_weights=False)
    torch.testing.assert_close(cross[:, 0:1], cross_alone, atol=1e-5, rtol=1e-5)
