package web

import (
	"html/template"
	"strings"
)

// The pages: html/template escapes every value (job names, logs, labels
// and reasons are untrusted), and the script is inline and small.

var funcs = template.FuncMap{
	"ago":   agoText,
	"since": ago,
	"short": short,
	"join":  strings.Join,
	"lower": strings.ToLower,
	"mid":   func(a, b int) int { return (a + b) / 2 },
	"add":   func(a, b int) int { return a + b },
}

const head = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>{{template "title" .}} · Agora</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
header{background:#1d2430;color:#fff;padding:10px 20px}header a{color:#fff;text-decoration:none;font-weight:600}
header span{opacity:.7;margin-left:12px;font-size:12px}
main{padding:16px 20px;max-width:1400px}
h2{font-size:16px;margin:22px 0 8px}
table{border-collapse:collapse;background:#fff;width:100%;box-shadow:0 1px 2px #0001}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #e6e8ec;vertical-align:top}
th{background:#eef0f3;font-weight:600;font-size:12px;text-transform:uppercase;letter-spacing:.03em}
code,.mono{font-family:ui-monospace,monospace;font-size:12px}
.state{display:inline-block;padding:1px 7px;border-radius:9px;font-size:12px;background:#dde1e7}
.succeeded{background:#cdeccf}.running,.awarded{background:#cfe3fb}.failed{background:#f8d0cf}.cancelled{background:#e9dcf5}.pending,.waiting{background:#f7ebc6}
.gpu{display:inline-block;width:60px;height:10px;background:#e6e8ec;margin-right:4px;position:relative}.gpu i{position:absolute;left:0;top:0;bottom:0;background:#6bbf73}
.charts{display:flex;gap:16px;flex-wrap:wrap}.chart{background:#fff;padding:8px;box-shadow:0 1px 2px #0001}.chart b{font-size:12px;display:block}
pre{background:#111820;color:#d8dee6;padding:10px;overflow:auto;max-height:420px;font-size:12px}
.note{color:#7a4b00;background:#fff4dc;padding:6px 10px}
form.inline{display:inline}textarea{font-family:ui-monospace,monospace;font-size:12px;width:100%}
svg text{font:12px system-ui,sans-serif}
</style></head><body>
<header><a href="/ui/">Agora</a><span>{{template "title" .}}</span></header><main>`

const foot = `</main></body></html>`

var overviewPage = template.Must(template.New("overview").Funcs(funcs).Parse(`{{define "title"}}node {{.Short}}{{end}}` + head + `
<h2>Nodes</h2>
<table id="peers"><tr><th>Node</th><th>Site</th><th>Labels</th><th>CPU free / total</th><th>Memory free / total</th><th>GPUs (free share)</th><th>Devices</th><th>Queue</th><th>Connection</th><th>Seen</th></tr>
{{range .Peers}}<tr class="peer" data-peer="{{.ID}}"><td class="mono" title="{{.ID}}">{{if .Self}}<a id="node-link" href="/ui/node">{{.Short}}</a> (this node){{else}}{{.Short}}{{end}}</td><td>{{.Site}}</td><td class="mono">{{.Labels}}</td>
<td>{{.FreeCPU}} / {{.CPU}}</td><td>{{.FreeMemory}} / {{.Memory}}</td>
<td>{{range .GPUs}}<div title="{{.Model}} {{.Memory}}: {{.FreePct}}% free"><span class="gpu"><i style="width:{{.FreePct}}%"></i></span>{{.Model}} {{.Memory}}</div>{{else}}-{{end}}</td>
<td>{{range .Devices}}<div>{{.}}</div>{{else}}-{{end}}</td><td>{{.Queue}}</td><td>{{.Connection}}</td><td>{{.Seen}}</td></tr>
{{end}}</table>

<h2>Jobs in the network</h2>
<p>{{if .Acts}}<a id="submit-link" href="/ui/submit">Submit a job</a> · {{end}}<label>Filter <input id="filter" type="search" placeholder="name, owner, state, node…"></label>
<label>State <select id="state-filter"><option value="">any</option><option>pending</option><option>running</option><option>succeeded</option><option>failed</option><option>cancelled</option></select></label>
· <button id="prev" type="button">newer</button> <span id="page-info"></span> <button id="next" type="button">older</button></p>
{{if .JobsError}}<p class="note">{{.JobsError}}</p>{{end}}
{{range .Unreachable}}<p class="note">Node {{.}} did not answer: its jobs are not listed.</p>{{end}}
<table id="jobs"><tr><th>Job</th><th>Name</th><th>Owner</th><th>State</th><th>Tasks done</th><th>Nodes</th><th>Manager</th><th>Submitted</th><th>Started</th><th>Reason</th></tr>
{{range .Jobs}}<tr class="job" data-job="{{.ID}}" data-state="{{.State}}"><td class="mono"><a href="/ui/jobs/{{.ID}}">{{.ID}}</a></td><td>{{.Name}}</td><td>{{.Owner}}</td>
<td><span class="state {{.State}}">{{.State}}</span></td><td>{{.Done}}/{{.Tasks}}</td>
<td class="mono">{{range $i, $n := .Nodes}}{{if $i}}, {{end}}<span title="{{$n}}">{{short $n}}</span>{{end}}</td>
<td class="mono" title="{{.Manager}}">{{short .Manager}}</td><td>{{ago .Submitted}}</td><td>{{ago .Started}}</td><td>{{if .Reason}}{{.Reason}}{{else}}{{.Waiting}}{{end}}</td></tr>
{{else}}<tr><td colspan="10">No jobs.</td></tr>{{end}}</table>

<h2>This node's metrics</h2>
<p><label>Over the last <select id="window"><option value="10m">10 minutes</option><option value="1h" selected>hour</option><option value="24h">day</option></select></label> (a sample every 10 s, kept a day; then live every 2 s)</p>
<div class="charts">
<div class="chart"><b>Free CPU (cores)</b><svg id="c-cpu" width="260" height="60"></svg></div>
<div class="chart"><b>Queued replicas</b><svg id="c-queue" width="260" height="60"></svg></div>
<div class="chart"><b>Live peers</b><svg id="c-peers" width="260" height="60"></svg></div>
<div class="chart"><b>Jobs running here</b><svg id="c-running" width="260" height="60"></svg></div>
</div>
<script>
(function(){
  var series = {"c-cpu": /^agora_free_cpu_cores (\S+)$/m, "c-queue": /^agora_tasks_queued (\S+)$/m,
    "c-peers": /^agora_peers_known (\S+)$/m, "c-running": /^agora_jobs\{state="running"\} (\S+)$/m};
  var column = {"c-cpu": 1, "c-queue": 2, "c-peers": 3, "c-running": 4}; // in /ui/history's rows
  var spans = {"10m": 600, "1h": 3600, "24h": 86400};
  var select = document.getElementById("window"), points = {};
  function span() { return spans[select.value] || 3600; }
  function draw(id) {
    var svg = document.getElementById(id), ns = "http://www.w3.org/2000/svg", now = Date.now() / 1000, from = now - span();
    var p = (points[id] || []).filter(function(q) { return q[0] >= from; });
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var top = Math.max.apply(null, p.map(function(q) { return q[1]; }).concat([1]));
    var line = document.createElementNS(ns, "polyline"), xy = [];
    for (var i = 0; i < p.length; i++) xy.push(((p[i][0] - from) / span() * 260).toFixed(1) + "," + (55 - p[i][1] / top * 50).toFixed(1));
    line.setAttribute("points", xy.join(" "));
    line.setAttribute("fill", "none"); line.setAttribute("stroke", "#2f6fbf"); line.setAttribute("stroke-width", "2");
    svg.appendChild(line);
    svg.setAttribute("data-points", String(p.length));
    var label = document.createElementNS(ns, "text");
    label.setAttribute("x", "200"); label.setAttribute("y", "14");
    label.textContent = p.length ? String(p[p.length - 1][1]) : "";
    svg.appendChild(label);
  }
  function drawAll() { for (var id in series) draw(id); }
  function load() {
    fetch("/ui/history?window=" + encodeURIComponent(select.value), {credentials: "same-origin"}).then(function(r) { return r.ok ? r.json() : []; }).then(function(rows) {
      for (var id in series) points[id] = rows.map(function(row) { return [row[0], row[column[id]]]; });
      drawAll();
    }).catch(function() {});
  }
  function poll() {
    fetch("/metrics", {credentials: "same-origin"}).then(function(r) { return r.ok ? r.text() : ""; }).then(function(text) {
      var now = Date.now() / 1000;
      for (var id in series) {
        var m = series[id].exec(text);
        if (m) points[id] = (points[id] || []).concat([[now, Number(m[1])]]);
      }
      drawAll();
    }).catch(function() {});
  }
  select.addEventListener("change", load);
  load(); setInterval(poll, 2000);
  // The job table: filtered by text and state, 50 rows a page, and
  // refreshed from the page itself every 5 s.
  var filter = document.getElementById("filter"), stateSel = document.getElementById("state-filter"), page = 0, perPage = 50;
  function show() {
    var q = filter.value.toLowerCase(), st = stateSel.value, rows = document.querySelectorAll("#jobs tr.job"), shown = 0, total = 0;
    for (var i = 0; i < rows.length; i++) {
      var match = rows[i].textContent.toLowerCase().indexOf(q) >= 0 && (!st || rows[i].getAttribute("data-state") === st);
      var on = match && total >= page * perPage && total < (page + 1) * perPage;
      if (match) total++;
      if (on) shown++;
      rows[i].style.display = on ? "" : "none";
    }
    var pages = Math.max(1, Math.ceil(total / perPage));
    if (page >= pages) { page = pages - 1; if (total) return show(); }
    document.getElementById("page-info").textContent = total ? "jobs " + (page * perPage + 1) + "–" + (page * perPage + shown) + " of " + total : "no jobs";
  }
  function refresh() {
    fetch("/ui/", {credentials: "same-origin"}).then(function(r) { return r.ok ? r.text() : ""; }).then(function(html) {
      var fresh = html && new DOMParser().parseFromString(html, "text/html").getElementById("jobs");
      if (fresh) { var old = document.getElementById("jobs"); old.parentNode.replaceChild(document.importNode(fresh, true), old); show(); }
    }).catch(function() {});
  }
  filter.addEventListener("input", function() { page = 0; show(); });
  stateSel.addEventListener("change", function() { page = 0; show(); });
  document.getElementById("prev").addEventListener("click", function() { if (page > 0) { page--; show(); } });
  document.getElementById("next").addEventListener("click", function() { page++; show(); });
  show(); setInterval(refresh, 5000);
})();
</script>` + foot))

var submitPage = template.Must(template.New("submit").Funcs(funcs).Parse(`{{define "title"}}submit a job{{end}}` + head + `
<h2>Submit a job</h2>
{{range .Problems}}<p class="note problem">{{.}}</p>{{end}}
<form id="submit" method="post" action="/ui/act/submit" enctype="multipart/form-data">
<p><label>Spec (YAML or JSON, docs/jobspec.md)<br><textarea name="spec" rows="18" cols="100" spellcheck="false">{{.Spec}}</textarea></label></p>
<p><label>or a spec file <input type="file" name="file" accept=".yaml,.yml,.json"></label></p>
<p><button type="submit">Submit</button></p>
</form>` + foot))

var jobPage = template.Must(template.New("job").Funcs(funcs).Parse(`{{define "title"}}job {{.Job.ID}}{{end}}` + head + `
{{with .Status}}<h2 id="job-title">{{.Name}} <span class="state {{.State}}">{{.State}}</span></h2>
<p>Job <code>{{.ID}}</code>{{if .Owner}} of <b>{{.Owner}}</b>{{end}}, managed by <code title="{{.Manager}}">{{short .Manager}}</code>; submitted {{ago .Submitted}}{{if .Finished}}, finished {{ago .Finished}}{{end}}.{{if .Reason}} {{.Reason}}{{end}}</p>{{end}}
{{if .Denied}}<p class="note">{{.Denied}}</p>{{end}}
{{if .Acts}}<p class="actions">{{if not .Done}}<form class="inline" method="post" action="/ui/act/jobs/{{.Job.ID}}/cancel"><button id="cancel" type="submit">Cancel</button></form> {{end}}<form class="inline" method="post" action="/ui/act/jobs/{{.Job.ID}}/rerun"><button id="rerun" type="submit">Run again</button></form></p>{{end}}
{{if .Outputs}}<h2>Outputs</h2><ul id="outputs">{{range .Outputs}}<li><a class="download" href="/ui/jobs/{{$.Job.ID}}/outputs/{{.Name}}/{{.Replica}}.tar.gz">{{.Name}}[{{.Replica}}].tar.gz</a></li>{{end}}</ul>{{end}}

<h2>Tasks</h2>
<svg id="dag" width="{{.Width}}" height="{{.Height}}" role="img" aria-label="the job's tasks and their dependencies">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#7d8794"/></marker></defs>
{{range .Edges}}<line x1="{{.X1}}" y1="{{.Y1}}" x2="{{.X2}}" y2="{{.Y2}}" stroke="#7d8794" stroke-width="1.5" marker-end="url(#arrow)"/>{{end}}
{{range .Boxes}}<g class="task" data-task="{{.Name}}"><title>{{.Title}}</title><rect x="{{.X}}" y="{{.Y}}" width="150" height="40" rx="6" class="{{.State}}" fill="{{if eq .State "succeeded"}}#cdeccf{{else if eq .State "failed"}}#f8d0cf{{else if eq .State "running"}}#cfe3fb{{else if eq .State "cancelled"}}#e9dcf5{{else}}#f7ebc6{{end}}" stroke="#7d8794"/>
<text x="{{add .X 8}}" y="{{add .Y 17}}">{{.Name}}</text><text x="{{add .X 8}}" y="{{add .Y 33}}" fill="#4a5361">{{.State}}</text></g>{{end}}
</svg>

{{if .Waits}}<h2>Why it waits</h2>
<table id="waiting"><tr><th>Replica</th><th>State</th><th>Why</th><th>Predicted start</th></tr>
{{range .Waits}}<tr><td class="mono">{{.Name}}[{{.Replica}}]</td><td><span class="state {{.State}}">{{.State}}</span></td><td>{{.Waiting}}</td><td>{{.PredictedStart}}</td></tr>{{end}}
</table>{{end}}
<h2>Placement history</h2>
<table id="attempts"><tr><th>Replica</th><th>Attempt</th><th>Epoch</th><th>Node</th><th>State</th><th>Exit</th><th>Awarded</th><th>Started</th><th>Finished</th><th>Reason</th></tr>
{{range .Job.Tasks}}{{$k := .Key}}{{range .History}}<tr><td class="mono">{{$k.Task}}[{{$k.Replica}}]</td><td>{{.Attempt}}</td><td>{{.Epoch}}</td><td class="mono" title="{{.Node}}">{{short (print .Node)}}</td>
<td><span class="state {{.State}}">{{.State}}</span></td><td>{{.ExitCode}}</td><td>{{.Awarded.Format "15:04:05.000"}}</td><td>{{if not .Started.IsZero}}{{.Started.Format "15:04:05.000"}}{{end}}</td><td>{{if not .Finished.IsZero}}{{.Finished.Format "15:04:05.000"}}{{end}}</td><td>{{.Reason}}</td></tr>{{end}}{{end}}
</table>
{{if .Events}}<h2>Auction rounds and events</h2><pre id="events">{{range .Events}}{{.}}
{{end}}</pre>{{else}}<p>The auction rounds are in the event log of the job's manager, <code>{{short (print .Job.Manager)}}</code>: open its dashboard.</p>{{end}}

<h2>Logs</h2>
<pre id="logs">{{.Logs}}</pre>
<script>
(function(){
  var pre = document.getElementById("logs"), url = location.pathname.replace(/\/$/, "") + "/logs";
  function poll() {
    fetch(url, {credentials: "same-origin"}).then(function(r) {
      if (!r.ok) return;
      var done = /^(succeeded|failed|cancelled)$/.test(r.headers.get("X-Job-State") || "");
      return r.text().then(function(t) { pre.textContent = t; if (!done) setTimeout(poll, 2000); });
    }).catch(function() {});
  }
  setTimeout(poll, 2000);
})();
</script>` + foot))

var loginPage = template.Must(template.New("login").Funcs(funcs).Parse(`{{define "title"}}sign in{{end}}` + head + `
<p id="msg">Open the address <code>agora dashboard</code> prints on the node's machine: it carries a one-time sign-in code.</p>
<script>
(function(){
  var m = /^#code=([A-Za-z0-9_\-]+)$/.exec(location.hash);
  if (!m) return;
  history.replaceState(null, "", location.pathname + location.search);
  var next = new URLSearchParams(location.search).get("next") || "/ui/";
  if (!/^\/ui\/[A-Za-z0-9_.\/-]*$/.test(next)) next = "/ui/"; // this node's pages only
  fetch("/ui/session", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({code: m[1]}), credentials: "same-origin"})
    .then(function(r) {
      if (r.ok) { location.replace(next); return; }
      document.getElementById("msg").textContent = "This sign-in code is used or expired: run agora dashboard again.";
    })
    .catch(function() { document.getElementById("msg").textContent = "The node did not answer."; });
})();
</script>` + foot))

var nodePage = template.Must(template.New("node").Funcs(funcs).Parse(`{{define "title"}}node {{.Short}}{{end}}` + head + `
<h2 id="node-title">This node <code>{{.Self}}</code> {{if .Drained}}<span class="state failed" id="drained">drained</span>{{else}}<span class="state succeeded">open</span>{{end}}</h2>
<p>{{range .Addrs}}<code>{{.}}</code> {{end}}</p>
{{with .Row}}<table id="resources"><tr><th>CPU free / total</th><th>Memory free / total</th><th>GPUs (free share)</th><th>Devices</th></tr>
<tr><td>{{.FreeCPU}} / {{.CPU}}</td><td>{{.FreeMemory}} / {{.Memory}}</td>
<td>{{range .GPUs}}<div><span class="gpu"><i style="width:{{.FreePct}}%"></i></span>{{.Model}} {{.Memory}} ({{.FreePct}}% free)</div>{{else}}-{{end}}</td>
<td>{{range .Devices}}<div>{{.}}</div>{{else}}-{{end}}</td></tr></table>{{end}}
<h2>Task replicas running here</h2>
<ul id="running">{{range .Running}}<li class="mono"><a href="/ui/jobs/{{.Job}}">{{.Job}}</a> {{.Task}}[{{.Replica}}]</li>{{else}}<li>none</li>{{end}}</ul>
<h2>Queued here</h2>
<ul id="queued">{{range .Queued}}<li class="mono"><a href="/ui/jobs/{{.Job}}">{{.Job}}</a> {{.Task}}[{{.Replica}}]</li>{{else}}<li>none</li>{{end}}</ul>
<h2>Ended here in the last day</h2>
{{if .RecentError}}<p class="note">{{.RecentError}}</p>{{end}}
<table id="recent"><tr><th>ended</th><th>job</th><th>task</th><th>state</th><th>exit</th><th>wall</th><th>reason</th></tr>
{{range .Recent}}<tr class="attempt" data-job="{{.Job}}"><td>{{since .End}}</td><td class="mono"><a href="/ui/jobs/{{.Job}}">{{.Job}}</a> {{.Name}}</td><td class="mono">{{.Task}}[{{.Replica}}] #{{.Attempt}}</td><td><span class="state {{.State}}">{{.State}}</span></td><td>{{.ExitCode}}</td><td>{{printf "%.1f" .Elapsed}} s</td><td>{{.Reason}}</td></tr>
{{else}}<tr><td colspan="7">none</td></tr>{{end}}</table>` + foot))

var errorPage = template.Must(template.New("error").Funcs(funcs).Parse(`{{define "title"}}{{.Title}}{{end}}` + head + `<p class="note">{{.Error}}</p>` + foot))
