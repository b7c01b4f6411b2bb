"""The run ledger as one self-contained HTML page (``sparkmark report --format html``).

    from sparkmark.ops.report_html import write_html_report
    write_html_report("runs.html", state=None, pipeline="overwatch", last=500)

The page works offline (no CDN, no network): Apache ECharts (``sparkmark/ops/assets``, Apache-2.0)
and the ledger data are inlined. It shows a timeline of runs per job/module coloured by status
(hover: error, records, files, late files, bookmark version), each pipeline module's data windows
``[from, until)``, records and duration per run, a sortable filterable table, and each job's
bookmark versions.
"""
from __future__ import annotations

import html
import json
import os
import re
import time
from importlib import resources
from typing import Any

from sparkmark.core.clock import format_ts
from sparkmark.core.status import parse_statuses
from sparkmark.state.ledger import ledger_rows, run_markers
from sparkmark.state import StateStore, open_store

STATUS_COLOURS = {"SUCCEEDED": "#2e9d5b", "EMPTY": "#9aa5b1", "FAILED": "#d64545",
                  "SKIPPED": "#e0a526", "ROLLED_BACK": "#7b57c9", "RUNNING": "#2f7fd6"}
ERROR_LIMIT = 600    # characters of error text kept per run in the page
STATE_LIMIT = 400    # characters of a bookmark version's state kept in the page
FILES_RUNS = 100     # newest runs whose files the page lists
FILES_PER_RUN = 100  # files listed per run (with the count of all)


def _asset(name: str) -> str:
    return resources.files("sparkmark.ops").joinpath("assets").joinpath(name).read_text(
        encoding="utf-8")


def _label(r: dict[str, Any]) -> str:
    if r.get("pipeline"):
        return f"{r['pipeline']} {r.get('module_id')} {r.get('module_name') or ''}".strip()
    return r["job_name"]


def page_data(store: StateStore, pipeline: str | None = None,
              module: int | str | list[int] | None = None,
              job: str | None = None, last: int | None = None, *,
              statuses: Any = None, since: int | str | None = None) -> dict[str, Any]:
    """The page's data, columnar and compact (ints and dictionary-coded strings), so that
    10,000 ledger rows stay well under the page's 5 MB budget (filters as in
    :func:`~sparkmark.state.ledger.ledger_rows`)."""
    rows = ledger_rows(store, pipeline=pipeline, module=module, job=job, last=last,
                       statuses=statuses, since=since)
    shown_statuses = ",".join(parse_statuses(statuses) or ()) or None
    labels: list[str] = []
    label_ix: dict[str, int] = {}
    statuses = list(STATUS_COLOURS)
    cols: dict[str, list[Any]] = {k: [] for k in (
        "lane", "status", "run_id", "run_number", "attempt", "start", "end", "from", "until",
        "read", "written", "files", "late", "version", "error", "note", "pipeline_run")}
    for r in rows:
        lab = _label(r)
        if lab not in label_ix:
            label_ix[lab] = len(labels)
            labels.append(lab)
        st = r["status"]
        if st not in statuses:
            statuses.append(st)
        m = run_markers(r)
        err = r.get("error") or ""
        cols["lane"].append(label_ix[lab])
        cols["status"].append(statuses.index(st))
        cols["run_id"].append(r["run_id"])
        cols["run_number"].append(r["run_number"])
        cols["attempt"].append(r["attempt"])
        cols["start"].append(r["run_start_ts"])
        cols["end"].append(r.get("run_end_ts"))
        cols["from"].append(r.get("from_ts"))
        cols["until"].append(r.get("until_ts"))
        cols["read"].append(r.get("records_read"))
        cols["written"].append(r.get("records_written"))
        cols["files"].append(m["files"])
        cols["late"].append(m["late_files"])
        cols["version"].append(r.get("end_version"))
        cols["error"].append(err[:ERROR_LIMIT] + ("…" if len(err) > ERROR_LIMIT else ""))
        cols["note"].append(m["note"])
        cols["pipeline_run"].append((r.get("pipeline_run_id") or "")[:8])
    lane_is_pipeline = [False] * len(labels)
    lane_job = [""] * len(labels)
    for r in rows:
        i = label_ix[_label(r)]
        lane_is_pipeline[i] = bool(r.get("pipeline"))
        lane_job[i] = r["job_name"]
    bookmarks = {}
    for name in sorted(set(lane_job)):
        try:
            hist = store.history(name, last=200)
        except Exception:  # noqa: BLE001 - a job with ledger rows but no job row: skip it
            continue
        bookmarks[name] = [[v.version, v.kind, v.run_id or v.source_run_id or "", v.created_ts,
                            _short_state(v.state)] for v in hist]
    # the per-file audit of the newest runs that read files: first FILES_PER_RUN each
    newest = [r["run_id"] for r in sorted(rows, key=lambda r: r["run_start_ts"] or 0,
                                          reverse=True)]
    audit = store.run_files(newest[:FILES_RUNS * 4], per_run=FILES_PER_RUN)
    files_of: list[list[Any]] = []
    for rid in newest:
        if rid in audit and len(files_of) < FILES_RUNS:
            total, first = audit[rid]
            files_of.append([rid, total, [[p, sz, k] for p, sz, k in first]])
    return {"labels": labels, "lane_pipeline": lane_is_pipeline, "lane_job": lane_job,
            "files": files_of,
            "statuses": statuses, "colours": [STATUS_COLOURS.get(s, "#555") for s in statuses],
            "runs": cols, "bookmarks": bookmarks, "generated": int(time.time() * 1000),
            "store": store.display_url,
            "filters": {k: v for k, v in (("pipeline", pipeline), ("module", module),
                                          ("job", job), ("last", last),
                                          ("status", shown_statuses),
                                          ("since", format_ts(since) if isinstance(since, int)
                                           else since)) if v is not None}}


