"""The page's one inline stylesheet, and the verdict colours (the screenshot test looks for them).

Each verdict has a saturated colour used by nothing else on the page, so its pixels in a screenshot mean
that a claim with that verdict is on screen. Layout is for a laptop screen (1366x768) and up: a centred
column, fixed-layout tables whose cells wrap, SVG scaled down to the column, nothing wider than the page.
"""

from __future__ import annotations

#: verdict -> (background, text colour) of its badge
VERDICT_COLOURS: dict[str, tuple[str, str]] = {
    "supported": ("#1e7b34", "#ffffff"),
    "weakly_supported": ("#e3a008", "#1a1a1a"),
    "unsupported": ("#c0262d", "#ffffff"),
    "unverifiable": ("#5b6b7a", "#ffffff"),
}
#: verdict -> the light tint of its claim's row
VERDICT_TINTS = {
    "supported": "#eaf6ec",
    "weakly_supported": "#fff6dc",
    "unsupported": "#fde7e6",
    "unverifiable": "#eff1f3",
}
TAINT = "#e8590c"

_VERDICT_CSS = "".join(
    f".badge.v-{v}{{background:{bg};color:{fg};border-color:{bg}}}tr.v-{v}{{background:{VERDICT_TINTS[v]}}}"
    for v, (bg, fg) in VERDICT_COLOURS.items()
)

CSS = (
    """
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2328;margin:0;background:#fafafa}
main{max-width:1220px;margin:0 auto;padding:12px 20px 40px;background:#fff;min-height:100vh;
overflow-wrap:anywhere}
h1{font-size:1.35em;margin:.3em 0 .2em;overflow-wrap:anywhere}
h2{font-size:1.12em;margin:1.4em 0 .5em;padding-bottom:.2em;border-bottom:1px solid #d8dee4}
h3{font-size:1em;margin:1em 0 .3em;overflow-wrap:anywhere}
nav{font-size:.9em;margin:.2em 0 .6em}nav a{margin-right:1em;color:#0b5cad}
table{border-collapse:collapse;width:100%;table-layout:fixed;margin:.4em 0}
th,td{border:1px solid #d8dee4;padding:4px 6px;vertical-align:top;text-align:left;overflow-wrap:anywhere}
th{background:#f3f5f7;font-weight:600}
code,pre{font:12px/1.4 ui-monospace,"DejaVu Sans Mono",monospace;overflow-wrap:anywhere}
pre{background:#f6f8fa;padding:8px;white-space:pre-wrap;max-height:30em;overflow-y:auto;margin:.3em 0}
details.clip,details.dg{display:inline}details.clip summary,details.dg summary{cursor:pointer}
details.dg>summary{display:inline;list-style:none}details.dg>summary::before{content:"▸ ";color:#888}
details.clip[open] summary,details.dg[open] summary{display:none}
.full{overflow-wrap:anywhere}.more{color:#777;font-size:.85em}
.muted{color:#6a737d}.small{font-size:.86em}.err{color:#b33a3a}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;border:1px solid #aaa;font-size:.9em;
font-weight:600;white-space:nowrap}
.verdict{font-size:1em;padding:3px 10px}
.d-emit{color:#155d27;border-color:#155d27;background:#fff}.d-drop{color:#9c1c22;border-color:#9c1c22;
background:#fff;text-decoration:line-through}.d-abst{color:#7a4d00;border-color:#7a4d00;background:#fff}
.d-none{color:#555;border-style:dashed;background:#fff}
.st-ok{color:#2f6b2f;background:#eef6ee;border-color:#9cc59c}.st-error,.st-failed{color:#b33a3a;
background:#fbe3e3;border-color:#e3a3a3}.st-refused,.st-partial{color:#8a5200;background:#fdebd3;
border-color:#e0b27a}.st-skipped{color:#555;background:#eee}
.taint{color:#fff;background:"""
    + TAINT
    + ";border-color:"
    + TAINT
    + """}
tr.tainted{background:#fff4ec}
.ok{color:#2f6b2f;border-color:#9cc59c;background:#fff}.bad{color:#fff;background:#9c1c22}
.kv{display:flex;flex-wrap:wrap;gap:4px 18px;margin:.3em 0}.kv span{overflow-wrap:anywhere}
.notes{border:1px solid #e0b27a;background:#fff8ef;padding:6px 10px;margin:.6em 0}
.notes li{overflow-wrap:anywhere}
.answer{font-size:1.05em;padding:6px 10px;border-left:4px solid #d8dee4;margin:.4em 0;
overflow-wrap:anywhere}
svg.dag{max-width:100%;height:auto;display:block;margin:.4em auto}
svg.dag a:hover rect{stroke-width:3}
.ev{border-top:1px dashed #d8dee4;margin-top:.6em}.lh{margin:.4em 0 .1em}
.vals{margin:.2em 0}.iso{display:block;font-size:.78em;color:#6a737d}
"""
    + _VERDICT_CSS
)
