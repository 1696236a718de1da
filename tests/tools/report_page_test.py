#!/usr/bin/env python3
"""The page of `fast report`, rendered in headless Chromium (issue: "See the comparison").

Runs a small `fast compare` (three simulated runs, one of them made to diverge), writes its report
with `fast report`, loads it in headless Chromium and checks:
  - no console message and no script error (the page counts errors into <body data-errors>);
  - no network request made by the page (Chromium's net log; Chromium's own background requests,
    initiator "not an origin", go to a refused loopback proxy and are not the page's);
  - every chart present with one series per run (each <figure data-series>), 8 + runs charts;
  - the diverged run marked in the table;
  - a screenshot that is not blank: the charts' series colours are drawn.
Then `fast report` of a folder of twelve runs' metrics files (copies of those three, edited) checks
what sets runs apart: a run without its summary and an interrupted one are named so and marked in
the table; a label of 150 characters is in the page's legend whole; twelve runs get twelve colours;
a run whose records lack `bytes_sent` has no points in the bytes chart (not a line at zero); each
legend entry is a toggle button that the keyboard reaches; the time-to-target caption names the
runs' shared target though one run's summary lacks the field; a run whose records lack
bytes_per_link (or that has no summary) says so under its empty bytes-per-link map.
Exit 0: passed; 1: failed; 77: skipped (Chromium is not installed), which CTest reports as skipped.
Every process started here runs in its own process group and is killed with it when done or
out of time.
"""
import argparse
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import zlib

SWEEP = """
[base]
runtime = "sim"
workers = 3
model = "mlp"
steps = 40
batch = 32
eval_every = 10
log_every = 5
seed = 5

[[run]]
name = "allreduce"
strategy = "allreduce"

[[run]]
name = "ps async"
strategy = "ps"
mode = "async"

[[run]]
name = "ps async too fast"
strategy = "ps"
mode = "async"
lr_semantics = "per-gradient"
optimizer = "momentum"
lr = 2.0
"""

PALETTE = [(0x1F, 0x77, 0xB4), (0xD6, 0x27, 0x28), (0x2C, 0xA0, 0x2C)]  # the page's first three colours

# Chromium without its background services, with every host unresolvable and any request that is
# still made sent to a refused loopback port: nothing leaves the machine.
CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
    "--disable-extensions", "--no-pings", "--disable-domain-reliability",
    "--disable-features=Translate,OptimizationHints,MediaRouter", "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>", "--host-resolver-rules=MAP * ~NOTFOUND",
]

failures = []


def check(ok, what):
    print(("ok      " if ok else "FAILED  ") + what)
    if not ok:
        failures.append(what)


def run(args, timeout, env=None):
    """Runs args in a new process group; kills its whole process group when it ends or times out."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise SystemExit(f"FAILED  {args[0]} ran past {timeout} s and was killed\n{err.decode(errors='replace')[-2000:]}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # what it left behind (Chromium's helpers)
        except ProcessLookupError:
            pass
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def png_pixels(path):
    """Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes): (width, height, rows)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unsupported PNG {header}"
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 0xFF
            elif ftype == 2:
                line[i] = (line[i] + b) & 0xFF
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


LONG_LABEL = "a-run-label <!-- <script> " + "x" * 125  # 150 characters, with what once broke the page


