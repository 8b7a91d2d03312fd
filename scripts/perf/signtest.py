"""The sign test's interval for a median of paired per-round ratios.

Each round's ratio falls above the true median with probability 1/2, so
the k-th smallest and k-th largest of n rounds bound it with probability
1 - 2 P(B <= k - 1), B ~ Binomial(n, 1/2): with 7 rounds the range
itself (98.4 %), with 15 the 4th smallest to the 4th largest (96.5 %).
"""
import math


def sign_test_k(n):
    """The largest k whose interval holds the median with at least 95 %
    (k = 1, the range, below 9 rounds), and that probability."""
    tail = lambda k: sum(math.comb(n, i) for i in range(k)) / 2 ** n  # P(B <= k-1)
    k = 1
    while k < n // 2 and 2 * tail(k + 1) <= 0.05:
        k += 1
    return k, 1 - 2 * tail(k)


def interval(xs, digits=2):
    """The median's interval of the ratios `xs`, as "low-high"."""
    k, _ = sign_test_k(len(xs))
    ys = sorted(xs)
    return f"{ys[k - 1]:.{digits}f}-{ys[-k]:.{digits}f}"
