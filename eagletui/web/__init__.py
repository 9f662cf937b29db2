"""``eagletui serve``: the UI in a browser. The server (:mod:`eagletui.web.server`) runs one app
process per tab (:mod:`eagletui.web.appproc`) behind a token, the first tab's with the session and
the others' as read-only views (:mod:`eagletui.web.floor`); :mod:`eagletui.web.driver` is the
Textual driver those processes draw through. Nothing here is imported unless ``serve`` runs."""
