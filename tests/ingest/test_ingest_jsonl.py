"""One reader for the ingestion inputs: the same errors from sessions, candidates and probes."""

from __future__ import annotations

import pytest

from factledger.ledger import LedgerError
from factledger.ledger.ingest.evaluate import load_probes
from factledger.ledger.ingest.jsonl import json_lines, read_text
from factledger.ledger.ingest.proposal import read_candidates
from factledger.ledger.ingest.sources import read_source

READERS = [read_candidates, read_source, load_probes]


def test_json_lines_skip_blanks_and_name_the_line():
    assert [(n, w, o) for n, w, o in json_lines('{"a": 1}\n\n  \n[2]\n', "f")] == \
        [(1, "f line 1", {"a": 1}), (4, "f line 4", [2])]
    with pytest.raises(LedgerError, match=r"^f line 2: not valid JSON \("):
        list(json_lines('{}\n{nope\n', "f"))


@pytest.mark.parametrize("reader", READERS)
def test_every_reader_words_errors_the_same_way(tmp_path, reader):
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"text": "caf\xe9"}\n')
    with pytest.raises(LedgerError, match=r"latin.jsonl: not UTF-8 text$"):
        reader(str(latin))
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n{nope\n")
    with pytest.raises(LedgerError, match=r"broken.jsonl line 2: not valid JSON \("):
        reader(str(broken))
    with pytest.raises(LedgerError, match=r": is a directory$"):
        reader(str(tmp_path))


def test_a_missing_file_is_worded_by_the_caller(tmp_path):
    gone = str(tmp_path / "gone.jsonl")
    with pytest.raises(LedgerError, match="no such candidates file"):
        read_candidates(gone)
    with pytest.raises(LedgerError, match="no such file"):
        read_source(gone)
    with pytest.raises(LedgerError, match=r"cannot read \("):
        read_text(gone)
