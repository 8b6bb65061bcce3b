"""Static CSS and JavaScript of the replay page (no model text ever goes in here)."""

CSS = """
:root { --bg:#0f1115; --panel:#171a21; --panel2:#1e222b; --text:#e6e8ee; --muted:#9aa3b2;
  --accent:#4da3ff; --ok:#2fbf71; --bad:#ff5d5d; --warn:#f0b429; --border:#2a2f3a; }
* { box-sizing:border-box; }
body { margin:0; background:var(--bg); color:var(--text);
  font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; }
header { padding:16px 24px 10px; border-bottom:1px solid var(--border); background:var(--panel); }
h1 { font-size:18px; margin:0 0 8px; font-weight:600; }
.instruction { font-size:15px; white-space:pre-wrap; margin:0 0 10px; }
.meta { display:flex; flex-wrap:wrap; gap:8px; align-items:center; }
.badge { display:inline-block; padding:2px 10px; border-radius:999px; font-weight:600;
  font-size:12px; background:var(--panel2); border:1px solid var(--border); }
.badge.ok { background:rgba(47,191,113,.15); color:var(--ok); border-color:var(--ok); }
.badge.bad { background:rgba(255,93,93,.12); color:var(--bad); border-color:var(--bad); }
.badge.warn { background:rgba(240,180,41,.12); color:var(--warn); border-color:var(--warn); }
.refpolicy { background:var(--warn); color:#1a1400; padding:3px 10px; border-radius:4px;
  font-weight:700; font-size:12px; letter-spacing:.02em; }
details.evaluator { margin-top:8px; }
details summary { cursor:pointer; color:var(--muted); }
pre { white-space:pre-wrap; word-break:break-word; background:var(--panel2); padding:8px 10px;
  border-radius:6px; border:1px solid var(--border); margin:6px 0 0; font-size:12px;
  max-height:320px; overflow:auto; }
.filmstrip { position:sticky; top:0; z-index:5; display:flex; gap:6px; overflow-x:auto;
  padding:8px 24px; background:var(--bg); border-bottom:1px solid var(--border); }
.thumb { flex:0 0 auto; width:96px; cursor:pointer; border:2px solid transparent;
  border-radius:5px; background:var(--panel); padding:2px; text-align:center; color:var(--muted);
  font-size:11px; }
.thumb img { width:100%; height:56px; object-fit:cover; display:block; border-radius:3px; }
.thumb.err { border-color:rgba(255,93,93,.5); }
.thumb.active { border-color:var(--accent); color:var(--text); }
main { padding:16px 24px 80px; display:flex; flex-direction:column; gap:18px; }
.step { display:grid; grid-template-columns:minmax(0,3fr) minmax(300px,2fr); gap:16px;
  background:var(--panel); border:1px solid var(--border); border-radius:10px; padding:14px; }
.step.active { border-color:var(--accent); box-shadow:0 0 0 1px var(--accent); }
.shot { position:relative; line-height:0; align-self:start; }
.shot img { width:100%; height:auto; border-radius:6px; border:1px solid var(--border); }
.shot svg { position:absolute; inset:0; width:100%; height:100%; pointer-events:none; }
.noshot { color:var(--muted); padding:40px; text-align:center; border:1px dashed var(--border);
  border-radius:6px; line-height:1.4; }
.info h2 { font-size:15px; margin:0 0 8px; display:flex; gap:8px; align-items:center; }
.action { font-family:ui-monospace,SFMono-Regular,Menlo,monospace; background:var(--panel2);
  padding:6px 8px; border-radius:6px; border:1px solid var(--border); word-break:break-word; }
.field { margin:8px 0; }
.label { color:var(--muted); font-size:11px; text-transform:uppercase; letter-spacing:.06em; }
.value { white-space:pre-wrap; word-break:break-word; }
.typed { font-family:ui-monospace,monospace; background:#10241a; color:#9ff0c2;
  padding:2px 6px; border-radius:4px; }
.error { color:var(--bad); }
.stats { color:var(--muted); font-size:12px; display:flex; flex-wrap:wrap; gap:12px; }
.help { color:var(--muted); font-size:12px; margin-top:6px; }
kbd { background:var(--panel2); border:1px solid var(--border); border-radius:3px;
  padding:0 4px; font-size:11px; }
@media (max-width: 900px) { .step { grid-template-columns:1fr; } }
"""

JS = """
(function () {
  var steps = Array.prototype.slice.call(document.querySelectorAll('.step'));
  var thumbs = Array.prototype.slice.call(document.querySelectorAll('.thumb'));
  var current = -1;
  function go(i, scroll) {
    if (!steps.length) return;
    i = Math.max(0, Math.min(steps.length - 1, i));
    if (current >= 0) { steps[current].classList.remove('active');
      if (thumbs[current]) thumbs[current].classList.remove('active'); }
    current = i;
    steps[i].classList.add('active');
    if (thumbs[i]) { thumbs[i].classList.add('active');
      thumbs[i].scrollIntoView({block: 'nearest', inline: 'center'}); }
    document.body.setAttribute('data-current', String(i));
    if (scroll !== false) {
      var bar = document.querySelector('.filmstrip');
      var top = steps[i].getBoundingClientRect().top + window.scrollY
        - (bar ? bar.offsetHeight : 0) - 8;
      window.scrollTo({top: top, behavior: 'auto'});
    }
  }
  thumbs.forEach(function (t, i) { t.addEventListener('click', function () { go(i); }); });
  steps.forEach(function (s, i) { s.addEventListener('click', function () { go(i, false); }); });
  document.addEventListener('keydown', function (e) {
    if (e.target && /INPUT|TEXTAREA|SELECT/.test(e.target.tagName)) return;
    var next = ['j', 'ArrowDown', 'ArrowRight'], prev = ['k', 'ArrowUp', 'ArrowLeft'];
    if (next.indexOf(e.key) >= 0) { go(current + 1); e.preventDefault(); }
    else if (prev.indexOf(e.key) >= 0) { go(current - 1); e.preventDefault(); }
    else if (e.key === 'Home') { go(0); e.preventDefault(); }
    else if (e.key === 'End') { go(steps.length - 1); e.preventDefault(); }
  });
  go(0, false);
})();
"""
