"""psycopg 3 over TLS: a connection with sslmode=require reads its own pg_stat_ssl row and the
sslinfo functions, and says whether libpq uses TLS; then a connection with sslmode=disable, which a
server that requires TLS refuses. Prints one JSON object; test/tools/tls-drivers.test.ts compares
it between oxbow (--tls-required) and PostgreSQL 15 (ssl=on, a hostssl-only entry).

Usage: python psycopg_tls.py DSN
"""
import json
import sys

import psycopg


def main() -> None:
    dsn = sys.argv[1]
    out: dict = {}
    with psycopg.connect(dsn, sslmode="require") as conn:
        out["client_ssl_in_use"] = conn.pgconn.ssl_in_use
        row = conn.execute(
            "SELECT ssl, version, cipher, bits, client_dn, client_serial, issuer_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
        ).fetchone()
        out["pg_stat_ssl"] = [None if value is None else str(value) for value in row]
        out["sslinfo"] = list(conn.execute("SELECT ssl_is_used(), ssl_version(), ssl_cipher()").fetchone())
    try:
        with psycopg.connect(dsn, sslmode="disable") as conn:
            conn.execute("SELECT 1")
            out["plaintext"] = "connected"
    except psycopg.OperationalError as error:
        out["plaintext"] = "refused: " + ("FATAL" if "FATAL" in str(error) else str(error))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
