"""asyncpg against a server: its type introspection, binary results, parameters, COPY.

Usage: python asyncpg_flow.py DSN  (postgresql://user@host:port/db)
Prints one JSON object with what each step saw; test/tools/asyncpg.test.ts asserts on it.
"""
import asyncio
import datetime
import decimal
import json
import sys
import tempfile

import asyncpg


async def main() -> None:
    conn = await asyncpg.connect(sys.argv[1])
    out: dict = {}
    await conn.execute("DROP TABLE IF EXISTS reading")
    await conn.execute(
        "CREATE TABLE reading (id int PRIMARY KEY, sensor text NOT NULL, value double precision, "
        "amount numeric(10, 2), taken timestamptz, day date, tags text[], ok boolean)"
    )
    taken = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=datetime.timezone.utc)
    # Parameters of several types through asyncpg's binary codecs (its own type introspection).
    await conn.execute(
        "INSERT INTO reading VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        1, "a", 1.5, decimal.Decimal("12.34"), taken, datetime.date(2024, 5, 6), ["x", "y"], True,
    )
    await conn.executemany(
        "INSERT INTO reading (id, sensor, value) VALUES ($1, $2, $3)",
        [(2, "b", 2.5), (3, "c", None)],
    )
    row = await conn.fetchrow("SELECT * FROM reading WHERE id = $1", 1)
    out["row"] = {
        "id": row["id"], "sensor": row["sensor"], "value": row["value"], "amount": str(row["amount"]),
        "taken": row["taken"].isoformat(), "day": row["day"].isoformat(), "tags": row["tags"], "ok": row["ok"],
    }
    out["filtered"] = [tuple(r) for r in await conn.fetch(
        "SELECT id, sensor FROM reading WHERE value > $1 OR sensor = ANY($2::text[]) ORDER BY id", 2.0, ["a"])]
    out["count"] = await conn.fetchval("SELECT count(*) FROM reading")
    # int2vector and oidvector have no codec in asyncpg: it introspects them in pg_type.
    out["introspected"] = [
        list(map(list, r)) for r in await conn.fetch(
            "SELECT indkey, indclass, indoption FROM pg_index WHERE indrelid = 'reading'::regclass")
    ]
    # A prepared statement used twice.
    statement = await conn.prepare("SELECT sensor FROM reading WHERE id = $1")
    out["prepared"] = [await statement.fetchval(2), await statement.fetchval(3)]
    # COPY in (binary) and out.
    try:
        out["copy_in"] = await conn.copy_records_to_table(
            "reading", records=[(10, "copy1", 0.25), (11, "copy2", None)], columns=["id", "sensor", "value"]
        )
    except asyncpg.PostgresError as error:
        out["copy_in_error"] = f"{error.sqlstate}: {error}"
        # The rows the binary COPY would have written, so the steps after it see the same table.
        await conn.execute("INSERT INTO reading (id, sensor, value) VALUES (10, 'copy1', 0.25), (11, 'copy2', NULL)")
    with tempfile.TemporaryFile() as buffer:
        result = await conn.copy_from_query("SELECT id, sensor FROM reading WHERE id >= 10 ORDER BY id", output=buffer)
        buffer.seek(0)
        out["copy_out"] = {"tag": result, "text": buffer.read().decode()}
    with tempfile.NamedTemporaryFile("w+b") as source:
        source.write(b"20\tfile1\t1.5\n21\tfile2\t\\N\n")
        source.flush()
        out["copy_to_table"] = await conn.copy_to_table("reading", source=source.name, columns=["id", "sensor", "value"])
    out["ids"] = [r["id"] for r in await conn.fetch("SELECT id FROM reading ORDER BY id")]
    # A transaction rolled back, and one with a savepoint.
    try:
        async with conn.transaction():
            await conn.execute("INSERT INTO reading (id, sensor) VALUES (99, 'rolled back')")
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    async with conn.transaction():
        await conn.execute("INSERT INTO reading (id, sensor) VALUES (30, 'outer')")
        try:
            async with conn.transaction():
                await conn.execute("INSERT INTO reading (id, sensor) VALUES (31, 'inner')")
                raise RuntimeError("roll back the savepoint")
        except RuntimeError:
            pass
    out["after_transactions"] = [r["id"] for r in await conn.fetch("SELECT id FROM reading WHERE id >= 30 ORDER BY id")]
    # A cursor in a transaction (asyncpg's Cursor: DECLARE-free portal fetches).
    async with conn.transaction():
        out["cursor"] = [r["id"] async for r in conn.cursor("SELECT id FROM reading ORDER BY id", prefetch=2)]
    await conn.close()
    print(json.dumps(out))


asyncio.run(main())
