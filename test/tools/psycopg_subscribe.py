"""psycopg 3 reading a subscription: COPY (SUBSCRIBE ...) TO STDOUT with cursor.copy(), then
Materialize's DECLARE ... CURSOR FOR SUBSCRIBE and RisingWave's DECLARE ... SUBSCRIPTION CURSOR
with FETCH. A second connection runs the given statements while the first reads; each read stops
at the row of key UNTIL (the last statement's insert). Prints one JSON object with the rows each
form received (epochs and timestamps as text); test/clients/subscribe-cursors.test.ts checks them.

Usage: python psycopg_subscribe.py DSN '{"copy": [sql...], "cursor": [sql...], "rw": [sql...], "until": "4"}'
"""
import json
import sys
import time

import psycopg


def main() -> None:
    dsn = sys.argv[1]
    plan = json.loads(sys.argv[2])
    until = plan["until"]
    out: dict = {}
    with psycopg.connect(dsn, autocommit=True) as writer, psycopg.connect(dsn, autocommit=True) as reader:

        def write(pending: list) -> None:
            if pending:
                writer.execute(pending.pop(0))
                time.sleep(0.005)

        # COPY: after each progress line the writer runs the next statement.
        pending = list(plan["copy"])
        rows: list = []
        cancelled = False
        try:
            with reader.cursor() as cur:
                with cur.copy("COPY (SUBSCRIBE py_copy WITH (PROGRESS)) TO STDOUT") as copy:
                    for row in copy.rows():
                        if cancelled:
                            continue
                        rows.append(list(row))
                        if row[2] == "t":
                            write(pending)
                        elif row[3] == until:
                            reader.cancel_safe()
                            cancelled = True
        except psycopg.errors.QueryCanceled as error:
            out["copy_cancel_code"] = error.sqlstate
        out["copy"] = rows
        out["after_cancel"] = reader.execute("SELECT 1").fetchone()[0]

        # Materialize's cursor, in a transaction block.
        pending = list(plan["cursor"])
        rows = []
        with psycopg.connect(dsn) as blocked:
            with blocked.cursor() as cur:
                cur.execute("DECLARE c CURSOR FOR SUBSCRIBE py_cursor WITH (PROGRESS)")
                seen = False
                deadline = time.time() + 30
                while not seen and time.time() < deadline:
                    cur.execute("FETCH 100 c WITH (timeout = '1s')")
                    for epoch, diff, progressed, k, v in cur.fetchall():
                        rows.append([str(epoch), diff, progressed, k, v])
                        seen = seen or (not progressed and str(k) == until)
                    write(pending)
            blocked.commit()
        out["cursor"] = rows

        # RisingWave's subscription cursor: no block; the statements run first, then FETCH NEXT.
        reader.execute("DECLARE r SUBSCRIPTION CURSOR FOR py_rw_s")
        for statement in plan["rw"]:
            write([statement])
        rows = []
        deadline = time.time() + 30
        while not any(str(row[0]) == until for row in rows) and time.time() < deadline:
            for k, v, op, stamp in reader.execute("FETCH NEXT FROM r WITH (timeout = '2s')").fetchall():
                rows.append([k, v, op, str(stamp)])
        reader.execute("CLOSE r")
        out["rw"] = rows
    print(json.dumps(out))


if __name__ == "__main__":
    main()
