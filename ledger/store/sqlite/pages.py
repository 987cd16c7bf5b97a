"""The pages of a table's b-tree as the file holds them: a digest of each, and the rowids on one.

`verify` records a digest of every page of every projection table once it has proved them equal
to a rebuild (`ledger/audit/verifycheck.py`), and later reads only the pages: a page whose bytes
are those recorded holds the rows that were proved.  The tree is walked by SQLite (`dbstat`, as
the reader's snapshot has it); the bytes are read from the file, so a page with any frame in the
write-ahead log (committed, stale or not yet committed) is reported changed without its digest:
the file's copy may not be the one SQLite serves.  Read under a held read transaction, so that a
checkpoint cannot move frames this snapshot needs into the file meanwhile.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3

WAL_HEADER, FRAME_HEADER = 32, 24
TABLE_LEAF = 0x0D                 # a rowid table's leaf page; anything else holds no row of ours
TABLE_INTERIOR = 0x05


def database_file(conn: sqlite3.Connection) -> str | None:
    return next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), None) or None


def wal_pages(path: str, page_size: int) -> set[int]:
    """Every page number with a frame of the log's current generation (the frames whose salts are
    the header's, committed or not); a frame left from before the log last restarted is one SQLite
    ignores, its page being in the file."""
    found: set[int] = set()
    try:
        with open(path + "-wal", "rb") as wal:
            header = wal.read(WAL_HEADER)
            if len(header) < WAL_HEADER:
                return found
            salts = header[16:24]
            while (frame := wal.read(FRAME_HEADER)) and len(frame) == FRAME_HEADER:
                if frame[8:16] == salts:
                    found.add(int.from_bytes(frame[:4], "big"))
                wal.seek(page_size, os.SEEK_CUR)
    except FileNotFoundError:
        pass
    return found


def table_pages(conn: sqlite3.Connection, tables: tuple[str, ...],
                leaves_only: bool = False) -> dict[str, dict[int, str | None]] | None:
    """table -> {leaf page number: digest (hex) of the leaf and its overflow pages, or None when
    it cannot be trusted from the file}.  Interior pages hold no rows (which leaves the tree
    reaches is what dbstat lists).  None when the file cannot be read so (a database in memory).

    `leaves_only`: a leaf's digest is its own page's, its cells not read, so a leaf whose cells
    spill to overflow pages is not told apart: for a caller that only asks whether a leaf is
    byte for byte one recorded with this function's full walk (which digests such a leaf with
    its overflow pages, never as a page alone), so that an equal digest means no cell spills."""
    path = database_file(conn)
    if path is None:
        return None
    marks = ", ".join("?" for _ in tables)
    ddl = conn.execute(f"SELECT sql FROM sqlite_master WHERE type = 'table' AND name IN ({marks})", tables).fetchall()
    if len(ddl) != len(tables) or any("WITHOUT ROWID" in (sql or "").upper() for (sql,) in ddl):
        return None                   # rows keyed otherwise than by rowid: their cells are not read here
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    in_wal = wal_pages(path, page_size)
    roots = dict(conn.execute(f"SELECT name, rootpage FROM sqlite_master WHERE type = 'table' AND name IN ({marks})",
                              tables).fetchall())
    with open(path, "rb") as db:
        walked = _walk(db, roots, page_size, in_wal, leaves_only)
        if walked is not None:
            return walked
        # an interior page is in the log, or a leaf spills to overflow pages: dbstat walks it
        rows = conn.execute(f"SELECT name, path, pageno, pagetype, pgoffset FROM dbstat WHERE name IN ({marks})",
                            tables).fetchall()
        leaves = {(name, p): pageno for name, p, pageno, kind, _off in rows if kind == "leaf"}
        parts: dict[tuple[str, int], list[bytes] | None] = {}
        for name, p, pageno, kind, offset in rows:
            if kind == "internal":
                continue
            # an overflow page's path is its cell's (the leaf's path and three hex digits) + "+N"
            leaf = pageno if kind == "leaf" else leaves.get((name, p.partition("+")[0][:-3]), -pageno)
            key = (name, leaf)
            if pageno in in_wal or leaf < 0:
                parts[key] = None
            elif parts.setdefault(key, []) is not None:
                db.seek(offset)
                parts[key].append(hashlib.sha256(db.read(page_size)).digest())
    out: dict[str, dict[int, str | None]] = {t: {} for t in tables}
    for (name, leaf), found in parts.items():
        out[name][leaf] = (None if found is None else found[0].hex() if len(found) == 1   # as `_walk` has it
                           else hashlib.sha256(b"".join(sorted(found))).hexdigest())
    return out


def _walk(db, roots: dict[str, int], page_size: int, in_wal: set[int],
          leaves_only: bool = False) -> dict[str, dict[int, str | None]] | None:
    """table -> {leaf: digest or None}, the trees walked from the file; None when the walk cannot
    be trusted from the file alone (an interior page with a frame in the write-ahead log) or would
    need what dbstat reads (a leaf whose cells spill to overflow pages)."""
    out: dict[str, dict[int, str | None]] = {}
    digest, limit = hashlib.sha256, page_size - 35     # a cell's payload beyond it overflows
    for name, root in roots.items():
        leaves: dict[int, str | None] = {}
        out[name] = leaves
        stack = [root]
        while stack:
            pageno = stack.pop()
            if pageno in in_wal:          # the file's copy may not be the tree's page now
                return None
            db.seek((pageno - 1) * page_size)
            page = db.read(page_size)
            start = 100 if pageno == 1 else 0
            if len(page) < page_size:
                return None
            kind = page[start]
            cells = int.from_bytes(page[start + 3:start + 5], "big")
            if kind == TABLE_LEAF:
                for i in range(0 if leaves_only else cells):
                    pointer = int.from_bytes(page[start + 8 + 2 * i:start + 10 + 2 * i], "big")
                    if not start + 8 <= pointer < page_size - 9:
                        return None
                    if page[pointer] & 0x80 and _varint(page, pointer)[0] > limit:
                        return None
                leaves[pageno] = digest(page).hexdigest()
            elif kind == TABLE_INTERIOR:
                stack.append(int.from_bytes(page[start + 8:start + 12], "big"))
                for i in range(cells):
                    pointer = int.from_bytes(page[start + 12 + 2 * i:start + 14 + 2 * i], "big")
                    if not start + 12 <= pointer <= page_size - 4:
                        return None
                    stack.append(int.from_bytes(page[pointer:pointer + 4], "big"))
            else:
                return None
    return out


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = 0
    for i in range(8):
        byte = data[at + i]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + i + 1
    return (value << 8) | data[at + 8], at + 9


def rowids_on(conn: sqlite3.Connection, pagenos) -> dict[int, set[int]] | None:
    """page -> every rowid a cell of that leaf page names, in the file's copy and in every frame
    of the write-ahead log that holds it (a superset of the rows the reader's snapshot has
    there).  None when a copy is not a page this can read (the caller then trusts nothing)."""
    path = database_file(conn)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    wanted = set(pagenos)
    found: dict[int, set[int]] = {p: set() for p in wanted}
    with open(path, "rb") as db:
        for pageno in sorted(wanted):
            db.seek((pageno - 1) * page_size)
            if not _cells(pageno, db.read(page_size), page_size, found[pageno]):
                return None
    try:
        with open(path + "-wal", "rb") as wal:
            wal.seek(WAL_HEADER)
            while (header := wal.read(FRAME_HEADER)) and len(header) == FRAME_HEADER:
                page = wal.read(page_size)
                pageno = int.from_bytes(header[:4], "big")
                if pageno in wanted and not _cells(pageno, page, page_size, found[pageno]):
                    return None
    except FileNotFoundError:
        pass
    return found


def _cells(pageno: int, page: bytes, page_size: int, into: set[int]) -> bool:
    """Add the rowids of a table leaf's cells to `into`; True unless the page cannot be read."""
    start = 100 if pageno == 1 else 0
    if len(page) < page_size:
        return False
    if page[start] != TABLE_LEAF:
        # dbstat lists the page as a table's leaf now, so a copy that is not one (another tree's
        # node, a freelist page) is an older copy with no row of ours
        return True
    cells = int.from_bytes(page[start + 3:start + 5], "big")
    for i in range(cells):
        pointer = int.from_bytes(page[start + 8 + 2 * i:start + 10 + 2 * i], "big")
        if not start + 8 <= pointer < page_size - 1:
            return False
        try:
            _size, at = _varint(page, pointer)
            rowid, _ = _varint(page, at)
        except IndexError:
            return False
        into.add(rowid)
    return True