def _short_state(state: dict[str, Any]) -> str:
    text = json.dumps(state, sort_keys=True, default=str)
    return text if len(text) <= STATE_LIMIT else text[:STATE_LIMIT - 1] + "…"


def render_html(data: dict[str, Any]) -> str:
    """The page for :func:`page_data`'s result: one string, every script inlined."""
    # <, > and & as JSON escapes: no value (a job name, an error Spark echoed) can end the
    # script element or open a comment in it ("<!--<script>" would hide the rest of the page)
    payload = (json.dumps(data, separators=(",", ":"), default=str)
               .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))
    title = "sparkmark run ledger"
    if data["filters"]:
        title += " — " + ", ".join(f"{k} {v}" for k, v in data["filters"].items())
    parts = {"TITLE": html.escape(title),
             "ECHARTS": _asset("echarts.min.js").replace("</script", "<\\/script"),
             "DATA": payload, "APP": _APP}
    # one pass: a value that spells a placeholder ("__APP__") is not substituted again
    return re.sub(r"__(TITLE|ECHARTS|DATA|APP)__", lambda m: parts[m.group(1)], _TEMPLATE)


def write_html_report(path: str, state: str | StateStore | None = None, *,
                      pipeline: str | None = None, module: int | str | list[int] | None = None,
                      job: str | None = None, last: int | None = None,
                      statuses: Any = None, since: int | str | None = None) -> dict[str, Any]:
    """Write the page to ``path``; returns ``{"path", "runs", "bytes"}``.  Filters as in
    :func:`~sparkmark.state.ledger.ledger_rows` (``last``: the newest N runs).

        write_html_report("ledger.html", pipeline="overwatch")
    """
    store = state if isinstance(state, StateStore) else open_store(state, create=False)
    refuse_output_onto_store(path, store)
    data = page_data(store, pipeline=pipeline, module=module, job=job, last=last,
                     statuses=statuses, since=since)
    text = render_html(data)
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        from sparkmark.core.errors import ConfigError
        raise ConfigError(f"cannot write the report to {path!r}: {e.strerror}; give a "
                          "writable --output file") from None
    return {"path": path, "runs": len(data["runs"]["run_id"]), "bytes": len(text.encode())}


SQLITE_HEADER = b"SQLite format 3\x00"


