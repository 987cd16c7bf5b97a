"""The lexical half of recall's relevance: TF-IDF cosine over one scope's cleared documents.

Why an index object: the document frequencies, each document's weights and norm depend only on
the scope's documents, not on the query, so they are worked out once (and kept with the scope
while the ledger's head does not move: `projections.recallcache`); a query then touches only the
postings of its own terms.  The numbers are the ones recall has always computed (sublinear tf,
smoothed idf, cosine; docs/recall.md), summed in the same order, so a kept index and a fresh one
give the same scores to the last bit.

With numpy at hand (the semantic extra), `cosine_arrays` does the same sums over arrays: a
query term found in every document (`gadget` among a thousand gadgets) no longer costs a
Python loop over a thousand postings.
"""

from __future__ import annotations

import math
from collections import Counter


class LexicalIndex:
    """Postings and norms of a list of documents (each a space-separated term string)."""

    def __init__(self, docs: list[str], positions: list[int] | None = None):
        """`positions`: each document's position among the scope's rows (what `cosine_arrays`
        answers in); by default the document's own index."""
        self.positions = positions if positions is not None else list(range(len(docs)))
        self._arrays: dict = {}
        counts = [Counter(doc.split()) for doc in docs]
        df: Counter = Counter()
        for c in counts:
            df.update(c.keys())
        self.n = n = len(docs)
        self.idf = {t: math.log((1 + n) / (1 + k)) + 1.0 for t, k in df.items()}
        self.postings: dict[str, list[tuple[int, float]]] = {}
        self.norms: list[float] = []
        idf = self.idf
        for j, c in enumerate(counts):
            weights = {t: (1 + math.log(k)) * idf[t] for t, k in c.items()}
            self.norms.append(math.sqrt(sum(x * x for x in weights.values())))
            for t, w in weights.items():
                self.postings.setdefault(t, []).append((j, w))

    def cosines(self, q_counts: Counter) -> dict[int, float]:
        """document index -> cosine with the query, for the documents sharing a term with it,
        in document order."""
        if not q_counts or not self.n:
            return {}
        unseen = math.log(1 + self.n) + 1.0
        q = {t: (1 + math.log(k)) * self.idf.get(t, unseen) for t, k in q_counts.items()}
        q_norm = math.sqrt(sum(x * x for x in q.values()))
        dots: dict[int, float] = {}
        for t, weight in q.items():
            for j, w in self.postings.get(t, ()):
                dots[j] = dots.get(j, 0) + weight * w
        norms = self.norms
        return {j: dots[j] / (q_norm * norms[j]) for j in sorted(dots)}

    def cosine_arrays(self, q_counts: Counter, np):
        """`cosines` as arrays (the scope positions of the documents sharing a term with the
        query, ascending; their cosines), or None when none does.

        The same operations in the same order as `cosines`: per document, the query's terms'
        products are added in the query's order starting from zero, then divided by the same
        product of norms; numpy's float64 products, sums and quotients are the IEEE operations
        Python's floats make, so every cosine is equal to the last bit (tests/recall/test_recall_kept.py
        checks it on random documents)."""
        if not q_counts or not self.n:
            return None
        unseen = math.log(1 + self.n) + 1.0
        q = {t: (1 + math.log(k)) * self.idf.get(t, unseen) for t, k in q_counts.items()}
        q_norm = math.sqrt(sum(x * x for x in q.values()))
        dots = np.zeros(self.n, dtype=np.float64)
        touched = np.zeros(self.n, dtype=bool)
        for t, weight in q.items():
            posting = self._posting(t, np)
            if posting is not None:
                docs, w = posting
                dots[docs] += weight * w            # a document is in a posting once
                touched[docs] = True
        docs = np.flatnonzero(touched)
        if not len(docs):
            return None
        norms, positions = self._arrays[None]
        return positions[docs], dots[docs] / (q_norm * norms[docs])

    def _posting(self, term: str, np):
        """A term's postings as (document indices, weights) arrays, made once per term (the
        index is kept with its scope, so the next query with the term finds them)."""
        arrays = self._arrays
        if None not in arrays:
            arrays[None] = (np.asarray(self.norms, dtype=np.float64), np.asarray(self.positions, dtype=np.int64))
        found = arrays.get(term)
        if found is None:
            posting = self.postings.get(term)
            if posting is None:
                return None
            found = arrays[term] = (np.fromiter((j for j, _ in posting), dtype=np.int64, count=len(posting)),
                                    np.fromiter((w for _, w in posting), dtype=np.float64, count=len(posting)))
        return found
