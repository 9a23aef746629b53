"""The outcome of a pair from its attempts, and the one-screen summary of `conformance matrix`."""

from __future__ import annotations

from pathlib import Path

GOOD = ("PASSED", "INFORMATIONAL")


def pair_outcome(attempts: list[str]) -> str:
    """passed (first time), flaky (failed, then passed), failing (failed every time), no-cases."""
    if not attempts:
        return "no-cases"
    if attempts[0] in ("passed", "no-cases"):
        return attempts[0]
    return "flaky" if "passed" in attempts[1:] else "failing"


def _cell(pair: dict | None) -> str:
    if pair is None:
        return "-"
    grades = pair.get("grades") or {}
    graded = sum(n for grade, n in grades.items() if grade != "NOT-APPLICABLE")
    good = sum(grades.get(grade, 0) for grade in GOOD)
    tries = f" x{len(pair['attempts'])}" if len(pair["attempts"]) > 1 else ""
    counts = f" {good}/{graded}" if graded else ""
    outcome = pair['outcome'].upper() if pair['outcome'] in ("flaky", "failing") else pair['outcome']
    return f"{outcome}{counts}{tries}"


def print_summary(document: dict, out: Path) -> None:
    protocols = document["protocols"]
    pairs = {(p["implementation"], p["protocol"]): p for p in document["pairs"]}
    names = [impl["name"] for impl in document["implementations"]]
    width = max([len("implementation")] + [len(n) for n in names])
    cells = {key: _cell(pair) for key, pair in pairs.items()}
    column = max([14] + [len(p) for p in protocols] + [len(c) for c in cells.values()])
    print()
    print(f"{'implementation':<{width}}  " + "  ".join(f"{p:<{column}}" for p in protocols))
    for name in names:
        print(f"{name:<{width}}  " + "  ".join(f"{cells.get((name, p), '-'):<{column}}" for p in protocols))
    summary = document["summary"]
    print(f"\n{len(pairs)} pairs in {document['seconds']:.0f}s: " + ", ".join(f"{n} {k}" for k, n in summary.items()))
    print("cells: outcome, PASSED+INFORMATIONAL / graded cases (last attempt), xN = attempts")
    for pair in document["pairs"]:
        if pair["outcome"] in ("flaky", "failing"):
            last = pair["attempts"][-1]
            changed = f"; grade changed: {', '.join(pair['changedCases'][:3])}" if pair["changedCases"] else ""
            print(f"  {pair['outcome']:<8} {pair['implementation']} x {pair['protocol']}: "
                  f"{out / last['records']}{changed}")
    print(f"matrix: {out / 'matrix.json'}")


# ---------------------------------------------------------------- interop: client x server

INTEROP_GOOD = ("passed", "unsupported", "no-client", "no-server")
_INTEROP_COLOURS = {"passed": "#cfe8cf", "unsupported": "#e6e6e6", "failed": "#f6e3b4", "error": "#d9c3e6",
                    "client-broke-spec": "#f4c7c3", "server-broke-spec": "#f4c7c3", "both-broke-spec": "#f4c7c3",
                    "no-client": "#f4f4f4", "no-server": "#f4f4f4"}


def interop_cell(pair: dict | None) -> str:
    """VERDICT passed/run: a pair's verdict with its passed cases over those the client supports."""
    if pair is None:
        return "-"
    if not pair["cases"] and pair.get("detail"):
        return pair["detail"]  # e.g. no client in this implementation
    verdicts = [case["verdict"] for case in pair["cases"]]
    run = sum(1 for v in verdicts if v != "unsupported")
    passed = verdicts.count("passed")
    verdict = pair["verdict"]
    shown = verdict if verdict in INTEROP_GOOD else verdict.upper()
    return f"{shown} {passed}/{run}" if run else shown


def print_interop_table(document: dict, out: Path) -> None:
    """Clients down, servers across, in the way of the QUIC interop runner."""
    pairs = {(p["client"], p["server"]): p for p in document["pairs"]}
    clients, servers = document["clients"], document["servers"]
    cells = {key: interop_cell(pair) for key, pair in pairs.items()}
    corner = "client \\ server"
    width = max([len(corner)] + [len(c) for c in clients])
    column = max([len(s) for s in servers] + [len(c) for c in cells.values()] + [8])
    print(f"\n{document['protocol']} interop over {document['transport']}: client x server, "
          f"{len(document['cases'])} cases per pair")
    print(f"{corner:<{width}}  " + "  ".join(f"{s:<{column}}" for s in servers))
    for client in clients:
        print(f"{client:<{width}}  " + "  ".join(f"{cells.get((client, s), '-'):<{column}}" for s in servers))
    print("cells: verdict (the worst case's), passed / cases the client supports")
    for pair in document["pairs"]:
        for case in pair["cases"]:
            if case["verdict"] not in INTEROP_GOOD:
                first = case["violations"][0] if case["violations"] else case["detail"]
                where = out / case["wire"] if case["wire"] else ""
                print(f"  {case['verdict']:<17} {pair['client']} x {pair['server']} {case['case']}: {first} {where}")
    print(f"interop: {out / 'interop.json'}, {out / 'interop.html'}")


def interop_html(document: dict) -> str:
    """A static page: the client x server table, each cell linking its cases' wire logs."""
    from html import escape
    pairs = {(p["client"], p["server"]): p for p in document["pairs"]}
    head = "".join(f"<th scope='col'>server<br>{escape(s)}</th>" for s in document["servers"])
    rows = []
    for client in document["clients"]:
        cells = []
        for server in document["servers"]:
            pair = pairs.get((client, server))
            if pair is None:
                cells.append("<td>-</td>")
                continue
            cases = "".join(
                f"<li><a href='{escape(c['wire'])}'>{escape(c['case'])}</a>: {escape(c['verdict'])}"
                + (f" <small>{escape(c['violations'][0] if c['violations'] else c['detail'])}</small>"
                   if c["verdict"] not in INTEROP_GOOD else "") + "</li>"
                for c in pair["cases"])
            notes = sorted({note for c in pair["cases"] for note in c.get("notes", [])})
            said = "".join(f"<p><small>monitor: {escape(note)}</small></p>" for note in notes)
            colour = _INTEROP_COLOURS.get(pair["verdict"], "#ffffff")
            listed = f"<ul>{cases}</ul>" if cases else ""
            cells.append(f"<td style='background:{colour}' data-verdict='{escape(pair['verdict'])}'>"
                         f"<b>{escape(interop_cell(pair))}</b>{listed}{said}</td>")
        rows.append(f"<tr><th scope='row'>client<br>{escape(client)}</th>{''.join(cells)}</tr>")
    title = f"{document['protocol']} interop: client x server"
    return ("<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{escape(title)}</title><style>body{{font-family:sans-serif}}table{{border-collapse:collapse}}"
            "td,th{border:1px solid #999;padding:4px;vertical-align:top}ul{margin:0;padding-left:1.2em}"
            "small{color:#444}</style></head><body>"
            f"<h1>{escape(title)}</h1><p>Transport {escape(document['transport'])}; every frame of both "
            "directions checked by the suite's wire monitor. A verdict names the side whose frames broke the "
            "spec; <i>failed</i>: the client's checks failed with no frame breaking a rule. What the monitor "
            "could not check (encrypted content) is said under the cell.</p>"
            f"<table id='interop'><thead><tr><th>client \\ server</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></body></html>\n")