def refuse_output_onto_store(path: str, store: StateStore) -> None:
    """Refuse (``ConfigError``, nothing written) a report file that is the state store's
    database (or its ``-wal``/``-shm``/``-journal`` file, through any spelling or link) or any
    other SQLite database.

        refuse_output_onto_store("runs.html", store)       # fine
        refuse_output_onto_store(".sparkmark/state.db", store)  # ConfigError
    """
    from sqlalchemy.engine import make_url

    from sparkmark.core.errors import ConfigError
    real = os.path.realpath(path)
    try:
        db = make_url(store.url).database
    except Exception:  # noqa: BLE001 - an URL the store itself accepted; be lenient here
        db = None
    if db and db != ":memory:" and make_url(store.url).get_backend_name() == "sqlite":
        db = db[5:] if db.startswith("file:") else db
        base = os.path.realpath(os.path.expanduser(db.split("?", 1)[0]))
        if real in {base + s for s in ("", "-wal", "-shm", "-journal")}:
            raise ConfigError(f"--output {path!r} is the state store's database "
                              f"({store.display_url}); writing the page there would destroy it. "
                              "Give another file, e.g. --output runs.html")
    try:
        with open(real, "rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError:
        return
    if head == SQLITE_HEADER:
        raise ConfigError(f"--output {path!r} is a SQLite database (a state store?); refusing "
                          "to overwrite it with the page. Give another file, e.g. "
                          "--output runs.html")


_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>
 body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 1.5em 2em;
      color:#1d2530;background:#fafbfc}
 h1{font-size:1.4em;margin:.8em 0 .2em} h2{font-size:1.1em;margin:1.4em 0 .4em}
 .meta{color:#5b6776;font-size:.9em} .chip{display:inline-block;padding:1px 8px;margin:2px;
  border-radius:10px;color:#fff;font-size:.85em}
 .chart{width:100%;background:#fff;border:1px solid #dde2e8;border-radius:6px}
 table{border-collapse:collapse;width:100%;background:#fff;font-size:.85em}
 th,td{border-bottom:1px solid #e6e9ee;padding:3px 6px;text-align:left;white-space:nowrap}
 th{cursor:pointer;background:#f0f3f6;position:sticky;top:0} td.err{white-space:normal;
  max-width:40em;color:#8a1f1f} .controls{margin:.4em 0} .controls input{width:22em}
 details{margin:.3em 0} summary{cursor:pointer} .mark{color:#b35c00;font-weight:600}
</style></head><body>
<h1 id="title">__TITLE__</h1>
<div class="meta" id="meta"></div>
<h2>Runs on wall-clock time</h2>
<div id="timeline" class="chart"></div>
<div id="windows-section"><h2>Data windows of pipeline modules [from, until)</h2>
<div id="windows" class="chart"></div></div>
<h2>Records and duration per run</h2>
<div id="records" class="chart" style="height:280px"></div>
<div id="duration" class="chart" style="height:240px"></div>
<h2>Runs</h2>
<div class="controls"><input id="filter" placeholder="filter: job, status, run id, error…">
 <select id="status-filter"><option value="">every status</option></select>
 <span id="count" class="meta"></span></div>
<div style="max-height:520px;overflow:auto"><table id="runs"><thead></thead><tbody></tbody>
</table></div>
<h2>Files read</h2>
<div id="files"></div>
<h2>Bookmark versions</h2>
<div id="bookmarks"></div>
<script>/* Apache ECharts, Apache License 2.0 (see sparkmark/ops/assets/echarts.LICENSE) */
__ECHARTS__</script>
<script id="sm-data" type="application/json">__DATA__</script>
<script>__APP__</script>
</body></html>
"""

_APP = r"""
(function(){
const T0 = performance.now(), marks = [];
const D = JSON.parse(document.getElementById('sm-data').textContent);
marks.push('parse '+Math.round(performance.now()-T0));
const R = D.runs, N = R.run_id.length, L = D.labels;
const pad = n => String(n).padStart(2,'0');
function ts(ms){ if(ms==null) return ''; const d=new Date(ms);
  return d.getUTCFullYear()+'-'+pad(d.getUTCMonth()+1)+'-'+pad(d.getUTCDate())+' '+
    pad(d.getUTCHours())+':'+pad(d.getUTCMinutes())+':'+pad(d.getUTCSeconds())+' UTC'; }
function esc(s){ return String(s==null?'':s).replace(/[&<>"']/g,
  c=>({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c])); }
function dur(i){ return R.end[i]==null? null : (R.end[i]-R.start[i])/1000; }
function details(i){
  const lines = ['<b>'+esc(L[R.lane[i]])+'</b>', 'status: <b>'+esc(D.statuses[R.status[i]])+'</b>',
    'run '+esc(R.run_id[i])+' (#'+esc(R.run_number[i])+', attempt '+esc(R.attempt[i])+')',
    'start: '+esc(ts(R.start[i])), 'end: '+esc(ts(R.end[i]))+(dur(i)!=null?' ('+esc(dur(i))+' s)':'')];
  if(R.from[i]!=null) lines.push('window: ['+esc(ts(R.from[i]))+', '+esc(ts(R.until[i]))+')');
  lines.push('records read: '+esc(R.read[i]??'')+', written: '+esc(R.written[i]??''));
  if(R.files[i]!=null) lines.push('files: '+esc(R.files[i]));
  if(R.late[i]) lines.push('<span class="mark">late files: '+esc(R.late[i])+'</span>');
  if(R.version[i]!=null) lines.push('bookmark version: '+esc(R.version[i]));
  if(R.note[i]) lines.push('<span class="mark">'+esc(R.note[i])+'</span>');
  if(R.error[i]) lines.push('<span style="color:#b00">'+esc(R.error[i]).slice(0,300)+'</span>');
  return '<div style="max-width:520px;white-space:normal">'+lines.join('<br>')+'</div>';
}
// header
const counts = {}; for(let i=0;i<N;i++){ const s=D.statuses[R.status[i]]; counts[s]=(counts[s]||0)+1; }
const present = D.statuses.filter(s=>counts[s]);
document.getElementById('meta').innerHTML = N+' run(s) of '+L.length+' job(s)/module(s) · state '+
  esc(D.store)+' · generated '+ts(D.generated)+' · '+Object.keys(counts).map(s=>'<span class="chip" '+
  'style="background:'+esc(D.colours[D.statuses.indexOf(s)])+'">'+esc(s)+' '+counts[s]+'</span>').join('');
// Big ledgers open zoomed in on their newest ZOOM_RUNS runs (drag the slider or scroll to see
// the rest): ECharts then draws only those bars, so the page opens fast at 10,000 runs.
const ZOOM_RUNS = 400;
function zoomFrom(startOf){ if(N<=ZOOM_RUNS) return null; const v=[];
  for(let i=0;i<N;i++){ const a=startOf(i); if(a!=null) v.push(a); }
  if(v.length<=ZOOM_RUNS) return null; v.sort((a,b)=>a-b); return v[v.length-ZOOM_RUNS]; }
// one bar chart per time axis: a custom series per status (the legend toggles statuses)
function gantt(el, lanes, startOf, endOf, title){
  const h = Math.max(180, Math.min(900, 60 + lanes.length*26));
  el.style.height = h+'px';
  const chart = echarts.init(el, null, {renderer:'canvas'});
  const laneIx = {}; lanes.forEach((l,k)=>laneIx[l]=k);
  const series = D.statuses.map((s,si)=>{
    if(!counts[s]) return null;
    const data=[];
    for(let i=0;i<N;i++){ if(R.status[i]!==si) continue;
      const a=startOf(i), b=endOf(i), lane=laneIx[R.lane[i]];
      if(a==null||lane==null) continue; data.push([lane, a, b==null?a:b, i]); }
    return {name:s, type:'custom', encode:{x:[1,2], y:0}, data:data, itemStyle:{color:D.colours[si]},
      renderItem:(params, api)=>{ const y=api.value(0), s0=api.coord([api.value(1), y]),
        s1=api.coord([api.value(2), y]), hh=api.size([0,1])[1]*0.6;
        const w=Math.max(3, s1[0]-s0[0]);
        return {type:'rect', shape:echarts.graphic.clipRectByRect({x:s0[0], y:s0[1]-hh/2, width:w,
          height:hh}, {x:params.coordSys.x, y:params.coordSys.y, width:params.coordSys.width,
          height:params.coordSys.height}), style:api.style()}; }};
  }).filter(x=>x);
  chart.setOption({animation:false, useUTC:true, title:{text:title, left:'center', top:2,
    textStyle:{fontSize:12, fontWeight:'normal'}}, legend:{top:24, data:present},
    grid:{left:10, right:30, top:56, bottom:55, containLabel:true},
    tooltip:{confine:true, formatter:p=>details(p.value[3])},
    dataZoom:[{type:'slider', xAxisIndex:0, height:18, bottom:8, filterMode:'weakFilter',
      startValue:zoomFrom(startOf)}, {type:'inside', xAxisIndex:0, filterMode:'weakFilter'}],
    xAxis:{type:'time', scale:true}, yAxis:{type:'category', data:lanes.map(k=>L[k]), inverse:true,
      axisLabel:{width:260, overflow:'truncate'}}, series:series});
  return chart;
}
const allLanes = L.map((_,k)=>k);
const charts = [gantt(document.getElementById('timeline'), allLanes, i=>R.start[i],
  i=>R.end[i]??R.start[i], 'each bar is one run, from its start to its end (wall-clock time)')];
marks.push('timeline '+Math.round(performance.now()-T0));
const pLanes = allLanes.filter(k=>D.lane_pipeline[k]);
if(pLanes.length) charts.push(gantt(document.getElementById('windows'), pLanes, i=>R.from[i],
  i=>R.until[i], 'each bar is the data window a module run loaded; ROLLED_BACK bars were undone, '+
  'bars on the same span are reloads, empty stretches are gaps'));
else document.getElementById('windows-section').style.display='none';
// records and duration per run
function perRun(el, value, name, unit){
  const chart = echarts.init(el, null, {renderer:'canvas'});
  const series = D.statuses.map((s,si)=>{ if(!counts[s]) return null; const data=[];
    for(let i=0;i<N;i++){ if(R.status[i]!==si) continue; const v=value(i);
      if(v!=null) data.push([R.start[i], v, i]); }
    return {name:s, type:'scatter', symbolSize:6, data:data, itemStyle:{color:D.colours[si]},
      large:true};}).filter(x=>x);
  chart.setOption({animation:false, useUTC:true, legend:{top:4, right:10, data:present}, title:{text:name,
    left:10, top:4, textStyle:{fontSize:12}}, grid:{left:10, right:30, top:40, bottom:40,
    containLabel:true},
    tooltip:{confine:true, formatter:p=>details(p.value[2])}, xAxis:{type:'time', scale:true},
    yAxis:{type:'value', name:unit}, dataZoom:[{type:'slider', xAxisIndex:0, height:14, bottom:4,
      startValue:zoomFrom(i=>R.start[i])}, {type:'inside', xAxisIndex:0}], series:series});
  return chart;
}
marks.push('windows '+Math.round(performance.now()-T0));
charts.push(perRun(document.getElementById('records'), i=>R.written[i]??R.read[i],
  'records written per run (read when nothing was written)', 'records'));
charts.push(perRun(document.getElementById('duration'), dur, 'duration per run', 'seconds'));
marks.push('perrun '+Math.round(performance.now()-T0));
window.addEventListener('resize', ()=>charts.forEach(c=>c.resize()));
// the table: sortable (click a header), filterable (text and status); at most TABLE_ROWS drawn
const TABLE_ROWS = 500;
const COLS = [['job / module', i=>L[R.lane[i]]], ['status', i=>D.statuses[R.status[i]]],
  ['run', i=>R.run_number[i]], ['attempt', i=>R.attempt[i]], ['run id', i=>R.run_id[i]],
  ['start', i=>R.start[i], ts], ['end', i=>R.end[i], ts], ['seconds', dur],
  ['from', i=>R.from[i], ts], ['until', i=>R.until[i], ts], ['read', i=>R.read[i]],
  ['written', i=>R.written[i]], ['files', i=>R.files[i]], ['late files', i=>R.late[i]],
  ['bookmark version', i=>R.version[i]], ['note', i=>R.note[i]], ['error', i=>R.error[i]]];
const sel = document.getElementById('status-filter');
D.statuses.forEach(s=>{ const o=document.createElement('option'); o.value=s; o.textContent=s;
  sel.appendChild(o); });
let sortCol = 5, sortDir = -1;
const thead = document.querySelector('#runs thead'), tbody = document.querySelector('#runs tbody');
thead.innerHTML = '<tr>'+COLS.map((c,k)=>'<th data-k="'+k+'">'+c[0]+'</th>').join('')+'</tr>';
thead.addEventListener('click', e=>{ const k=+e.target.dataset.k; if(isNaN(k)) return;
  sortDir = (k===sortCol)? -sortDir : 1; sortCol=k; draw(); });
function draw(){
  const q = document.getElementById('filter').value.toLowerCase(), st = sel.value;
  let ix = []; for(let i=0;i<N;i++){
    if(st && D.statuses[R.status[i]]!==st) continue;
    if(q && !(L[R.lane[i]]+' '+R.run_id[i]+' '+D.statuses[R.status[i]]+' '+R.error[i]+' '+
      (R.note[i]||'')).toLowerCase().includes(q)) continue;
    ix.push(i); }
  const get = COLS[sortCol][1];
  ix.sort((a,b)=>{ const x=get(a), y=get(b); if(x==y) return 0; if(x==null) return 1;
    if(y==null) return -1; return (x<y?-1:1)*sortDir; });
  const shown = ix.slice(0, TABLE_ROWS);
  tbody.innerHTML = shown.map(i=>'<tr>'+COLS.map(c=>{ const v=c[1](i), t=c[2]?c[2](v):v;
    const col = c[0]==='status'? ' style="color:'+esc(D.colours[R.status[i]])+';font-weight:600"':'';
    return '<td'+(c[0]==='error'?' class="err"':'')+col+'>'+esc(t)+'</td>'; }).join('')+'</tr>').join('');
  document.getElementById('count').textContent = ix.length+' of '+N+' run(s)'+
    (ix.length>shown.length? ' (first '+shown.length+' shown; filter to narrow)':'');
}
document.getElementById('filter').addEventListener('input', draw);
sel.addEventListener('change', draw);
draw();
marks.push('table '+Math.round(performance.now()-T0));
// bookmark versions per job
document.getElementById('bookmarks').innerHTML = Object.keys(D.bookmarks).map(job=>
  '<details><summary>'+esc(job)+': '+D.bookmarks[job].length+' version(s)</summary><table><tr>'+
  '<th>version</th><th>kind</th><th>run</th><th>created</th><th>state</th></tr>'+
  D.bookmarks[job].map(v=>'<tr><td>'+esc(v[0])+'</td><td>'+esc(v[1])+'</td><td>'+esc(v[2])+
  '</td><td>'+esc(ts(v[3]))+'</td><td class="err" style="color:#333">'+esc(v[4])+'</td></tr>').join('')+
  '</table></details>').join('') || '<p class="meta">no bookmarks</p>';
// the per-file audit: the newest runs that read files, their first files and the count
const runIx = {}; for(let i=0;i<N;i++) runIx[R.run_id[i]] = i;
document.getElementById('files').innerHTML = D.files.map(f=>{ const i=runIx[f[0]];
  const who = i==null? '' : esc(L[R.lane[i]])+' · '+esc(D.statuses[R.status[i]])+' · ';
  return '<details class="run-files" data-run="'+esc(f[0])+'"><summary>'+who+'run '+esc(f[0])+
  ': '+esc(f[1])+' file(s)'+(f[1]>f[2].length? ' (first '+f[2].length+' shown)':'')+
  '</summary><table><tr><th>path</th><th>size</th><th>kind</th></tr>'+
  f[2].map(x=>'<tr><td>'+esc(x[0])+'</td><td>'+esc(x[1])+'</td><td>'+esc(x[2])+'</td></tr>').join('')+
  '</table></details>'; }).join('') || '<p class="meta">no files recorded (the per-file audit keeps '+
  'what file sources read, for files_retention_days)</p>';
document.body.setAttribute('data-sm-ready', String(N));
document.body.setAttribute('data-sm-marks', marks.join(','));
document.body.setAttribute('data-sm-ms', String(Math.round(performance.now())));
})();
"""
