"""Long placeholder lists go to PostgreSQL as arrays (`ledger/store/postgres/arrays.py`): the
same rows, a statement whose text does not change with the list's length."""

from __future__ import annotations

from factledger.ledger.store.postgres.arrays import ARRAY_FROM, rewrite


def test_a_with_values_list_becomes_one_array_a_column_and_a_long_in_list_one_array():
    many = ", ".join("?" for _ in range(ARRAY_FROM))
    sql = (f"WITH k(a, u) AS (VALUES (?,?), (?,?)) SELECT x FROM k JOIN e ON e.seq > ?"
           f" WHERE t IN ({many}) AND z NOT IN ({many}) AND w IN (?, ?)")
    ids = [f"id{i}" for i in range(ARRAY_FROM)]
    text, args = rewrite(sql, ("a", "b", "c", "d", 5, *ids, *range(ARRAY_FROM), 1, 2))
    assert text == ("WITH k(a, u) AS (SELECT * FROM unnest(?::text[], ?::text[])) SELECT x FROM k JOIN e"
                    " ON e.seq > ? WHERE t = ANY(?::text[]) AND z <> ALL(?::bigint[]) AND w IN (?, ?)")
    assert args == (["a", "c"], ["b", "d"], 5, ids, list(range(ARRAY_FROM)), 1, 2)
    again, _ = rewrite(sql.replace("(?,?), (?,?)", "(?,?), (?,?), (?,?)"),
                       ("a",) * 6 + (5, *ids, *range(ARRAY_FROM), 1, 2))
    assert again == text                       # one text whatever the length


def test_a_list_of_partitions_is_left_for_the_planner_to_prune_by():
    many = ", ".join("?" for _ in range(ARRAY_FROM))
    assert rewrite(f"SELECT 1 FROM t WHERE app = ? AND user IN ({many})", ("a", *map(str, range(ARRAY_FROM)))) is None


def test_what_is_not_one_plain_type_is_sent_as_written():
    mixed = ", ".join("?" for _ in range(ARRAY_FROM))
    assert rewrite(f"SELECT 1 FROM t WHERE seq IN ({mixed})", (1, "a") + (1,) * (ARRAY_FROM - 2)) is None
    assert rewrite(f"SELECT 1 FROM t WHERE seq IN ({mixed})", (1, None) + (1,) * (ARRAY_FROM - 2)) is None
    assert rewrite("INSERT INTO t VALUES (?, ?)", (1, "a")) is None     # an INSERT's row is no list
    assert rewrite("SELECT 1 FROM t WHERE a = ?", ("a",)) is None


def test_the_rows_come_back_the_same_on_postgresql(postgres):
    from factledger.ledger.store.postgres.backend import connect

    conn = connect(postgres.location())
    try:
        wanted = ", ".join("?" for _ in range(ARRAY_FROM))
        sql = f"WITH k(a, n) AS (VALUES (?,?), (?,?), (?,?)) SELECT a, n FROM k WHERE n IN ({wanted})"
        rows = [tuple(r) for r in conn.execute(sql, ("x", 1, "y", 2, "x", 3, 1, 3,
                                                     *range(100, 100 + ARRAY_FROM - 2))).fetchall()]
        assert rows == [("x", 1), ("x", 3)]
    finally:
        conn.close()


# Values a text array must quote or escape, and the word NULL: sent in binary, they come back as sent.
AWKWARD = ["", "NULL", "null", 'say "hi"', "{a,b}", "back\\slash", "tab\there", "line\nbreak", " lead",
           "a,b", "é\u3000ü", "\\x00ff"]


def test_the_arrays_go_in_binary_and_awkward_values_come_back_as_sent(postgres):
    from factledger.ledger.store.postgres.arrays import Binary
    from factledger.ledger.store.postgres.backend import connect

    values = AWKWARD + [f"pad{i}" for i in range(ARRAY_FROM)]
    text, args = rewrite(f"SELECT x FROM t WHERE x IN ({', '.join('?' for _ in values)})", tuple(values))
    assert all(type(a) is Binary for a in args)
    conn = connect(postgres.location())
    try:
        sql = f"WITH k(a, n) AS (VALUES {', '.join('(?,?)' for _ in values)}) SELECT a, n FROM k"
        rows = conn.execute(sql, tuple(v for i, a in enumerate(values) for v in (a, i))).fetchall()
        assert [tuple(r) for r in rows] == [(a, i) for i, a in enumerate(values)]
        found = conn.execute(f"SELECT v FROM unnest(?::text[]) AS v WHERE v IN ({', '.join('?' for _ in values)})",
                             (Binary(values), *values)).fetchall()
        assert sorted(r[0] for r in found) == sorted(values)
    finally:
        conn.close()


def test_an_upsert_of_many_rows_writes_awkward_values_and_nulls_as_the_rows_one_by_one(postgres):
    from factledger.ledger.store.postgres.backend import COPY_ROWS, connect

    conn = connect(postgres.location())
    try:
        conn.execute("CREATE TABLE up (k TEXT PRIMARY KEY, t TEXT, n BIGINT, f DOUBLE PRECISION, b BYTEA, e TEXT)")
        rows = [(f"k{i}", AWKWARD[i % len(AWKWARD)], i if i % 3 else None, i / 4, bytes([i % 256, 0]), None)
                for i in range(COPY_ROWS + 10)]
        unnested, made = conn._unnested, []
        conn._unnested = lambda *a: made.append(unnested(*a)) or made[-1]     # the one-statement path
        conn.execute("BEGIN")
        conn.executemany("INSERT OR REPLACE INTO up (k, t, n, f, b, e) VALUES (?, ?, ?, ?, ?, ?)", rows)
        conn.execute("COMMIT")
        assert len(made) == 1 and made[0] is not None
        got = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r)
               for r in conn.execute("SELECT k, t, n, f, b, e FROM up ORDER BY n NULLS FIRST, k").fetchall()]
        assert sorted(got, key=repr) == sorted(rows, key=repr)
    finally:
        conn.close()
