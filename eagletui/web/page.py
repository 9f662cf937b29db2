"""The page a tab loads: markup only, every URL relative (see ``static/eagletui.js``)."""

from __future__ import annotations

import html

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{title}</title>
<link rel="icon" href="data:,">
<link rel="preload" href="static/RobotoMono.ttf" as="font" type="font/ttf" crossorigin>
<link rel="stylesheet" href="static/xterm.css">
<link rel="stylesheet" href="static/eagletui.css">
<script src="static/textual.js"></script>
</head>
<body>
<div class="dialog intro"><div class="box">eagletui · {title} · starting…</div></div>
<div class="dialog closed"><span>This tab's eagletui has ended.</span>
<button type="button" class="reload">Reload</button></div>
<div id="terminal" class="textual-terminal" data-session-websocket-url="ws" data-font-size="{font_size}"></div>
<script src="static/eagletui.js"></script>
</body>
</html>
"""


def render_page(title: str, font_size: int = 16) -> str:
    return PAGE.format(title=html.escape(title, quote=True), font_size=int(font_size))


#: Tabs open at once unless ``eagletui serve --max-tabs`` says otherwise: ten tabs were ten processes,
#: about 280 MB, with nothing to stop an eleventh.
DEFAULT_MAX_TABS = 4


def tabs_full(max_tabs: int) -> str:
    return (
        f"all {max_tabs} tab(s) this server allows are open (eagletui serve --max-tabs {max_tabs}): "
        "close one, then reload this page"
    )


def full_page(max_tabs: int) -> str:
    """What the next tab gets instead of a process: a page that says why and what to do."""
    return (
        '<!doctype html><html><head><meta charset="utf-8"><title>eagletui: all tabs in use</title></head>'
        f"<body><h1>eagletui: all tabs in use</h1><p>{html.escape(tabs_full(max_tabs))}.</p></body></html>"
    )
