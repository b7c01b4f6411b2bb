"""The operator's tools: the ``sparkmark`` command line and its live progress, bookmark
administration (:class:`sparkmark.Bookmarks`), the pending-input check a sensor asks, the HTML
report and the demo.

They sit on top of the run lifecycle and the state store and add no logic of their own to a run::

    from sparkmark import Bookmarks
    from sparkmark.ops.pending import pending_files
"""
