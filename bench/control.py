"""Area 9 — the owner's control (SPEC §5b) at 100,000 facts.

On a copy of the 100k-fact store: `forget` and `edit` through the API (p95), then the next
sync against a live sqld (one request?); `export` of every fact to JSONL, and `import_jsonl`
of that file into a fresh home.
"""

from __future__ import annotations

import random
import time

from .util import AreaResult, Cloud, Workspace, log, memory, ms, p50_p95, secs, stats, \
    time_calls, verdict

TITLE = "9. Owner's control"
N = 100_000
P95_MS = 5.0
EXPORT_S, IMPORT_S = 5.0, 10.0


def run(ws: Workspace) -> AreaResult:
    res = AreaResult("control", TITLE)
    n = 10_000 if ws.quick else N
    home = ws.copy_store(n)
    calls = 40 if ws.quick else 200
    with Cloud(ws) as cloud:
        url = cloud.new_db("control")
        live = cloud.remote(url)
        with memory(home, encryption="off") as mem:
            ids = [r[0] for r in mem.store.conn.execute("SELECT id FROM facts")]
            random.Random(9).shuffle(ids)
            forgets, edits = ids[:calls + 5], ids[calls + 5:2 * (calls + 5)]
            forget_s = time_calls(lambda i: mem.forget(i), forgets)
            edit_s = time_calls(lambda i: mem.edit(i, importance=0.42), edits)
            # The first sync carries the whole store (a bulk-loaded copy was never pushed);
            # then one more forget and edit, and the next sync is what is measured.
            mem.sync(remote=live)
            mem.forget(ids[-1])
            mem.edit(ids[-2], text="an edited fact for the bench")
            c0 = live.sql.pipeline_count
            report = mem.sync(remote=live)
            requests = live.sql.pipeline_count - c0
            gone = live.sql.execute("SELECT count(*) FROM cold_memories WHERE id = ?",
                                    (ids[-1],)).rows[0][0]
            out = ws.root / "control-export.jsonl"
            t = time.perf_counter()
            exported = mem.export(out)
            export_s = time.perf_counter() - t
        live.close()
    with memory(ws.new_home("control-import"), encryption="off") as fresh:
        t = time.perf_counter()
        imported = fresh.import_jsonl(out)["facts"]
        import_s = time.perf_counter() - t
    fs, es = stats(forget_s), stats(edit_s)
    log(f"control: forget p95 {ms(fs['p95'])}, edit p95 {ms(es['p95'])}, export {export_s:.2f} s, "
        f"import {import_s:.2f} s")
    res.data.update({"facts": n, "forget": fs, "edit": es, "next_sync_requests": requests,
                     "export_s": export_s, "import_s": import_s, "exported": exported,
                     "imported": imported, "cloud_row_after_forget": gone})
    res.add(f"forget (API) at {n:,} facts", p50_p95(fs), f"{len(forget_s)} calls",
            f"p95 < {P95_MS:g} ms", verdict(fs["p95"] * 1000 < P95_MS))
    res.add(f"edit (API) at {n:,} facts", p50_p95(es), f"{len(edit_s)} calls",
            f"p95 < {P95_MS:g} ms", verdict(es["p95"] * 1000 < P95_MS))
    res.add("next sync after a forget + an edit", f"{requests} request(s)",
            f"pushed {report.pushed_facts} fact(s); cloud row gone: {gone == 0}", "1",
            verdict(requests == 1 and gone == 0))
    res.add(f"export {exported:,} facts (jsonl)", secs(export_s), "", f"< {EXPORT_S:g} s",
            verdict(export_s < EXPORT_S))
    res.add(f"import {imported:,} facts (jsonl, fresh home)", secs(import_s), "",
            f"< {IMPORT_S:g} s", verdict(import_s < IMPORT_S and imported == exported))
    return res
