"""The lexical half of recall's relevance: TF-IDF cosine over one scope's cleared documents.

Why an index object: the document frequencies, each document's weights and norm depend only on
the scope's documents, not on the query, so they are worked out once (and kept with the scope
while the ledger's head does not move: `ledger.recall_scope`); a query then touches only the
postings of its own terms.  The numbers are the ones recall has always computed (sublinear tf,
smoothed idf, cosine; docs/recall.md), summed in the same order, so a kept index and a fresh one
give the same scores to the last bit.
"""

from __future__ import annotations

import math
from collections import Counter


class LexicalIndex:
    """Postings and norms of a list of documents (each a space-separated term string)."""

    def __init__(self, docs: list[str]):
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
