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