def check_many_runs(fast, chromium, work, compare_out):
    """A folder of twelve runs' metrics files: how the page tells the runs apart."""
    sources = [os.path.join(compare_out, d, "1", "metrics.jsonl") for d in sorted(os.listdir(compare_out))
               if os.path.isdir(os.path.join(compare_out, d))]
    records = [[json.loads(line) for line in open(f) if line.strip()] for f in sources]
    folder = os.path.join(work, "runs")
    os.makedirs(folder)
    names = [f"r{i:02d}" for i in range(9)] + ["r09-unfinished", "r10-interrupted", LONG_LABEL]

    def write(name, recs):
        with open(os.path.join(folder, name + ".jsonl"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in recs))

    for i, name in enumerate(names):
        recs = [dict(r) for r in records[i % 2]]  # the two runs that did not diverge
        if name.endswith("unfinished"):
            recs = [r for r in recs if r["event"] != "end"]
        if name.endswith("interrupted"):
            recs[-1].update(interrupted=True, interrupted_by="SIGINT", interrupted_at_step=20)
        if i == 3:
            for r in recs:
                r.pop("bytes_sent", None)
        if i == 4:  # a summary without these fields: the others' shared target is still named
            for r in recs:
                r.pop("target_accuracy", None)
                r.pop("bytes_per_link", None)
        write(name, recs)
    page = os.path.join(work, "runs.html")
    code, _, stderr = run([fast, "report", folder, "--out", page], 60)
    check(code == 0, f"fast report of a folder of 12 runs' metrics exits 0 (got {code}) {stderr[-500:]}")
    code, dom, _ = run([chromium] + CHROMIUM_FLAGS + [f"--user-data-dir={os.path.join(work, 'profile2')}",
                                                      "--virtual-time-budget=5000", "--dump-dom", "file://" + page], 120)
    body = re.search(r"<body([^>]*)>", dom)
    attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1))) if body else {}
    check(code == 0 and attrs.get("errors") == "0", f"the page of 12 runs loads without script error ({attrs})")
    legend = re.search(r'<ul class="legend" id="legend">(.*?)</ul>', dom, re.S)
    items = re.findall(r"<li[^>]*>(.*?)</li>", legend.group(1)) if legend else []
    check(len(items) == 12, f"the legend lists the 12 runs (got {len(items)})")
    shown = LONG_LABEL.replace("<", "&lt;").replace(">", "&gt;")  # as the DOM writes the text
    check(any(shown in item for item in items), "the legend holds the 150-character label whole")
    buttons = re.findall(r'<li (?=[^>]*role="button")(?=[^>]*tabindex="0")(?=[^>]*aria-pressed="true")[^>]*>',
                         legend.group(1) if legend else "")
    check(len(buttons) == 12, f"each legend entry is a toggle button the keyboard reaches (got {len(buttons)} of 12)")
    target = re.search(r'<figure id="time-to-target".*?<figcaption>([^<]*)</figcaption>', dom, re.S)
    shared = {json.dumps(r.get("target_accuracy")) for r in records[0] + records[1] if r.get("event") == "end"}
    captions = dict(re.findall(r'<figure id="links-\d+".*?<figcaption>([^<:]*): ([^<]*)</figcaption>', dom, re.S))
    check(captions.get("r04", "").startswith("bytes per link not recorded (its summary has no bytes_per_link)")
          and captions.get("r09-unfinished (unfinished)", "").startswith("bytes per link not recorded (the run has "
                                                                          "no summary)")
          and captions.get("r00", "").startswith("bytes sent from a worker"),
          f"a run whose records lack bytes_per_link says so under its empty map (got {captions})")
    check(target is not None and len(shared) == 1 and f"first reached {shared.pop()} (" in target.group(1),
          f"the time-to-target caption names the target the runs share, one run lacking it "
          f"(got {target.group(1) if target else 'no caption'})")
    colours = re.findall(r'class="swatch[^"]*" style="border-color: ([^;"]+)', legend.group(1) if legend else "")
    rgb = [tuple(int(v) for v in re.findall(r"\d+", c)[:3]) for c in colours]
    closest = min((sum(abs(a - b) for a, b in zip(rgb[i], rgb[j])) for i in range(len(rgb)) for j in range(i)),
                  default=0)
    check(len(rgb) == 12 and closest >= 40, f"12 runs get 12 colours at least 40 apart in RGB (closest {closest}: {colours})")
    rows = re.findall(r'<tr(?: class="([a-z-]+)")?[^>]*>(.*?)</tr>', dom, re.S)
    cells = {re.findall(r"<td>([^<]*)</td>", r)[0]: (c, re.findall(r"<td>([^<]*)</td>", r)) for c, r in rows
             if "<td>" in r}
    check(len(cells) == 12, f"the table has a row for each of the 12 runs, unfinished included (got {len(cells)})")
    unfinished = cells.get("r09-unfinished", ("", []))
    check(unfinished[0] == "ended-early" and "unfinished" in unfinished[1]
          and unfinished[1][1:4] == ["ps", "sim", "3"],  # from its start record
          f"the run without a summary is marked unfinished in the table (got {unfinished})")
    interrupted = cells.get("r10-interrupted", ("", []))
    check(interrupted[0] == "ended-early" and "interrupted by SIGINT at step 20" in interrupted[1],
          f"the interrupted run is marked in the table (got {interrupted})")
    check(cells.get("r00", ("x",))[0] in ("", None), "a run that finished is not marked")
    points = re.search(r'<figure id="bytes"[^>]*data-points="([0-9,]*)"', dom)
    counts = [int(n) for n in points.group(1).split(",")] if points else []
    bare = sorted(names).index(names[3])  # the page lists the runs in name order
    check(len(counts) == 12 and counts[bare] == 0 and all(n > 0 for j, n in enumerate(counts) if j != bare),
          f"the run without bytes_sent has no points in the bytes chart, the others have theirs (got {counts})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fast", required=True, help="the fast command")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("SKIPPED: Chromium is not installed (Debian package chromium; make deps installs it)")
        return 77

    work = tempfile.mkdtemp(prefix="fast-report-test-")
    try:
        sweep = os.path.join(work, "sweep.toml")
        with open(sweep, "w") as f:
            f.write(SWEEP)
        out = os.path.join(work, "out")
        code, stdout, stderr = run([args.fast, "compare", sweep, "--out", out, "--progress", "never"], 400)
        check(code == 0, f"fast compare exits 0 (got {code})")
        if code != 0:
            print(stderr[-3000:])
            return 1
        check(os.path.exists(os.path.join(out, "report.html")), "fast compare writes report.html next to compare.md")
        page = os.path.join(work, "page.html")
        code, stdout, stderr = run([args.fast, "report", out, "--out", page], 60)
        check(code == 0 and os.path.exists(page), f"fast report writes the page (exit {code}) {stderr[-500:]}")
        summaries = [json.load(open(os.path.join(out, d, "1", "summary.json"))) for d in sorted(os.listdir(out))
                     if os.path.isdir(os.path.join(out, d))]
        runs = len(summaries)
        check(runs == 3, f"three runs were made (got {runs})")
        diverged = [s["diverged"] for s in summaries]
        check(diverged == [False, False, True], f"only the third run diverged (summaries say {diverged})")

        profile = os.path.join(work, "profile")
        netlog = os.path.join(work, "net.json")
        url = "file://" + page
        code, dom, log = run([chromium] + CHROMIUM_FLAGS + [f"--user-data-dir={profile}", f"--log-net-log={netlog}",
                                                           "--virtual-time-budget=5000", "--dump-dom", url], 120)
        check(code == 0 and "<body" in dom, f"Chromium loads the page (exit {code})")
        body = re.search(r"<body([^>]*)>", dom)
        attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1))) if body else {}
        check(attrs.get("errors") == "0", f"no script error (body data-errors={attrs.get('errors')})")
        console = [line for line in log.splitlines() if ":CONSOLE" in line]
        check(not console, "no console message" + ("".join("\n    " + c for c in console[:5])))
        expected = {"accuracy-time": runs, "accuracy-samples": runs, "loss": runs, "bytes": runs, "consensus": runs,
                    "staleness": runs, "time-to-target": runs, "idle": runs}
        expected.update({f"links-{i}": 1 for i in range(runs)})
        check(attrs.get("rendered") == str(len(expected)),
              f"{len(expected)} charts drawn (body data-rendered={attrs.get('rendered')})")
        for chart, series in expected.items():
            m = re.search(r'<figure id="' + re.escape(chart) + r'"[^>]*data-series="(\d+)"', dom)
            check(m is not None and int(m.group(1)) == series,
                  f"chart {chart} has {series} series (got {m.group(1) if m else 'no chart'})")
        rows = re.findall(r'<tr( class="diverged")?[^>]*><td>([^<]*)</td>', dom)
        check(len(rows) == runs, f"the table has one row per run (got {len(rows)})")
        check([bool(c) for c, _ in rows] == diverged, "the table marks exactly the diverged run")

        events = json.load(open(netlog))
        types = {v: k for k, v in events["constants"]["logEventTypes"].items()}
        requests = []
        for e in events.get("events", []):
            p = e.get("params", {})
            # The job's start carries the URL (its end only the error); Chromium's own requests have
            # the initiator "not an origin", the page's its origin ("null" for a file).
            if types.get(e.get("type")) == "URL_REQUEST_START_JOB" and "url" in p and p.get("initiator") != "not an origin":
                if not p["url"].startswith(("file:", "data:", "chrome:", "about:")):
                    requests.append(p.get("url"))
        check(not requests, f"the page makes no network request (got {requests[:5]})")

        shot = os.path.join(work, "shot.png")
        code, _, _ = run([chromium] + CHROMIUM_FLAGS + [f"--user-data-dir={profile}", "--virtual-time-budget=5000",
                                                        "--window-size=1280,2400", f"--screenshot={shot}", url], 120)
        check(code == 0 and os.path.exists(shot), f"Chromium takes a screenshot (exit {code})")
        if os.path.exists(shot):
            width, height, pixels = png_pixels(shot)
            flat = [p for row in pixels for p in row]
            non_white = sum(1 for p in flat if sum(p) < 720)
            check(non_white > 0.02 * len(flat), f"the screenshot is not blank ({non_white} of {len(flat)} pixels drawn)")
            for colour in PALETTE:
                near = sum(1 for p in flat if all(abs(p[i] - colour[i]) <= 12 for i in range(3)))
                check(near > 200, f"series colour #{bytes(colour).hex()} is drawn ({near} pixels)")
        check_many_runs(args.fast, chromium, work, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(failures)} failed" if failures else "report page: all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
