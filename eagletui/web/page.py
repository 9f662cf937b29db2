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
