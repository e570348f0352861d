"""pgcli's own code against a server: connects with pgcli.pgexecute.PGExecute, runs every
completion refresher pgcli runs at start and after DDL (pgcli.completion_refresher), each
PGExecute metadata query, and pgspecial's backslash commands, and prints one JSON line per step:
{"step": ..., "ok": true, "result": ...} or {"step": ..., "ok": false, "error": "..."}.

Usage: .cache/python-tools/bin/python test/tools/pgcli/refresh.py HOST PORT USER DATABASE
(scripts/python-tools.sh installs pgcli and prints that python's path).
"""

import json
import sys
import traceback

from pgcli.completion_refresher import CompletionRefresher
from pgcli.pgcompleter import PGCompleter
from pgcli.pgexecute import PGExecute
from pgspecial.main import PGSpecial


def emit(step, ok, result=None, error=None):
    line = {"step": step, "ok": ok}
    if ok:
        line["result"] = result
    else:
        line["error"] = error
    print(json.dumps(line, default=str), flush=True)


def attempt(step, action):
    try:
        emit(step, True, action())
    except Exception as error:  # noqa: BLE001 - every failure is reported, none stops the run
        emit(step, False, error="".join(traceback.format_exception_only(type(error), error)).strip())


def names(rows):
    return sorted(list(row) for row in rows)


def main():
    host, port, user, database = sys.argv[1:5]
    executor = PGExecute(database=database, user=user, host=host, port=int(port))
    special = PGSpecial()

    # The refreshers, as pgcli runs them after connecting (casing needs a casing file: off here).
    completer = PGCompleter(settings={"casing_file": None, "generate_casing_file": False})
    for name, refresh in CompletionRefresher.refreshers.items():
        attempt(f"refresher {name}", lambda refresh=refresh: refresh(completer, executor) or "done")

    # The PGExecute metadata queries the refreshers make, with what they return. (casing() is left
    # out: pgcli calls it only to write a casing file, with generate_casing_file on.)
    attempt("search_path", lambda: executor.search_path())
    attempt("schemata", lambda: sorted(executor.schemata()))
    attempt("tables", lambda: names(executor.tables()))
    attempt("views", lambda: names(executor.views()))
    attempt("table_columns", lambda: names(executor.table_columns()))
    attempt("view_columns", lambda: names(executor.view_columns()))
    attempt("databases", lambda: len(executor.databases()))
    attempt("foreignkeys", lambda: names(executor.foreignkeys()))
    attempt("functions", lambda: sorted(f.func_name for f in executor.functions() if f.schema_name == "public"))
    attempt("datatypes", lambda: names(executor.datatypes()))
    attempt("view_definition", lambda: executor.view_definition("big_orders"))
    attempt("function_definition", lambda: executor.function_definition("add_one"))

    # pgspecial's backslash commands, as typed at the pgcli prompt.
    for command in ["\\l", "\\dn", "\\dt", "\\dv", "\\dm", "\\di", "\\df", "\\dT", "\\du", "\\d customers", "\\d+ orders", "\\d big_orders"]:
        def run(command=command):
            results = list(executor.run(command, pgspecial=special))
            out = []
            for title, rows, headers, status, *_ in results:
                out.append({"headers": list(headers or []), "rows": len(list(rows or [])), "status": status})
            return out
        attempt(command, run)

    # The session still answers.
    attempt("select 1", lambda: [list(r) for r in list(executor.run("select 1"))[0][1]])


if __name__ == "__main__":
    main()
