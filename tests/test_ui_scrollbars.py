"""Issue 33 item 21: the log pane's scrollbars draw their lines again only when what they show changed (the
Rich render of the vertical bar was ~4 ms of every frame of a log burst, the thumb sitting still at the
bottom). Whatever is kept must be exactly what a fresh render draws, wherever the thumb is; how fast is
measured by ``benchmarks/ui_load.py``, not here."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.scrollbar import ScrollBar, ScrollBarRender

from eagletui.core.events import LogLine
from eagletui.ui import scrollbars
from eagletui.ui.widgets.logview import LogView


class _Pane(App):
    def compose(self) -> ComposeResult:
        yield LogView(id="log")


def _drawn(lines) -> list[list[tuple[str, object]]]:
    return [[(seg.text, seg.style) for seg in strip] for strip in lines]


def _fresh(bar: ScrollBar):
    bar._styles_cache.clear()
    return scrollbars._original(bar, bar.size.region)


async def test_the_log_scrollbar_keeps_its_lines_while_its_thumb_stays_and_draws_every_move(monkeypatch) -> None:
    scrollbars.install()
    renders = []
    original = ScrollBarRender.__rich_console__
    monkeypatch.setattr(
        ScrollBarRender, "__rich_console__", lambda r, c, o: renders.append(r) or original(r, c, o)
    )
    app = _Pane()
    async with app.run_test(size=(60, 20)) as pilot:
        view = app.query_one(LogView)
        view.add_events([LogLine(text=f"line {i} " + "x" * (i % 90), launch=1, seq=i) for i in range(400)])
        view.flush()
        await pilot.pause()
        bar = view.vertical_scrollbar
        region = bar.size.region
        seen = set()
        for y in (0, 3, 150, 151, 200, 10_000):  # the top, small and large moves, the bottom
            view.scroll_to(y=y, animate=False)
            await pilot.pause()
            bar.refresh()
            kept = bar.render_lines(region)
            assert _drawn(kept) == _drawn(_fresh(bar)), y
            seen.add(str(_drawn(kept)))
        assert len(seen) >= 4  # the thumb was drawn in different places
        # following the tail: more lines, the thumb stays at the bottom: nothing is drawn again
        bar.render_lines(region)
        renders.clear()
        view.add_events([LogLine(text="one more", launch=1, seq=401)])
        view.flush()
        view.scroll_end(animate=False)
        await pilot.pause()
        bar.refresh()
        again = bar.render_lines(region)
        assert not renders
        assert _drawn(again) == _drawn(_fresh(bar))
        # a new style (hover) is drawn
        bar.mouse_over = True
        hovered = bar.render_lines(region)
        assert _drawn(hovered) == _drawn(_fresh(bar)) and _drawn(hovered) != _drawn(again)
