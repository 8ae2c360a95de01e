"""The Contextual Retrieval Task of Mittal et al. (Compositional Attention, ICLR 2022), the data
side: docs/contextual-retrieval-task.md §1, which follows the official
``Contextual_Retrieval_Task/data.py``.

An example is a set of n objects. Object i has S* search features x_i, R* retrieval features z_i
(all N(0, 1)) and a retrieval preference rho_i in {0..R*-1}^S*. Ground-truth search s finds the
other object nearest in feature s, j_s(i) = argmin_{j != i} |x_{j,s} - x_{i,s}|, and the target is
y_i = sum_s alpha_s z_{j_s(i), rho_{i,s}} with the official fixed coefficients alpha. The model
sees u_i = [x_i, z_i, onehot(rho_{i,0}), ..., onehot(rho_{i,S*-1})].

Random draws follow the official order (§1.7), so with ``np.random.RandomState(seed)`` a
batch equals the official ``dataset(...)`` / ``dataset_ood(...)`` after ``np.random.seed(seed)``,
bit for bit: i.i.d. ``randn(B, n, S*+R*)`` then ``choice(R*, B*n*S*)``; OoD ``randn`` then
``choice(|train|, B*n)`` then ``choice(|test|, B*n)`` (both index draws, whichever split is asked).
"""

import itertools
from dataclasses import dataclass

import numpy as np

# The official data.py's coefficients ("randomly sampled from U(-1, 1)"); the first S* are used.
ALPHA = (
    -0.71347752, -0.6062312, 0.66062073, -0.61213017, -0.82631877,
    0.75908621, -0.36274866, 0.84383333, -0.37908235, 0.46539368,
    0.98675292, 0.20388434, -0.78718797, -0.74316581, 0.11539548,
    0.35559215, 0.32584524, 0.58590426, 0.95284985, -0.77999937,
    -0.660806, -0.35542737, 0.93532822, 0.75049373, -0.27825577,
)  # fmt: skip

OOD_TRAIN_FRACTION = 0.8  # the official split keeps floor(0.8 N) tuples for training
SETTINGS = {"2x4": (2, 4), "4x8": (4, 8), "4x16": (4, 16)}  # the paper's three (S*, R*)


class RetrievalSettingError(ValueError):
    """A task setting the generator cannot produce; the message names the flag."""


@dataclass(frozen=True)
class RetrievalSetting:
    """S* ground-truth searches, R* retrievals, n objects; alpha (or all ones with no_coeff)."""

    searches: int
    retrievals: int
    objects: int = 10
    no_coeff: bool = False

    def __post_init__(self):
        if not 1 <= self.searches <= len(ALPHA):
            raise RetrievalSettingError(
                f"--gt-searches must be in 1..{len(ALPHA)} (the official coefficients alpha "
                f"number {len(ALPHA)}; got {self.searches})"
            )
        if self.retrievals < 1:
            raise RetrievalSettingError(f"--gt-retrievals must be >= 1 (got {self.retrievals})")
        if self.objects < 2:
            raise RetrievalSettingError(
                f"--num-objects must be >= 2 (a search finds another object; got {self.objects})"
            )

    @property
    def token_dim(self):
        """S* + R* + S* R*: features, then the preference one-hots in search order."""
        return self.searches + self.retrievals + self.searches * self.retrievals

    @property
    def coefficients(self):
        return np.ones(self.searches) if self.no_coeff else np.asarray(ALPHA[: self.searches])


def preference_tuples(setting):
    """All (rho_0, ..., rho_{S*-1}) in lexicographic order, first search most significant."""
    return np.asarray(
        list(itertools.product(range(setting.retrievals), repeat=setting.searches)), dtype=np.int64
    )


def ood_split(setting):
    """(training tuples, held-out tuples), section 1.6: even-numbered tuples train, odd ones test,
    then the first odd ones move to training until it holds floor(0.8 N). Seed-independent."""
    tuples = preference_tuples(setting)
    if len(tuples) < 2:
        raise RetrievalSettingError(
            "--ood needs at least 2 preference tuples (--gt-retrievals ** --gt-searches)"
        )
    train_size = int(len(tuples) * OOD_TRAIN_FRACTION)
    train, test = tuples[0::2], tuples[1::2]
    moved = max(train_size - len(train), 0)
    return np.concatenate([train, test[:moved]]), test[moved:]


@dataclass
class RetrievalBatch:
    """tokens (B, n, token_dim) float64, targets (B, n), preferences (B, n, S*) int,
    partners (B, n, S*): j_s(i), the object search s of object i finds."""

    tokens: np.ndarray
    targets: np.ndarray
    preferences: np.ndarray
    partners: np.ndarray


def nearest_partners(search_features):
    """j_s(i) = argmin_{j != i} |x_{j,s} - x_{i,s}| for features (B, n, S*): (B, n, S*)."""
    deltas = np.abs(search_features[:, None, :, :] - search_features[:, :, None, :])  # (B,i,j,s)
    n = search_features.shape[1]
    deltas[:, np.arange(n), np.arange(n), :] = np.inf
    return deltas.argmin(axis=2)


def assemble(setting, features, preferences):
    """The batch of features (B, n, S*+R*) and preferences (B, n, S*): targets and tokens."""
    searches, retrievals = setting.searches, setting.retrievals
    partners = nearest_partners(features[..., :searches])
    batch_index = np.arange(features.shape[0])[:, None, None]
    read = features[batch_index, partners, searches + preferences]  # z_{j_s(i), rho_{i,s}}
    targets = np.sum(setting.coefficients.reshape(1, 1, -1) * read, axis=-1)
    onehots = np.eye(retrievals)[preferences].reshape(*preferences.shape[:2], -1)
    tokens = np.concatenate([features, onehots], axis=-1)
    return RetrievalBatch(tokens, targets, preferences, partners)


def iid_batch(rng, setting, batch_size):
    """One i.i.d. batch from a np.random.RandomState: every rho_{i,s} uniform and independent."""
    n, searches, retrievals = setting.objects, setting.searches, setting.retrievals
    features = rng.randn(batch_size, n, searches + retrievals)
    preferences = rng.choice(retrievals, batch_size * n * searches)
    return assemble(setting, features, preferences.reshape(batch_size, n, searches))


def ood_batch(rng, setting, batch_size, held_out):
    """One OoD-mode batch: each object draws a whole tuple rho_i from the training tuples, or
    from the held-out tuples (held_out=True). Both index draws are made, as the official code."""
    n = setting.objects
    train, test = ood_split(setting)
    features = rng.randn(batch_size, n, setting.searches + setting.retrievals)
    train_pick = rng.choice(len(train), batch_size * n)
    test_pick = rng.choice(len(test), batch_size * n)
    tuples = test[test_pick] if held_out else train[train_pick]
    return assemble(setting, features, tuples.reshape(batch_size, n, setting.searches))


def generate(rng, setting, batch_size, ood=False, held_out=False):
    """One batch: i.i.d. (ood False) or OoD mode (training tuples, or held-out ones)."""
    if held_out and not ood:
        raise RetrievalSettingError("held-out combinations exist only with --ood")
    if ood:
        return ood_batch(rng, setting, batch_size, held_out)
    return iid_batch(rng, setting, batch_size)
