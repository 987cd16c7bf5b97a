"""RFC 9162's Merkle tree: the stored-subtree implementation against the RFC's own recursive
definitions (a naive reference written here from the RFC text), on every tree size 1..300, the
Certificate Transparency test vectors, and the stand-alone verifier's RFC algorithms."""

from __future__ import annotations

import hashlib
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from factledger.ledger.tlog import merkle
from factledger.ledger.tlog.tlog_verify import VerificationError, verify_consistency, verify_inclusion

# --- the reference: RFC 9162 section 2.1.1, 2.1.3.1 and 2.1.4.1, word for word ------------------

MAX = 300
LEAVES = tuple(merkle.leaf_hash(i.to_bytes(4, "big")) for i in range(MAX + 40))


def _h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _k(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


@cache
def mth(lo: int, hi: int) -> bytes:
    """MTH(D[lo:hi]) over LEAVES (already leaf-hashed)."""
    n = hi - lo
    if n == 0:
        return _h(b"")
    if n == 1:
        return LEAVES[lo]
    k = _k(n)
    return _h(b"\x01" + mth(lo, lo + k) + mth(lo + k, hi))


def ref_path(m: int, lo: int, hi: int) -> list[bytes]:
    n = hi - lo
    if n == 1:
        return []
    k = _k(n)
    if m < k:
        return ref_path(m, lo, lo + k) + [mth(lo + k, hi)]
    return ref_path(m - k, lo + k, hi) + [mth(lo, lo + k)]


def ref_subproof(m: int, lo: int, hi: int, b: bool) -> list[bytes]:
    n = hi - lo
    if m == n:
        return [] if b else [mth(lo, hi)]
    k = _k(n)
    if m <= k:
        return ref_subproof(m, lo, lo + k, b) + [mth(lo + k, hi)]
    return ref_subproof(m - k, lo + k, hi, False) + [mth(lo, lo + k)]


def ref_proof(m: int, n: int) -> list[bytes]:
    return ref_subproof(m, 0, n, True)


# --- Certificate Transparency vectors (transparency-dev/merkle testonly) ------------------------

CT_DATA = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657",
           "606162636465666768696a6b6c6d6e6f"]
CT_ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
CT_INCLUSION = {
    (0, 8): ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
             "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
             "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"],
    (5, 8): ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
             "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
             "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"],
}
CT_CONSISTENCY_2_8 = ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]


def test_certificate_transparency_vectors():
    leaves = [merkle.leaf_hash(bytes.fromhex(d)) for d in CT_DATA]
    node = merkle.memory_tree(leaves)
    frontier = merkle.Frontier()
    assert merkle.root(0, node).hex() == CT_ROOTS[0] == frontier.root().hex()
    for size in range(1, 9):
        frontier.append(leaves[size - 1])
        assert merkle.root(size, node).hex() == CT_ROOTS[size]
        assert frontier.root().hex() == CT_ROOTS[size]
    root8 = bytes.fromhex(CT_ROOTS[8])
    for (index, size), want in CT_INCLUSION.items():
        path = merkle.inclusion_path(index, size, node)
        assert [p.hex() for p in path] == want
        verify_inclusion(leaves[index], index, size, path, root8)
    path = merkle.consistency_path(2, 8, node)
    assert [p.hex() for p in path] == CT_CONSISTENCY_2_8
    verify_consistency(2, 8, bytes.fromhex(CT_ROOTS[2]), root8, path)


def test_every_size_to_300_root_inclusion_and_consistency_match_the_rfc():
    node = merkle.memory_tree(list(LEAVES[:MAX]))
    frontier = merkle.Frontier()
    for n in range(1, MAX + 1):
        frontier.append(LEAVES[n - 1])
        root = mth(0, n)
        assert merkle.root(n, node) == root == frontier.root()
        for m in range(n):
            path = merkle.inclusion_path(m, n, node)
            assert path == ref_path(m, 0, n), (m, n)
            verify_inclusion(LEAVES[m], m, n, path, root)
        for m in range(1, n + 1):
            proof = merkle.consistency_path(m, n, node)
            assert proof == ref_proof(m, n), (m, n)
            verify_consistency(m, n, mth(0, m), root, proof)


def test_stored_positions_are_the_append_order():
    stored: list[bytes] = []
    for size in range(MAX):
        assert len(stored) == merkle.stored_count(size)
        assert merkle.size_for_count(len(stored)) == size
        added = merkle.append_hashes(LEAVES[size], size, lambda lv, i: stored[merkle.stored_index(lv, i)])
        for level, digest in enumerate(added):
            assert merkle.stored_index(level, (size + 1 - (1 << level)) >> level) == len(stored)
            assert digest == mth(size + 1 - (1 << level), size + 1)
            stored.append(digest)
    with pytest.raises(ValueError):
        merkle.size_for_count(2)              # one leaf stores 1 hash, two store 3: 2 is no tree


def _flip(data: bytes) -> bytes:
    return bytes([data[0] ^ 1]) + data[1:]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, MAX + 39).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1))),
       st.integers(0, 5))
def test_any_change_to_an_inclusion_proof_fails(case, mutation):
    n, m = case
    node = merkle.memory_tree(list(LEAVES[:n]))
    path, root = merkle.inclusion_path(m, n, node), mth(0, n)
    verify_inclusion(LEAVES[m], m, n, path, root)
    leaf, index, size = LEAVES[m], m, n
    if mutation == 0:
        leaf = _flip(leaf)
    elif mutation == 1 and path:
        path = [_flip(path[0]), *path[1:]]
    elif mutation == 2:
        path = [*path, root]
    elif mutation == 3 and path:
        path = path[:-1]
    elif mutation == 4 and n > 1:
        index = (m + 1) % n
    else:
        root = _flip(root)
    with pytest.raises(VerificationError):
        verify_inclusion(leaf, index, size, path, root)


@settings(max_examples=300, deadline=None)
@given(st.integers(2, MAX + 39).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n - 1))),
       st.integers(0, 4))
def test_any_change_to_a_consistency_proof_fails(case, mutation):
    n, m = case
    node = merkle.memory_tree(list(LEAVES[:n]))
    proof, old, new = merkle.consistency_path(m, n, node), mth(0, m), mth(0, n)
    verify_consistency(m, n, old, new, proof)
    if mutation == 0:
        proof = [_flip(proof[0]), *proof[1:]]
    elif mutation == 1:
        old = _flip(old)
    elif mutation == 2:
        new = _flip(new)
    elif mutation == 3:
        proof = proof[:-1]
    else:
        proof = [*proof, new]
    with pytest.raises(VerificationError):
        verify_consistency(m, n, old, new, proof)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(min_size=32, max_size=32), min_size=1, max_size=200), st.data())
def test_forked_trees_are_never_consistent(chain_hashes, data):
    """Two logs that share a prefix and then differ: no proof from the one links to the other."""
    n = len(chain_hashes)
    m = data.draw(st.integers(1, n))
    fork = data.draw(st.integers(0, m - 1))
    leaves = [merkle.leaf_hash(h) for h in chain_hashes]
    other = [*leaves[:fork], merkle.leaf_hash(_flip(chain_hashes[fork])), *leaves[fork + 1:]]
    honest, forked = merkle.memory_tree(leaves), merkle.memory_tree(other)
    proof = merkle.consistency_path(m, n, honest)
    with pytest.raises(VerificationError):
        verify_consistency(m, n, merkle.root(m, forked), merkle.root(n, honest), proof)
