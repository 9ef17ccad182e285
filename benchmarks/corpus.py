"""Deterministic synthetic lesson corpus: Zipf-distributed vocabulary, realistic lengths.

Copied from ``shared/bench/corpus.py`` so that this repository is self-contained; only the
formatting changed (for ruff), never the generator, so the same seed gives the same corpus.
lessons(n) yields (scope, key, value, tags); queries(n) yields 1-3 term queries drawn from the
selective middle of the same vocabulary, so results are selective, not match-everything.
"""

import random

_SYL = [
    "ka", "to", "ri", "mo", "lu", "pe", "sa", "ni", "ve", "do",
    "zu", "ha", "qi", "bo", "te", "xa", "lo", "mi", "ru", "fe",
]  # fmt: skip
TECH = [
    "postgres", "migration", "flaky", "test", "cache", "docker", "timeout", "retry", "lint",
    "build", "deploy", "branch", "merge", "webhook", "token", "scope", "index", "vacuum",
    "fixture", "mock", "pytest", "coverage", "release", "semver", "config", "env", "secret",
    "rotate", "queue", "worker", "async", "thread", "lock", "deadlock", "race", "memory", "leak",
    "profile", "trace", "span",
]  # fmt: skip


def vocabulary(size=6000, seed=1):
    rng = random.Random(seed)
    words = list(TECH)
    seen = set(words)
    while len(words) < size:
        w = "".join(rng.choice(_SYL) for _ in range(rng.randint(2, 4)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def _zipf_weights(n, s=1.07):
    return [1.0 / (r**s) for r in range(1, n + 1)]


class Corpus:
    def __init__(self, seed=7, vocab=6000, scopes=None):
        self.rng = random.Random(seed)
        self.words = vocabulary(vocab, seed)
        self.weights = _zipf_weights(len(self.words))
        self.scopes = scopes or (
            ["global"]
            + [f"project::p{i}" for i in range(5)]
            + [f"repo::acme/svc{i}" for i in range(20)]
            + [f"branch::acme/svc{i}::feat-{j}" for i in range(5) for j in range(3)]
        )

    def text(self, lo=25, hi=120):
        n = self.rng.randint(lo, hi)
        return " ".join(self.rng.choices(self.words, self.weights, k=n))

    def lessons(self, n):
        for i in range(n):
            scope = self.scopes[int(self.rng.paretovariate(1.2)) % len(self.scopes)]
            tags = self.rng.sample(TECH, self.rng.randint(0, 3))
            yield scope, f"lesson-{i:07d}", f"Lesson {i}: " + self.text() + ".", tags

    def queries(self, n):
        mid = self.words[50:1500]  # skip the stopword-like head; realistic selective terms
        for _ in range(n):
            yield " ".join(self.rng.sample(mid, self.rng.randint(1, 3)))
