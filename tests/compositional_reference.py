"""The float64 re-statement of compositional attention (docs/method.md §1) that the attention
and official-parity tests compare the module against, a small module of it, and deterministic
Gumbel noise for comparing the Gumbel option with it."""

import math

import torch
from attention_testing import randomize

from fairseq_plugins.modules.compositional_attention import CompositionalAttention

D = 32


def reference(m, query, key, key_padding_mask=None, attn_mask=None, noise=None, search_noise=None):
    """The six equations with explicit loops over searches i and retrievals j, and the official
    options: retrieval query from the search query (q-compose), learned keys (dot or a network on
    [q_i ; key_j]), Gumbel noise ``noise`` (B, S, Tq, R) added to the value-score logits in
    training (and at evaluation with gumbel_in_eval), and with gumbel_search ``search_noise``
    (B, S, Tq, Tk) to the search logits, both over the temperature. Only the dot scorers divide the retrieval
    query by sqrt(d_s) (docs/official-code.md A3.4), and legacy mlp modules (older checkpoints)."""
    S, R, dh, dv, ds = (
        m.num_searches,
        m.num_retrievals,
        m.head_dim,
        m.value_dim,
        m.retrieval_qk_dim,
    )
    X, Xk = query.transpose(0, 1), key.transpose(0, 1)  # (B, T, d)

    def part(linear, x, lo, hi):
        return x @ linear.weight[lo:hi].T + linear.bias[lo:hi]

    mask = torch.zeros(X.size(0), X.size(1), Xk.size(1))
    if attn_mask is not None:
        mask = mask + attn_mask
    if key_padding_mask is not None:
        mask = mask.masked_fill(key_padding_mask.unsqueeze(1), float("-inf"))
    dot_scorer = m.scoring in ("dot", "learned-key")
    legacy = m.scoring == "mlp" and bool(m.mlp_query_scaled)
    query_scale = 1 / math.sqrt(ds) if dot_scorer or legacy else 1.0
    heads = []
    for i in range(S):
        Qi = part(m.q_proj, X, i * dh, (i + 1) * dh)
        Ki = part(m.k_proj, Xk, i * dh, (i + 1) * dh)
        search_logits = Qi @ Ki.transpose(1, 2) / math.sqrt(dh) + mask
        if m.gumbel_search and (m.training or m.gumbel_in_eval):
            search_logits = (search_logits + search_noise[:, i]) / m.gumbel_temperature
        Ai = torch.softmax(search_logits, dim=-1)
        if m.query_from_search:  # one Linear(d_h, d_s) shared by the searches
            qi = m.retrieval_query_proj(Qi / math.sqrt(dh)) * query_scale
        else:
            qi = part(m.retrieval_query_proj, X, i * ds, (i + 1) * ds) * query_scale
        O, scores = [], []
        for j in range(R):
            Oij = Ai @ part(m.v_proj, Xk, j * dv, (j + 1) * dv)
            if m.scoring == "dot":
                kij = m.retrieval_key_proj(Oij)
                scores.append((qi * kij).sum(-1))
            elif m.scoring == "learned-key":
                scores.append(qi @ m.retrieval_keys[j])
            elif m.scoring == "learned-key-mlp":  # query first, then the key
                key_j = m.retrieval_keys[j].expand(qi.shape)
                scores.append(m.retrieval_scorer(torch.cat([qi, key_j], dim=-1)).squeeze(-1))
            else:
                scores.append(m.retrieval_scorer(torch.cat([Oij, qi], dim=-1)).squeeze(-1))
            O.append(Oij)
        logits = torch.stack(scores, dim=-1)  # (B, Tq, R)
        if m.gumbel and (m.training or m.gumbel_in_eval):
            logits = (logits + noise[:, i]) / m.gumbel_temperature
        c = torch.softmax(logits, dim=-1)
        heads.append(sum(c[..., j : j + 1] * O[j] for j in range(R)))
    return m.out_proj(torch.cat(heads, dim=-1)).transpose(0, 1)


def make(cross=False, **kwargs):
    kwargs.setdefault("retrieval_qk_dim", 16)
    m = CompositionalAttention(
        D, self_attention=not cross, encoder_decoder_attention=cross, **kwargs
    )
    return randomize(m).eval()


def known_noise(bsz, searches, length, retrievals, dtype=torch.float32):
    """Deterministic 'Gumbel' noise (B, S, T, R) that depends on the search, the position and the
    retrieval but not on the batch row, so that padding invariance can be checked with it."""
    s = torch.arange(searches, dtype=dtype).view(1, -1, 1, 1)
    t = torch.arange(length, dtype=dtype).view(1, 1, -1, 1)
    r = torch.arange(retrievals, dtype=dtype).view(1, 1, 1, -1)
    return (1.7 * torch.sin(3.1 * s + 1.3 * t + 2.3 * r)).expand(bsz, -1, -1, -1).contiguous()


def known_noise_sampler(offset=None):
    """A sampler of known_noise for the rows of logits (B, S, T, last); with offset=[t] (a list),
    positions continue from t (step-by-step decoding) and t advances."""

    def sample(logits):
        bsz, searches, length, last = logits.shape
        start = 0 if offset is None else offset[0]
        noise = known_noise(bsz, searches, start + length, last, logits.dtype)
        if offset is not None:
            offset[0] += length
        return noise[:, :, start:]

    return sample


def inject_noise(m, offset=None):
    """Replace the module's Gumbel sampler of the value scores (B, S, T, R) by known_noise."""
    m.sample_gumbel = known_noise_sampler(offset)
    return m


def inject_search_noise(m, offset=None):
    """As inject_noise, for the search logits (B, S, Tq, Tk): known_noise by query position and
    key index, so that a decoding step sees the rows of the full forward."""
    m.sample_search_gumbel = known_noise_sampler(offset)
    return m
