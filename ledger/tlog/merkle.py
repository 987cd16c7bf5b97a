"""RFC 9162 (RFC 6962) Merkle tree hashing, and the proofs it hands out, over stored perfect subtrees.

The log's tree is never held whole.  What is stored is every perfect subtree (2^level leaves,
aligned) in the order appending completes them, so appending a leaf writes its own hash plus one
hash per subtree it closes (two on average), and any root, inclusion path or consistency path of
any earlier size is a few dozen lookups: O(log n) whatever the log's length.  Functions here take
a `node(level, index)` reader and never touch storage themselves; the projection supplies it.

Leaves are the events' chain hashes (32 bytes): they commit to each event's commitment, never to
its body, so scrubbing a body for right-to-forget leaves every root and every proof unchanged.
Verification lives in `tlog_verify.py`, which an auditor runs without the rest of the project.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
EMPTY_ROOT = hashlib.sha256(b"").digest()

Node = Callable[[int, int], bytes]          # (level, index) -> hash of a stored perfect subtree


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def chain_leaf(chain_hash: str) -> bytes:
    """The leaf hash of an event: its chain hash (hex, as the log stores it) as the leaf's data."""
    return leaf_hash(bytes.fromhex(chain_hash))


def stored_index(level: int, index: int) -> int:
    """Where the perfect subtree (level, index) sits in the append-ordered list of stored hashes.

    Leaf n is preceded by 2n - popcount(n) hashes (each earlier leaf j stored itself plus the
    trailing-zero count of j + 1 subtrees), and the subtree of `level` it closes comes `level`
    places after it.
    """
    last = ((index + 1) << level) - 1            # the leaf that completes it
    return 2 * last - last.bit_count() + level


def stored_count(size: int) -> int:
    """How many hashes a tree of `size` leaves has stored."""
    return 2 * size - size.bit_count()


def size_for_count(count: int) -> int:
    """The tree size whose stored hashes number `count` (strictly increasing, so a search finds it)."""
    lo, hi = count // 2, min(count, count // 2 + count.bit_length())   # 2n - log2(n) <= count < 2n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if stored_count(mid) <= count:
            lo = mid
        else:
            hi = mid - 1
    if stored_count(lo) != count:
        raise ValueError(f"{count} stored hashes is not a whole tree")
    return lo


def append_hashes(leaf: bytes, size: int, node: Node) -> list[bytes]:
    """The hashes that adding `leaf` to a tree of `size` leaves stores: the leaf's, then each
    perfect subtree it completes, lowest first (their stored indexes follow one another)."""
    hashes = [leaf]
    level, index = 0, size
    while index & 1:
        leaf = node_hash(node(level, index - 1), leaf)
        hashes.append(leaf)
        level, index = level + 1, index >> 1
    return hashes


def _split(n: int) -> int:
    """The largest power of two smaller than n (n > 1): where RFC 9162 splits a tree of n leaves."""
    return 1 << ((n - 1).bit_length() - 1)


def range_hash(lo: int, hi: int, node: Node) -> bytes:
    """MTH(D[lo:hi]) for a range RFC 9162's recursion visits (lo aligned to its left subtree)."""
    n = hi - lo
    if n <= 0:
        raise ValueError("empty range")
    if n & (n - 1) == 0 and lo % n == 0:
        return node(n.bit_length() - 1, lo // n)
    k = _split(n)
    return node_hash(range_hash(lo, lo + k, node), range_hash(lo + k, hi, node))


def root(size: int, node: Node) -> bytes:
    return EMPTY_ROOT if size == 0 else range_hash(0, size, node)


def inclusion_path(index: int, size: int, node: Node) -> list[bytes]:
    """RFC 9162 PATH(index, D[0:size]): the siblings from the leaf up to the root."""
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of {size}")
    path: list[bytes] = []
    lo, hi = 0, size
    while hi - lo > 1:
        k = _split(hi - lo)
        if index < lo + k:
            path.append(range_hash(lo + k, hi, node))
            hi = lo + k
        else:
            path.append(range_hash(lo, lo + k, node))
            lo += k
    return path[::-1]


def consistency_path(old: int, new: int, node: Node) -> list[bytes]:
    """RFC 9162 PROOF(old, D[0:new]): what shows the tree of `new` leaves extends the one of `old`."""
    if not 0 <= old <= new:
        raise ValueError(f"no consistency proof from size {old} to size {new}")
    if old == 0 or old == new:
        return []
    path: list[bytes] = []
    lo, hi, m, whole = 0, new, old, True
    while m != hi - lo:
        k = _split(hi - lo)
        if m <= k:
            path.append(range_hash(lo + k, hi, node))
            hi = lo + k
        else:
            path.append(range_hash(lo, lo + k, node))
            lo, m, whole = lo + k, m - k, False
    if not whole:
        path.append(range_hash(lo, hi, node))
    return path[::-1]


def memory_tree(leaves: list[bytes]) -> Node:
    """A `node` reader over leaf hashes held in memory (tests, the bench, small trees)."""
    stored: list[bytes] = []
    for size, leaf in enumerate(leaves):
        stored.extend(append_hashes(leaf, size, lambda level, index: stored[stored_index(level, index)]))
    return lambda level, index: stored[stored_index(level, index)]


class Frontier:
    """The perfect subtrees on the right edge of a growing tree: O(log n) memory, the root at its size.

    A stream of leaves (the events table read in seq order) gives its roots without storing the
    tree: `verify --checkpoint` recomputes roots from the log itself this way, trusting no table.
    """

    def __init__(self):
        self.size = 0
        self._stack: list[bytes] = []

    def append(self, leaf: bytes) -> None:
        n = self.size
        while n & 1:
            leaf = node_hash(self._stack.pop(), leaf)
            n >>= 1
        self._stack.append(leaf)
        self.size += 1

    def root(self) -> bytes:
        if not self._stack:
            return EMPTY_ROOT
        digest = self._stack[-1]
        for left in reversed(self._stack[:-1]):
            digest = node_hash(left, digest)
        return digest
