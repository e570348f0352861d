"""psycopg 3 on its own: named (server-side) cursors with parameters, binary and WITH HOLD ones,
and nested transaction() blocks (savepoints). Prints one JSON object; test/tools/psycopg.test.ts
compares it between oxbow and PostgreSQL 15.

Usage: python psycopg_flow.py DSN
"""
import json
import sys

import psycopg


def main() -> None:
    out: dict = {}
    notices: list = []
    with psycopg.connect(sys.argv[1]) as conn:
        conn.add_notice_handler(lambda diag: notices.append(f"{diag.severity_nonlocalized}: {diag.message_primary}"))
        with conn.cursor(name="named") as cur:
            cur.execute("SELECT g, g * %s AS twice FROM generate_series(1, %s) AS g", (2, 5))
            out["named_columns"] = [column.name for column in cur.description]
            out["named"] = [cur.fetchmany(2), cur.fetchall()]
        with conn.cursor(name="bin", binary=True) as cur:
            cur.execute("SELECT g::int4, 'x' || g AS label FROM generate_series(1, 3) AS g")
            out["binary"] = cur.fetchall()
        with conn.cursor(name="hold", withhold=True) as cur:
            cur.execute("SELECT 42 AS answer")
            conn.commit()
            out["with_hold"] = cur.fetchall()
        conn.execute("SELECT 1")
        conn.rollback()
        conn.execute("CREATE TABLE psy (id int PRIMARY KEY, note text)")
        conn.commit()
        with conn.transaction():
            conn.execute("INSERT INTO psy VALUES (1, 'outer')")
            try:
                with conn.transaction():
                    conn.execute("INSERT INTO psy VALUES (2, 'inner')")
                    conn.execute("SELECT 1 / 0")
            except psycopg.errors.DivisionByZero:
                pass
            conn.execute("INSERT INTO psy VALUES (3, 'after')")
        out["after_savepoint"] = conn.execute("SELECT id, note FROM psy ORDER BY id").fetchall()
        conn.rollback()
        # Binary COPY FROM into a table whose serial column the COPY leaves out: a value per row.
        conn.execute("CREATE TABLE psy_serial (id serial PRIMARY KEY, note text NOT NULL)")
        conn.commit()
        with conn.cursor() as cur:
            with cur.copy("COPY psy_serial (note) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["text"])
                for note in ["a", "b", "c"]:
                    copy.write_row([note])
        conn.commit()
        out["binary_copy_serial"] = conn.execute("SELECT id, note FROM psy_serial ORDER BY id").fetchall()
        conn.rollback()
        out["status"] = int(conn.info.transaction_status)
    out["notices"] = notices
    print(json.dumps(out))


main()
